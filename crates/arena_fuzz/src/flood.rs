//! `arena-fuzz flood`: a fuzzer over the network, for soak tests of a real
//! server process. It sends, at a set rate: random datagrams, netcode-shaped
//! ones (every prefix, extreme sequences), connection requests with valid
//! self-made tokens claiming no timeout, and, from a client it keeps
//! connected, random bytes and authenticated garbage renet packets (which
//! get it disconnected for bad messages, after which it connects again).

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arena_protocol::PROTOCOL_ID;
use arena_protocol::key::OPEN_KEY;
use renetcode::{ClientAuthentication, ConnectToken, NetcodeClient};

use crate::inputs::Generator;
use crate::targets::network::{connection_request_with, netcode_shaped, renet_shaped};

/// What a flood sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct FloodReport {
    pub datagrams: u64,
    pub connection_requests: u64,
    pub authenticated_garbage: u64,
    /// Times the flooding client got connected (again).
    pub connections: u64,
}

/// A client that connects honestly and then misbehaves.
struct Insider {
    socket: UdpSocket,
    netcode: NetcodeClient,
    last: Instant,
}

impl Insider {
    fn new(server: SocketAddr) -> std::io::Result<Self> {
        let socket = UdpSocket::bind(if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
        socket.set_nonblocking(true)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        let token = ConnectToken::generate(now, PROTOCOL_ID, 300, 7, -1, vec![server], None, &OPEN_KEY)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let netcode = NetcodeClient::new(now, ClientAuthentication::Secure { connect_token: token })
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Self { socket, netcode, last: Instant::now() })
    }

    fn pump(&mut self) {
        let dt = self.last.elapsed();
        self.last = Instant::now();
        let mut buffer = [0u8; 2048];
        while let Ok((len, _)) = self.socket.recv_from(&mut buffer) {
            if len <= arena_protocol::datagram::MAX_DATAGRAM_BYTES {
                let _ = self.netcode.process_packet(&mut buffer[..len]);
            }
        }
        if let Some((packet, to)) = self.netcode.update(dt) {
            let _ = self.socket.send_to(packet, to);
        }
    }
}

/// Floods `server` for `seconds` at about `rate` datagrams per second.
pub fn flood(server: SocketAddr, seconds: f64, rate: u32, seed: u64) -> std::io::Result<FloodReport> {
    let mut generator = Generator::new(seed);
    let sockets: Vec<UdpSocket> = (0..32)
        .map(|_| UdpSocket::bind(if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }))
        .collect::<Result<_, _>>()?;
    let mut insider = Insider::new(server)?;
    let mut report = FloodReport::default();
    let mut was_connected = false;
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(seconds.max(0.0));
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let mut next = started;
    while Instant::now() < end {
        insider.pump();
        let connected = insider.netcode.is_connected();
        if connected && !was_connected {
            report.connections += 1;
        }
        was_connected = connected;
        if insider.netcode.is_disconnected() {
            insider = Insider::new(server)?;
        }
        let socket = &sockets[generator.below(sockets.len())];
        match generator.below(10) {
            0..=2 => {
                let len = generator.length();
                let bytes = generator.bytes(len);
                let _ = socket.send_to(&bytes, server);
            }
            3..=5 => {
                let _ = socket.send_to(&netcode_shaped(&mut generator), server);
            }
            6 => {
                let _ = socket.send_to(&connection_request_with(server, -1, 3600 * 24 * 365), server);
                report.connection_requests += 1;
            }
            7 => {
                let len = generator.length();
                let bytes = generator.bytes(len);
                let _ = insider.socket.send_to(&bytes, server);
            }
            _ => {
                if connected {
                    let packet = renet_shaped(&mut generator);
                    if let Ok((to, datagram)) = insider.netcode.generate_payload_packet(&packet) {
                        let _ = insider.socket.send_to(datagram, to);
                        report.authenticated_garbage += 1;
                    }
                }
            }
        }
        report.datagrams += 1;
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > Duration::from_secs(1) {
            next = now;
        }
    }
    Ok(report)
}

/// Floods `server`'s remote console for `seconds`: `rates.0` garbage rcon
/// datagrams a second (magic, then a kind that is none) from 127.0.0.1,
/// and `rates.1` well-formed challenge requests a second from `strangers`
/// other loopback addresses (127.0.0.2 up) in turn. What was sent.
pub fn rcon_flood(server: SocketAddr, seconds: f64, rates: (u32, u32), strangers: u8) -> std::io::Result<(u64, u64)> {
    let mut garbage = arena_protocol::rcon::MAGIC.to_vec();
    garbage.push(7);
    let request = arena_protocol::rcon::Packet::ChallengeRequest.encode();
    let own = UdpSocket::bind("127.0.0.1:0")?;
    let others: Vec<UdpSocket> = (0..u32::from(strangers.max(1)))
        .map(|i| UdpSocket::bind((std::net::Ipv4Addr::from(0x7F00_0002 + i), 0)))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let (mut sent_garbage, mut sent_requests) = (0u64, 0u64);
    while started.elapsed().as_secs_f64() < seconds {
        let t = started.elapsed().as_secs_f64();
        while (sent_garbage as f64) < t * f64::from(rates.0) {
            let _ = own.send_to(&garbage, server);
            sent_garbage += 1;
        }
        while (sent_requests as f64) < t * f64::from(rates.1) {
            let _ = others[(sent_requests % others.len() as u64) as usize].send_to(&request, server);
            sent_requests += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok((sent_garbage, sent_requests))
}
