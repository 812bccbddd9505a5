//! The network pipelines as fuzz targets: datagrams through the real server
//! and client transports (guard, renetcode, payload guard, renet), with one
//! client connected and one address pending first; and renet packets
//! through the payload guard into renet itself, as a peer holding a session
//! key could send them.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arena_client::IoMode;
use arena_client::LinkConditions;
use arena_client::transport::UdpTransport;
use arena_protocol::datagram::{CONNECTION_REQUEST_BYTES, MAX_SEQUENCE};
use arena_protocol::key::{OPEN_KEY, Password};
use arena_protocol::payload_guard::PayloadGuard;
use arena_protocol::{PROTOCOL_ID, channel, connection_config};
use arena_server::ServerTransport;
use renet::{RenetClient, RenetServer};
use renetcode::{ClientAuthentication, ConnectToken, NetcodeClient};

use crate::inputs::Generator;
use crate::target::Target;

/// Frame time the pipelines advance by between batches.
const FRAME: Duration = Duration::from_millis(4);
/// Inputs between two frames of upkeep.
const BATCH: u32 = 64;

/// A server transport with one client connected (a real [`UdpTransport`])
/// and one address pending, all on 127.0.0.1.
pub struct Network {
    pub server: ServerTransport,
    pub renet_server: RenetServer,
    pub client: UdpTransport,
    pub renet_client: RenetClient,
    pub server_addr: SocketAddr,
    pub client_addr: SocketAddr,
    pub pending_addr: SocketAddr,
    /// The client's clock (the sum of its frames).
    client_clock: Duration,
    /// The pending client's socket (kept open so its address stays its own).
    _pending: UdpSocket,
}

impl Network {
    /// Connects a client and leaves another pending. Panics if the loopback
    /// network does not work (the harness itself is broken then).
    pub fn connect() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let server_addr = socket.local_addr().expect("its address");
        let mut server = ServerTransport::new(socket, OPEN_KEY, 8).expect("a server transport");
        let mut renet_server = RenetServer::new(connection_config());
        let frames = IoMode::Frame;
        let mut client =
            UdpTransport::connect(server_addr, ("Fuzz", false), &Password::OPEN, LinkConditions::OFF, 1, frames)
                .expect("a client transport");
        let mut clock = Duration::ZERO;
        let mut renet_client = RenetClient::new(connection_config());
        let mut connected = false;
        for _ in 0..500 {
            pump(&mut server, &mut renet_server, &mut client, &mut renet_client, &mut clock);
            if client.is_connected() && renet_server.clients_id().len() == 1 {
                connected = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(connected, "the fuzz harness's client could not connect over loopback");
        let client_addr = server.client_addr(renet_server.clients_id()[0]).expect("the client's address");

        // A second client that sends one connection request and no more.
        let pending = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        let pending_addr = pending.local_addr().expect("its address");
        let request = connection_request(server_addr);
        pending.send_to(&request, server_addr).expect("sent");
        std::thread::sleep(Duration::from_millis(2));
        pump(&mut server, &mut renet_server, &mut client, &mut renet_client, &mut clock);
        assert_eq!(server.pending_connections(), 1, "the second client is pending");

        Self {
            server,
            renet_server,
            client,
            renet_client,
            server_addr,
            client_addr,
            pending_addr,
            client_clock: clock,
            _pending: pending,
        }
    }

    /// One frame of both sides: receive, update, send.
    pub fn pump(&mut self) {
        pump(
            &mut self.server,
            &mut self.renet_server,
            &mut self.client,
            &mut self.renet_client,
            &mut self.client_clock,
        );
    }

    pub fn client_still_connected(&self) -> bool {
        self.client.is_connected() && self.renet_server.clients_id().len() == 1
    }
}

fn pump(
    server: &mut ServerTransport,
    rs: &mut RenetServer,
    client: &mut UdpTransport,
    rc: &mut RenetClient,
    clock: &mut Duration,
) {
    *clock += FRAME;
    let _ = client.receive(*clock, rc);
    drop(client.take_messages());
    let _ = client.send(*clock, rc, true);
    rs.update(FRAME);
    let _ = server.update(FRAME, rs);
    while rs.get_event().is_some() {}
    for id in rs.clients_id() {
        while rs.receive_message(id, channel::RELIABLE).is_some()
            || rs.receive_message(id, channel::UNRELIABLE).is_some()
        {}
    }
    let everyone = rs.clients_id();
    // Raw messages waiting for intake stay bounded (64 a client) undrained.
    server.send(rs, &everyone, &mut arena_server::UnreliableOut::default());
}

/// A valid connection request to `server` with a fresh self-made token.
pub fn connection_request(server: SocketAddr) -> Vec<u8> {
    connection_request_with(server, 10, 300)
}

/// A connection request whose token claims this timeout and lifetime.
pub fn connection_request_with(server: SocketAddr, timeout_s: i32, expire_s: u64) -> Vec<u8> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let token =
        ConnectToken::generate(now, PROTOCOL_ID, expire_s, rand_u64(), timeout_s, vec![server], None, &OPEN_KEY)
            .expect("a token");
    let mut client = NetcodeClient::new(now, ClientAuthentication::Secure { connect_token: token }).expect("a client");
    let (packet, _) = client.update(Duration::ZERO).expect("a connection request");
    debug_assert_eq!(packet.len(), CONNECTION_REQUEST_BYTES);
    packet.to_vec()
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// A netcode-shaped datagram: every prefix byte, sequence lengths up to 15,
/// extreme sequence numbers, bodies of every size around the real ones.
pub fn netcode_shaped(generator: &mut Generator) -> Vec<u8> {
    let prefix = generator.next_u64() as u8;
    let seq_len = usize::from(prefix >> 4).min(8);
    let sequence = match generator.below(4) {
        0 => u64::MAX,
        1 => MAX_SEQUENCE + generator.below(3) as u64 - 1,
        2 => generator.below(300) as u64,
        _ => generator.next_u64(),
    };
    let mut out = vec![prefix];
    out.extend_from_slice(&sequence.to_le_bytes()[..seq_len]);
    let body = [0usize, 8, 16, 24, 308, 324, 1300, 1316, 1077][generator.below(9)] + generator.below(3);
    let bytes = generator.bytes(body.saturating_sub(1));
    out.extend(bytes);
    out
}

/// Which end of a connection a pipeline target feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// What a server receives (from its clients, pending ones and strangers).
    Server,
    /// What a client receives (from its server's address).
    Client,
}

