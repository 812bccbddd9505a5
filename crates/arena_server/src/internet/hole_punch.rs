//! The server's side of UDP hole punching: a master's introduction (from a
//! master's address, carrying this server's introduction key, which only
//! masters were told) names a player's public address; the server sends it
//! a few small probes from the game socket, which opens the server's
//! router toward that address, so that the player's connection requests
//! pass. Bounded: [`INTRODUCTIONS_PER_S`] a second, [`MAX_TARGETS`] at once,
//! [`PROBES_PER_TARGET`] probes each. A forged introduction (another
//! sender, a wrong key) sends nothing to anyone.
//!
//! # Every file of hole punching
//!
//! This file is the server's punching: introductions taken, probes sent.
//! The rest, in the order of an introduction (a path without a crate is
//! under `crates/arena_server/src/`):
//!
//! - `crates/arena_master/src/reach.rs`: the messages, all of them pure
//!   datagrams with bounded parsers (`punchRequest`, `punchChallenge`,
//!   `punchIntro`, `punchProbe`, `punchStarted`, `punchRefused`).
//! - Server, before any player asks: `lib.rs` (`add_server`) makes a fresh
//!   introduction key at start; `socket/answers.rs` tells it to masters
//!   alone, in their `getinfo` answers, with the router's kind that
//!   `internet/reach_check.rs` found (a router that gives every destination
//!   a new port cannot be punched through: masters then refuse
//!   introductions); `internet/master_list.rs` keeps heartbeats going while
//!   strangers cannot reach the server, so that its router's binding to
//!   each master stays open.
//! - `crates/arena_client/src/connection.rs`: looks up the masters that
//!   introduce a connection; `crates/arena_client/src/hole_punch.rs`: when
//!   the server stays silent, asks them for an introduction, answers a
//!   master's cookie, and gives up with the reason;
//!   `crates/arena_client/src/transport.rs` runs it on the game socket and
//!   counts the server's probes.
//! - `crates/arena_master/src/table/extension.rs`: the master answers a
//!   request with a cookie, then a request that proves its address with an
//!   introduction to the server and word to the player;
//!   `crates/arena_master/src/introductions.rs`: the cookies (a keyed MAC,
//!   kept nowhere) and each server's budget of introductions.
//! - Server, on an introduction: `socket/guard.rs` lets the extension's
//!   messages in from masters' addresses only; `socket/transport.rs` drops
//!   an introduction without this server's key before it queues;
//!   `internet/master_messages.rs` hands it here; the probes go from here.
//! - `tests/hole_punch.rs`: forged requests and introductions make the
//!   server probe nothing.

use std::net::SocketAddr;
use std::time::Duration;

use arena_master::reach::Reach;
use arena_udp::{INTRODUCTION_BURST, INTRODUCTIONS_PER_S};
use bevy::prelude::*;

use crate::socket::rate_limits::Bucket;
use crate::socket::transport::ServerTransport;

/// Addresses being probed at once, at most.
pub(crate) const MAX_TARGETS: usize = 32;
/// Probes per introduced address, and the gap between two.
pub(crate) const PROBES_PER_TARGET: u32 = 20;
pub(crate) const PROBE_GAP: Duration = Duration::from_millis(100);

#[derive(Debug)]
struct Target {
    addr: SocketAddr,
    left: u32,
    next: Duration,
}

/// The introductions this server accepts, and its probes in flight.
#[derive(Resource, Debug)]
pub(crate) struct Punches {
    /// The key masters put in introductions (a fresh one per start).
    pub key: String,
    /// The masters' addresses (introductions come from these only).
    pub masters: Vec<SocketAddr>,
    targets: Vec<Target>,
    bucket: Bucket,
    pub accepted: u64,
    /// Introductions refused: a stranger's, a wrong key, over the budget.
    pub refused: u64,
    pub probes_sent: u64,
}

impl Punches {
    pub(crate) fn new(key: String) -> Self {
        Self {
            key,
            masters: Vec::new(),
            targets: Vec::new(),
            bucket: Bucket::full(INTRODUCTION_BURST as f32, Duration::ZERO),
            accepted: 0,
            refused: 0,
            probes_sent: 0,
        }
    }

    /// An introduction from `from`: true if taken (probes will go).
    pub(crate) fn introduce(&mut self, from: SocketAddr, client: SocketAddr, key: &str, now: Duration) -> bool {
        let from = arena_udp::canonical(from);
        let genuine = self.masters.contains(&from) && key == self.key;
        let fits = self.targets.len() < MAX_TARGETS || self.targets.iter().any(|t| t.addr == client);
        if !genuine || !fits || !self.bucket.take(now, INTRODUCTIONS_PER_S as f32, INTRODUCTION_BURST as f32) {
            self.refused += 1;
            return false;
        }
        self.accepted += 1;
        match self.targets.iter_mut().find(|t| t.addr == client) {
            Some(target) => target.left = PROBES_PER_TARGET,
            None => self.targets.push(Target { addr: client, left: PROBES_PER_TARGET, next: now }),
        }
        true
    }

    /// The probes due at `now` (each address's next one scheduled).
    pub(crate) fn due(&mut self, now: Duration) -> Vec<SocketAddr> {
        let mut due = Vec::new();
        for target in &mut self.targets {
            if target.next <= now && target.left > 0 {
                due.push(target.addr);
                target.left -= 1;
                target.next = now + PROBE_GAP;
            }
        }
        self.targets.retain(|t| t.left > 0);
        self.probes_sent += due.len() as u64;
        due
    }
}

/// The probe datagram.
pub(crate) fn probe() -> Vec<u8> {
    Reach::PunchProbe.encode()
}

/// Sends the probes due, from the game socket (the one the player's
/// connection requests are for).
pub(crate) fn send_probes(mut punches: ResMut<Punches>, mut transport: ResMut<ServerTransport>, time: Res<Time<Real>>) {
    for addr in punches.due(time.elapsed()) {
        transport.send_datagram(&probe(), addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master() -> SocketAddr {
        "11.0.0.1:27950".parse().unwrap()
    }

    #[test]
    fn only_a_masters_introduction_with_the_key_sends_probes() {
        let mut punches = Punches::new("abcdefgh12345678".into());
        punches.masters = vec![master()];
        let client: SocketAddr = "11.0.9.9:40000".parse().unwrap();
        let now = Duration::from_secs(1);
        assert!(!punches.introduce("11.0.0.66:27950".parse().unwrap(), client, "abcdefgh12345678", now));
        assert!(!punches.introduce(master(), client, "wrongwrongwrong1", now));
        assert!(punches.due(now).is_empty());
        assert!(punches.introduce(master(), client, "abcdefgh12345678", now));
        let mut sent = 0;
        for step in 0..100 {
            sent += punches.due(now + PROBE_GAP * step).len();
        }
        assert_eq!(sent, PROBES_PER_TARGET as usize);
    }

    #[test]
    fn introductions_are_bounded() {
        let mut punches = Punches::new("abcdefgh12345678".into());
        punches.masters = vec![master()];
        let now = Duration::from_secs(1);
        let taken = (0..1000u16)
            .filter(|i| {
                punches.introduce(master(), SocketAddr::from(([11, 0, 9, 9], 1000 + i)), "abcdefgh12345678", now)
            })
            .count();
        assert_eq!(taken, INTRODUCTION_BURST as usize);
        assert!(punches.due(now).len() <= MAX_TARGETS);
    }
}
