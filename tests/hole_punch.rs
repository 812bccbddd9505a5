//! Introductions for hole punching cannot aim a server at a stranger: a real
//! master (`arena_master::serve`) and a real server over UDP on loopback;
//! an attacker with a raw socket forges the source address of its
//! datagrams. A client that never asked the master (its address forged
//! into a request), and introductions sent to the server by anyone but the
//! master (or forged from the master's address without the server's key),
//! make the server send nothing to the named address. A client that asks
//! the master itself, from its own address, does get the server's probes
//! (so the test can tell the two apart).
//!
//! Forging a source address takes a raw socket, which takes root (CI runs
//! as root); elsewhere the forged cases say so and are not run.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arena_lab::harness::{loopback_config, server_app_with_frame};
use arena_master::reach::Reach;
use arena_master::{Master, MasterConfig};
use arena_server::ServerConfig;
use bevy::prelude::*;

const FRAME: Duration = Duration::from_millis(5);

/// A master on its own thread, with its probe socket, until dropped.
struct RunningMaster {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningMaster {
    fn start() -> Self {
        let socket = arena_master::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let probe = arena_master::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut master = Master::new(MasterConfig::default());
            arena_master::serve(&socket, Some(&probe), &mut master, &flag, &mut |_| {}).unwrap();
        });
        Self { addr, stop, thread: Some(thread) }
    }
}