/// Datagrams through a real transport with a client connected and another
/// pending: at the server, from the connected client's address, the pending
/// one's and strangers'; or at the client, as if from its server's address.
pub struct Datagrams {
    side: Side,
    net: Option<Network>,
    generator: Generator,
    count: u32,
}

impl Datagrams {
    pub fn new(side: Side) -> Self {
        Self { side, net: None, generator: Generator::new(if side == Side::Server { 11 } else { 12 }), count: 0 }
    }
}

impl Target for Datagrams {
    fn name(&self) -> &'static str {
        match self.side {
            Side::Server => "server_datagrams",
            Side::Client => "client_datagrams",
        }
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let server: SocketAddr = ([127, 0, 0, 1], 9).into();
        match self.side {
            Side::Server => (0..4).map(|_| connection_request(server)).collect(),
            Side::Client => Vec::new(),
        }
    }

    fn run(&mut self, input: &[u8]) {
        let net = self.net.get_or_insert_with(Network::connect);
        let (selector, rest) = input.split_first().map_or((0, input), |(s, r)| (*s, r));
        let shaped;
        let datagram = if selector & 0x80 != 0 {
            shaped = netcode_shaped(&mut self.generator);
            &shaped[..]
        } else {
            rest
        };
        match self.side {
            Side::Server => {
                let from = match selector % 4 {
                    0 => net.client_addr,
                    1 => net.pending_addr,
                    2 => SocketAddr::from(([127, 0, 0, 1], 1 + u16::from(selector))),
                    _ => SocketAddr::from(([203, 0, 113, selector], 27015)),
                };
                net.server.handle_datagram(from, datagram, &mut net.renet_server);
            }
            Side::Client => net.client.inject(datagram, &mut net.renet_client),
        }
        self.count += 1;
        if self.count.is_multiple_of(BATCH) {
            net.pump();
            assert!(net.client_still_connected(), "forged datagrams disconnected the client");
        }
    }

    fn reset(&mut self) {
        self.net = None;
    }
}

/// A renet packet: every kind, the right and wrong channels, message ids
/// near and far, lengths of zero and more.
pub fn renet_shaped(generator: &mut Generator) -> Vec<u8> {
    let mut out = vec![generator.below(6) as u8];
    let varint = |v: u64, out: &mut Vec<u8>| {
        let mut buf = [0u8; 8];
        let mut o = octets_mut(&mut buf);
        let n = o.put_varint(v.min((1 << 62) - 1)).map(|s| s.len()).unwrap_or(0);
        out.extend_from_slice(&buf[..n]);
    };
    varint(generator.below(1000) as u64, &mut out);
    out.push([channel::RELIABLE, channel::UNRELIABLE, 7][generator.below(3)]);
    let count = generator.below(6);
    match out[0] {
        0 | 1 => {
            out.extend_from_slice(&(count as u16).to_be_bytes());
            for _ in 0..count {
                if out[0] == 0 {
                    let id = [0, 1, 2, 255, 256, 257, 100_000][generator.below(7)];
                    varint(id, &mut out);
                }
                let len = [0, 1, 2, 40][generator.below(4)];
                varint(len as u64, &mut out);
                let bytes = generator.bytes(len);
                out.extend(bytes);
            }
        }
        2 | 3 => {
            for v in [generator.below(300) as u64, generator.below(20) as u64, generator.below(20) as u64] {
                varint(v, &mut out);
            }
            let len = [0, 1, 1199, 1200, 1201][generator.below(5)];
            varint(len as u64, &mut out);
            let bytes = generator.bytes(len);
            out.extend(bytes);
        }
        _ => {
            for _ in 0..3 + count {
                varint(generator.below(70_000) as u64, &mut out);
            }
        }
    }
    out
}

