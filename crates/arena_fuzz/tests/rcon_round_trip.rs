//! The remote console end to end over real UDP on 127.0.0.1: the client of
//! `arena_client::remote_console` against the server's `RconGate` in a small
//! socket loop (the one the server runs, less Bevy). Here because this crate
//! already depends on both; the pieces' own tests are beside them.

// A test: a failed setup (no loopback socket) panics at once, with its cause.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use arena_client::remote_console::{RconError, run};
use arena_protocol::rcon::RconKey;
use arena_server::{RconGate, RconVerdict};

const PASSWORD: &str = "round trip";
const WAIT: Duration = Duration::from_secs(2);

/// A gate on a loopback socket, answering `datagrams` datagrams: a command
/// that runs is echoed back `repeat` times.
fn serve(key: Option<RconKey>, datagrams: usize, repeat: usize) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    thread::spawn(move || {
        let mut gate = RconGate::new(key);
        let started = Instant::now();
        let mut buf = [0u8; 1500];
        for _ in 0..datagrams {
            let Ok((n, from)) = socket.recv_from(&mut buf) else { return };
            match gate.judge(from, &buf[..n], started.elapsed()) {
                RconVerdict::Reply(reply) => {
                    let _ = socket.send_to(&reply, from);
                }
                RconVerdict::Run { command, challenge } => {
                    for datagram in gate.answer(&challenge, &format!("{from} ran: {command}\n").repeat(repeat)) {
                        let _ = socket.send_to(&datagram, from);
                    }
                }
                RconVerdict::Drop => {}
            }
        }
    });
    addr
}

#[test]
fn rcon_round_trip_runs_with_the_password_and_only_with_it() {
    let key = RconKey::with_new_salt(PASSWORD).unwrap();
    let server = serve(Some(key.clone()), 6, 1);
    let answer = run(server, PASSWORD, "status", WAIT).unwrap();
    assert!(answer.starts_with("127.0.0.1:") && answer.ends_with(" ran: status\n"), "{answer:?}");
    // A long answer, in several datagrams.
    let answer = run(server, PASSWORD, "players", WAIT).unwrap();
    assert!(answer.ends_with(" ran: players\n"));
    let e = run(server, "not the password", "quit", WAIT).unwrap_err();
    assert!(matches!(e, RconError::RefusedAfterSend(arena_protocol::rcon::RefusalReason::BadMac)), "{e}");

    let long = serve(Some(key), 2, 500);
    let answer = run(long, PASSWORD, "status", WAIT).unwrap();
    assert!(answer.len() > 8_000, "{} bytes", answer.len());
    assert!(answer.ends_with("…(cut)") || answer.lines().count() == 500);
}

#[test]
fn rcon_round_trip_to_a_server_without_rcon_says_so() {
    let server = serve(None, 1, 1);
    let e = run(server, PASSWORD, "status", WAIT).unwrap_err();
    assert!(matches!(e, RconError::NoRcon), "{e}");
    assert_eq!(e.to_string(), "the server has no remote console (--rcon-password-file)");
}

/// A UDP relay between one client and `server`, keeping every datagram that
/// crosses it either way (what anyone on the path sees).
fn relay(server: SocketAddr, seen: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    thread::spawn(move || {
        let mut client: Option<SocketAddr> = None;
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            seen.lock().unwrap().push(buf[..n].to_vec());
            let to = if from == server { client } else { Some(server) };
            if from != server {
                client = Some(from);
            }
            if let Some(to) = to {
                let _ = socket.send_to(&buf[..n], to);
            }
        }
    });
    addr
}

/// Issue 60: `sv_password NEWPASS` over rcon crossed the network readable.
/// Now commands and answers are sealed: a capture of every datagram of the
/// exchange (through a relay) holds neither the new password nor the
/// command's words, and the command still ran.
#[test]
fn rcon_round_trip_sends_nothing_readable() {
    let key = RconKey::with_new_salt(PASSWORD).unwrap();
    let server = serve(Some(key), 4, 1);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let through = relay(server, seen.clone());
    let answer = run(through, PASSWORD, "sv_password NEWPASS", WAIT).unwrap();
    assert!(answer.ends_with(" ran: sv_password NEWPASS\n"), "{answer:?}");
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 4, "{} datagrams crossed", seen.len());
    for datagram in seen.iter() {
        for word in [&b"NEWPASS"[..], b"sv_password", b"newpass", PASSWORD.as_bytes()] {
            assert!(!datagram.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word)), "{word:?} in {datagram:?}");
        }
    }
}