impl Drop for RunningMaster {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Sends `payload` as a UDP datagram from `from` (forged) to `to`, through
/// a raw socket. `None` without the right to open one.
fn send_forged(from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) -> Option<()> {
    use socket2::{Domain, Protocol, Socket, Type};
    // SOCK_RAW (3) with IPPROTO_RAW (255), which has the caller write the
    // IP header (Linux's values; socket2 names them only with its "all"
    // feature, which would change its features for the whole build).
    if !cfg!(target_os = "linux") {
        return None;
    }
    let socket = Socket::new(Domain::IPV4, Type::from(3), Some(Protocol::from(255))).ok()?;
    let total = 20 + 8 + payload.len();
    let mut packet = Vec::with_capacity(total);
    packet.extend_from_slice(&[0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    packet.extend_from_slice(&from.ip().octets());
    packet.extend_from_slice(&to.ip().octets());
    let udp_len = 8 + payload.len();
    packet.extend_from_slice(&from.port().to_be_bytes());
    packet.extend_from_slice(&to.port().to_be_bytes());
    packet.extend_from_slice(&(udp_len as u16).to_be_bytes());
    packet.extend_from_slice(&[0, 0]); // no UDP checksum (allowed over IPv4)
    packet.extend_from_slice(payload);
    // The kernel fills in the IP header's checksum.
    socket.send_to(&packet, &SocketAddr::V4(to).into()).ok()?;
    Some(())
}

fn v4(addr: SocketAddr) -> SocketAddrV4 {
    match addr {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => panic!("{addr} is not IPv4"),
    }
}

/// Runs the server for `time`, collecting what `watch` receives and from whom.
fn run_and_watch(server: &mut App, watch: &UdpSocket, time: Duration) -> Vec<(SocketAddr, Vec<u8>)> {
    watch.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    let end = Instant::now() + time;
    let mut buffer = [0u8; 2048];
    while Instant::now() < end {
        server.update();
        while let Ok((len, from)) = watch.recv_from(&mut buffer) {
            got.push((from, buffer[..len].to_vec()));
        }
        std::thread::sleep(FRAME);
    }
    got
}

fn probes_from(got: &[(SocketAddr, Vec<u8>)], server: SocketAddr) -> usize {
    got.iter().filter(|(from, d)| *from == server && Reach::parse(d) == Some(Reach::PunchProbe)).count()
}

#[test]
fn forged_introductions_make_the_server_probe_no_one() {
    let master = RunningMaster::start();
    let config = ServerConfig { masters: vec![master.addr.to_string()], ..loopback_config(32) };
    let (mut server, info) = server_app_with_frame(&config, FRAME);
    let server_addr = info.local_addr;
    // Listed: the master has its introduction key.
    let listed_by = Instant::now() + Duration::from_secs(5);
    while !info.reach.get().listed {
        assert!(Instant::now() < listed_by, "the server was never listed: {:?}", info.reach.get());
        server.update();
        std::thread::sleep(FRAME);
    }
    run_and_watch(&mut server, &UdpSocket::bind("127.0.0.1:0").unwrap(), Duration::from_millis(300));

    // 1. A genuine client asks the master from its own address: probed.
    let genuine = UdpSocket::bind("127.0.0.1:0").unwrap();
    genuine.send_to(&Reach::PunchRequest { server: server_addr, cookie: None }.padded(160), master.addr).unwrap();
    let got = run_and_watch(&mut server, &genuine, Duration::from_millis(300));
    let cookie = got
        .iter()
        .find_map(|(_, d)| match Reach::parse(d) {
            Some(Reach::PunchChallenge { cookie, .. }) => Some(cookie),
            _ => None,
        })
        .expect("the master's cookie");
    genuine
        .send_to(&Reach::PunchRequest { server: server_addr, cookie: Some(cookie) }.padded(160), master.addr)
        .unwrap();
    let got = run_and_watch(&mut server, &genuine, Duration::from_millis(1500));
    let genuine_probes = probes_from(&got, server_addr);
    println!("a client that asked the master itself: {genuine_probes} probes from the server");
    assert!(genuine_probes > 0, "the genuine client was not probed: {got:?}");

    // 2. Introductions sent to the server by a stranger, with made-up keys:
    //    nothing goes to the address they name.
    let victim = UdpSocket::bind("127.0.0.1:0").unwrap();
    let victim_addr = victim.local_addr().unwrap();
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    for key in ["abcdefgh12345678", "0000000000000000", "zzzzzzzzzzzzzzzz"] {
        stranger.send_to(&Reach::PunchIntro { client: victim_addr, key: key.into() }.encode(), server_addr).unwrap();
    }
    let got = run_and_watch(&mut server, &victim, Duration::from_millis(1500));
    println!("introductions from a stranger: {} datagrams to the named address", got.len());
    assert!(got.is_empty(), "the server sent {got:?} to an address a stranger named");

    // 3. With a raw socket (root): an introduction forged from the master's
    //    own address without the key, and a request forged to the master
    //    from the victim's address (the victim never asked).
    let forged_intro = Reach::PunchIntro { client: victim_addr, key: "abcdefgh12345678".into() }.encode();
    let request = Reach::PunchRequest { server: server_addr, cookie: None }.padded(160);
    let forged_cookie =
        Reach::PunchRequest { server: server_addr, cookie: Some("0123456789abcdef01234567".into()) }.padded(160);
    let sent = send_forged(v4(master.addr), v4(server_addr), &forged_intro)
        .and_then(|()| send_forged(v4(victim_addr), v4(master.addr), &request))
        .and_then(|()| send_forged(v4(victim_addr), v4(master.addr), &forged_cookie));
    if sent.is_none() {
        println!("no raw socket (not root): the forged-address cases were not run");
        return;
    }
    let got = run_and_watch(&mut server, &victim, Duration::from_millis(2000));
    let from_server = got.iter().filter(|(from, _)| *from == server_addr).count();
    let challenges = got.iter().filter(|(_, d)| matches!(Reach::parse(d), Some(Reach::PunchChallenge { .. }))).count();
    println!(
        "forged from the master's address, and requests forged from the victim's: {from_server} datagrams from \
         the server to the victim ({challenges} cookies from the master, which the victim never answers)"
    );
    assert_eq!(from_server, 0, "the server probed an address that never asked: {got:?}");
    // Both forged requests reached the master (the bare one, and the one
    // with a made-up cookie): each earned only a new cookie, sent to the
    // address it named.
    assert_eq!(challenges, 2, "the forged requests should have reached the master and earned only cookies");
}
