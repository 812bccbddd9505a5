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
    let key = RconKey::from_password(PASSWORD).unwrap();
    let server = serve(Some(key.clone()), 6, 1);
    let answer = run(server, PASSWORD, "status", WAIT).unwrap();
    assert!(answer.starts_with("127.0.0.1:") && answer.ends_with(" ran: status\n"), "{answer:?}");
    // A long answer, in several datagrams.
    let answer = run(server, PASSWORD, "players", WAIT).unwrap();
    assert!(answer.ends_with(" ran: players\n"));
    let e = run(server, "not the password", "quit", WAIT).unwrap_err();
    assert!(matches!(e, RconError::WrongPassword), "{e}");

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
