//! The master's side of Arena's extension to the dpmaster protocol (see
//! `reach.rs`): reachability checks answered from the second socket, and
//! introductions for hole punching, within the asker's byte credit and each
//! server's budget (`introductions.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use super::Master;
use crate::reach::{Nat, Reach, Refusal};

impl Master {
    /// The port of the second socket, from which reachability probes go.
    pub fn set_probe_port(&mut self, port: u16) {
        self.probe_port = port;
    }

    /// The second socket's address: its port, and its own address when it
    /// is bound to one (`--probe-bind`): servers are told it, and a server
    /// whose master's address differs knows the probe came from an address
    /// it never sent to. A socket bound to all addresses sends from the
    /// master's own: no address is told.
    pub fn set_probe_addr(&mut self, addr: SocketAddr) {
        self.probe_port = addr.port();
        let ip = arena_udp::canonical(addr).ip();
        self.probe_ip = (!ip.is_unspecified()).then_some(ip);
    }

    /// What is to go out of the second socket (taken).
    pub fn take_probe_datagrams(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        std::mem::take(&mut self.probe_out)
    }

    /// One datagram that came to the second socket: only `whoami`, answered
    /// through `out` from that socket.
    pub fn receive_on_probe_socket(
        &mut self,
        from: SocketAddr,
        datagram: &[u8],
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        let from = arena_udp::canonical(from);
        self.counters.datagrams += 1;
        self.counters.bytes_in += datagram.len() as u64;
        if !self.credits.received(from.ip(), datagram.len(), now) {
            self.counters.untracked += 1;
        }
        match Reach::parse(datagram) {
            Some(Reach::WhoAmI { nonce }) => {
                self.reply(from, Reach::YouAre { nonce, seen: from }.encode(), out);
            }
            _ => self.counters.drop("not for the probe socket"),
        }
        self.credits.datagram_done();
    }

    /// Whether `cookie` proves that `from` asks about `server` (a request
    /// from a forged address never sees its cookie); if not, `from` is sent
    /// a fresh one in the `challenge` of its request's kind, within its credit.
    pub(super) fn proved(
        &mut self,
        from: SocketAddr,
        server: SocketAddr,
        cookie: Option<&str>,
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
        challenge: impl FnOnce(SocketAddr, String) -> Reach,
    ) -> bool {
        if cookie.is_some_and(|c| self.introductions.cookie_good(from, server, c, now)) {
            return true;
        }
        let cookie = self.introductions.cookie(from, server, now);
        if self.reply(from, challenge(server, cookie).encode(), out) {
            self.counters.cookies += 1;
        }
        false
    }

    /// A reply to `to`, within its credit.
    pub(super) fn reply(&mut self, to: SocketAddr, datagram: Vec<u8>, out: &mut Vec<(SocketAddr, Vec<u8>)>) -> bool {
        if datagram.len() <= self.credit_of(to.ip()) {
            self.send(to, datagram, out);
            true
        } else {
            self.counters.withheld += 1;
            false
        }
    }

    /// Arena's extension (see `reach.rs`).
    pub(super) fn reach(
        &mut self,
        from: SocketAddr,
        message: Reach,
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        match message {
            Reach::Check { nonce } => {
                if self.probe_port == 0 {
                    self.counters.drop("reachability check without a probe socket");
                    return;
                }
                // A second socket on one family cannot probe the other.
                if self.probe_ip.is_some_and(|ip| ip.is_ipv4() != from.is_ipv4()) {
                    self.counters.drop("reachability check of the probe socket's other family");
                    return;
                }
                let probe = Reach::Probe { nonce: nonce.clone() }.encode();
                let sent =
                    Reach::Sent { nonce, seen: from, probe_port: self.probe_port, probe_ip: self.probe_ip }.encode();
                // Both count against the asker's credit: a forged check
                // aims at most its own size at anyone.
                if probe.len() + sent.len() > self.credit_of(from.ip()) {
                    self.counters.withheld += 1;
                    return;
                }
                self.credits.spend(from.ip(), probe.len());
                self.counters.bytes_out += probe.len() as u64;
                self.probe_out.push((from, probe));
                self.send(from, sent, out);
                self.counters.reach_checks += 1;
            }
            Reach::PunchRequest { server, cookie } => {
                let challenge = |server, cookie| Reach::PunchChallenge { server, cookie };
                if !self.proved(from, server, cookie.as_deref(), now, out, challenge) {
                    return;
                }
                let game_port = self.listed.get(&server).map_or(0, |l| l.game_port);
                let answer = match self.listed.get(&server) {
                    None => Err(Refusal::Unlisted),
                    Some(listing) if listing.nat == Nat::Symmetric => Err(Refusal::Symmetric),
                    Some(listing) => match &listing.intro_key {
                        None => Err(Refusal::Unlisted),
                        Some(key) => Ok((key.clone(), listing.nat)),
                    },
                };
                let answer = match answer {
                    // A replayed cookie (or a client asking again): told it
                    // is under way, without another introduction.
                    Ok((_, nat)) if self.introductions.introduced_lately(from, server, now) => {
                        Reach::PunchStarted { server, nat, game_port }
                    }
                    Ok((key, nat)) if self.introductions.allow(from, server, now) => {
                        let intro = Reach::PunchIntro { client: from, key }.encode();
                        self.counters.bytes_out += intro.len() as u64;
                        self.counters.introductions += 1;
                        out.push((server, intro));
                        Reach::PunchStarted { server, nat, game_port }
                    }
                    Ok(_) => Reach::PunchRefused { server, why: Refusal::Busy, game_port },
                    Err(why) => Reach::PunchRefused { server, why, game_port },
                };
                self.reply(from, answer.encode(), out);
            }
            Reach::RelayRequest { server, cookie } => self.relay_request(from, server, cookie, now, out),
            Reach::RelayIntro { server, relayed, cookie } => {
                self.relay_intro(from, server, relayed, &cookie, now, out);
            }
            _ => self.counters.drop("not for a master"),
        }
    }
}