fn octets_mut(buf: &mut [u8]) -> octets::OctetsMut<'_> {
    octets::OctetsMut::with_slice(buf)
}

/// One end of a renet connection, fed packets directly.
enum Peer {
    Server(Box<renet::RenetServer>),
    Client(Box<renet::RenetClient>),
}

impl Peer {
    fn new(side: Side) -> Self {
        match side {
            Side::Server => {
                let mut server = renet::RenetServer::new(connection_config());
                server.add_connection(1);
                Peer::Server(Box::new(server))
            }
            Side::Client => {
                let mut client = renet::RenetClient::new(connection_config());
                client.set_connected();
                Peer::Client(Box::new(client))
            }
        }
    }

    /// Takes a packet, advances time, reads every message and sends what is
    /// due; whether the connection is still up.
    fn take(&mut self, packet: Option<&[u8]>, dt: Duration) -> bool {
        match self {
            Peer::Server(server) => {
                if let Some(packet) = packet {
                    let _ = server.process_packet_from(packet, 1);
                }
                server.update(dt);
                while server.receive_message(1, channel::RELIABLE).is_some()
                    || server.receive_message(1, channel::UNRELIABLE).is_some()
                {}
                let _ = server.get_packets_to_send(1);
                while server.get_event().is_some() {}
                server.clients_id().contains(&1)
            }
            Peer::Client(client) => {
                if let Some(packet) = packet {
                    client.process_packet(packet);
                }
                client.update(dt);
                while client.receive_message(channel::RELIABLE).is_some()
                    || client.receive_message(channel::UNRELIABLE).is_some()
                {}
                let _ = client.get_packets_to_send();
                !client.is_disconnected()
            }
        }
    }
}

/// renet packets from a peer that holds the session key (so netcode lets
/// them through): the payload guard, then renet itself; or a raw message
/// (a bundle entry outside renet: commands, snapshots), decoded and checked
/// as the receiving side does. A client's packets into a server, or a
/// server's into a client.
pub struct Payloads {
    side: Side,
    guard: PayloadGuard,
    peer: Peer,
    generator: Generator,
    clock: Duration,
}

impl Payloads {
    pub fn new(side: Side) -> Self {
        let guard = match side {
            Side::Server => PayloadGuard::from_client(),
            Side::Client => PayloadGuard::from_server(),
        };
        let seed = if side == Side::Server { 13 } else { 14 };
        Self { side, guard, peer: Peer::new(side), generator: Generator::new(seed), clock: Duration::ZERO }
    }
}

impl Target for Payloads {
    fn name(&self) -> &'static str {
        match self.side {
            Side::Server => "server_payloads",
            Side::Client => "client_payloads",
        }
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        // Raw messages as the transports send them (0xF0 is even: taken as given).
        let message = match self.side {
            Side::Server => {
                let cmds = vec![arena_sim::UserCmd { tick: 40, forward: 1.0, ..Default::default() }];
                let packet = arena_protocol::command_packet::CommandPacket { snapshot_ack: Some(38), cmds };
                arena_protocol::encode(&arena_protocol::ToServer::Commands(packet.encode()))
            }
            Side::Client => arena_protocol::encode(&arena_protocol::ToClient::Snapshot(vec![0x21; 24])),
        };
        message.ok().map(|m| arena_protocol::bundle::raw_entry(&m)).into_iter().collect()
    }

    fn run(&mut self, input: &[u8]) {
        let shaped;
        let packet = if input.first().is_some_and(|b| b & 1 == 1) {
            shaped = renet_shaped(&mut self.generator);
            &shaped[..]
        } else {
            input
        };
        let dt = Duration::from_micros(500);
        self.clock += dt;
        if let Some(message) = arena_protocol::bundle::raw_message(packet) {
            // What the transports do with one: bounded, then decoded with
            // limits and checked; never to renet.
            match self.side {
                Side::Server => {
                    if let Ok(m) = arena_protocol::decode::<arena_protocol::ToServer>(message) {
                        let _ = m.validate();
                    }
                }
                Side::Client => {
                    if let Ok(m) = arena_protocol::decode::<arena_protocol::ToClient>(message) {
                        let _ = m.validate();
                    }
                }
            }
            return;
        }
        let admitted = self.guard.check(packet, self.clock).is_ok();
        if !self.peer.take(admitted.then_some(packet), dt) {
            // renet ended the connection (its own limits): a new session.
            self.reset();
        }
    }

    fn reset(&mut self) {
        let generator = self.generator.clone();
        *self = Self { generator, ..Self::new(self.side) };
    }
}
