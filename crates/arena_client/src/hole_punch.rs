//! The joining side of UDP hole punching: when the server stays silent for
//! [`ASK_AFTER`], ask its masters (from the game socket, so that the master
//! sees the address the server must probe) for an introduction; answer a
//! master's cookie; meanwhile netcode's connection requests keep going out,
//! opening this side's router toward the server, and pass once the
//! server's probes have opened its side. When punching is hopeless (the
//! master says the host's router changes ports per destination) or has
//! failed for [`PUNCH_FAILS_AFTER`], the master is asked for relay
//! credentials; the transport allocates a relayed address on the master's
//! TURN server with them, and the master introduces that address to the
//! server, which probes it like any other (see `relay.rs`). When every way
//! has failed by [`GIVE_UP_AFTER`] (later while a relay is under way), the
//! player is told why and what the host can do.

use std::net::SocketAddr;
use std::time::Duration;

use arena_master::reach::{Nat, Reach, Refusal, RelayRefusal};
use bevy::prelude::*;

/// Silence from the server before the masters are asked.
pub const ASK_AFTER: Duration = Duration::from_millis(500);
/// Gap between two requests while no master has answered, and how many.
pub const ASK_EVERY: Duration = Duration::from_millis(1000);
pub const MAX_ASKS: u32 = 4;
/// When a connection that has heard nothing from the server gives up.
pub const GIVE_UP_AFTER: Duration = Duration::from_millis(4500);
/// When it gives up if a master said the server's router changes ports per
/// destination (nothing will come through; direct answers would have come).
pub const GIVE_UP_SYMMETRIC_AFTER: Duration = Duration::from_millis(2000);
/// Requests are padded so that a master may answer them in full (it sends
/// no address more bytes than that address sent).
const REQUEST_BYTES: usize = 160;
/// Punching that has not got the server's probes through this long after
/// the master introduced us has failed: the relay is asked for.
pub const PUNCH_FAILS_AFTER: Duration = Duration::from_millis(1200);
/// When a connection whose relay is under way gives up.
pub const GIVE_UP_RELAYED_AFTER: Duration = Duration::from_millis(7000);
/// Gap between two relay requests while no master has answered, and how many.
const RELAY_ASK_EVERY: Duration = Duration::from_millis(700);
const MAX_RELAY_ASKS: u32 = 8;

/// Credentials for the master's TURN server, for one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayGrant {
    pub turn: SocketAddr,
    pub username: String,
    pub password: String,
    /// The master that gave them (and introduces the relayed address).
    pub master: SocketAddr,
}

/// Where the relay stands for one connection: asked of one master only
/// (the one that answered for the server), so that its cookie, its grant
/// and its refusal are all one master's.
#[derive(Debug, Clone)]
struct RelayAsk {
    master: SocketAddr,
    asks: u32,
    last_ask: Option<Duration>,
    answered_cookie: bool,
    /// The master's last cookie for this pair (it proves our address to
    /// the master again when the relayed address is introduced).
    cookie: Option<String>,
    grant: Option<RelayGrant>,
    /// Whether a master granted credentials (kept after the transport took them).
    granted: bool,
    refused: Option<RelayRefusal>,
    /// The relayed address the transport got, and whether the master has
    /// said it introduced it.
    relayed: Option<SocketAddr>,
    introduced: bool,
    /// Why the relay failed, in words (from the transport).
    failed: Option<String>,
}

/// The masters that introduce this client to servers: `host` or
/// `host:port`, looked up when a connection starts.
#[derive(Resource, Debug, Clone, Default)]
pub struct Introducers(pub Vec<String>);

/// One connection's introduction.
#[derive(Debug, Clone)]
pub struct Introduction {
    server: SocketAddr,
    masters: Vec<SocketAddr>,
    asks: u32,
    last_ask: Option<Duration>,
    /// Whether the master's cookie for the last ask has been answered
    /// (once per ask: a forged challenge earns nothing more).
    answered_cookie: bool,
    /// A master introduced us: the server is probing.
    pub started: bool,
    /// What the master knows of the server's router.
    pub nat: Nat,
    pub refused: Option<Refusal>,
    /// The server's own game port, as the master knows it (0: not known).
    pub game_port: u16,
    /// Probes from the server that came through.
    pub probes: u32,
    /// When the master introduced us (for [`PUNCH_FAILS_AFTER`]).
    started_at: Option<Duration>,
    /// The master that answered for the server last (the relay is asked of it).
    answered_by: Option<SocketAddr>,
    /// The relay, once punching is hopeless or has failed.
    relay: Option<RelayAsk>,
}

impl Introduction {
    /// For `server`, through those of `masters` of its family.
    pub fn new(server: SocketAddr, masters: &[SocketAddr]) -> Self {
        let masters = masters
            .iter()
            .map(|m| arena_udp::canonical(*m))
            .filter(|m| m.is_ipv4() == server.is_ipv4())
            .take(4)
            .collect();
        Self {
            server,
            masters,
            asks: 0,
            last_ask: None,
            answered_cookie: false,
            started: false,
            nat: Nat::Unknown,
            refused: None,
            game_port: 0,
            probes: 0,
            started_at: None,
            answered_by: None,
            relay: None,
        }
    }

    /// Whether punching cannot work or has failed by `clock`: time for the relay.
    fn punching_failed(&self, clock: Duration) -> bool {
        let hopeless = self.refused == Some(Refusal::Symmetric) || self.nat == Nat::Symmetric;
        let failed = self.started_at.is_some_and(|t| clock.saturating_sub(t) >= PUNCH_FAILS_AFTER);
        hopeless || failed
    }

    /// The relay credentials a master granted, once (the transport takes them).
    pub fn take_grant(&mut self) -> Option<RelayGrant> {
        self.relay.as_mut().and_then(|r| r.grant.take())
    }

    /// Whether the relay is under way (asked for, granted or in use).
    pub fn relaying(&self) -> bool {
        self.relay.as_ref().is_some_and(|r| r.refused.is_none_or(|why| why == RelayRefusal::Busy) && r.failed.is_none())
    }

    /// The transport holds `relayed` on the relay of `master`: what to send
    /// that master so that it introduces the address to the server.
    pub fn relayed(&mut self, relayed: SocketAddr, master: SocketAddr) -> Option<(SocketAddr, Vec<u8>)> {
        let server = self.server;
        let relay = self.relay.as_mut()?;
        relay.relayed = Some(relayed);
        relay.introduced = false;
        info!("holding {relayed} on the relay: asking the master at {master} to introduce it to {server}");
        let cookie = relay.cookie.clone()?;
        Some((master, Reach::RelayIntro { server, relayed, cookie }.padded(REQUEST_BYTES)))
    }

    /// The relay failed (the transport says why): the player is told.
    pub fn relay_failed(&mut self, why: String) {
        if let Some(relay) = self.relay.as_mut() {
            relay.failed = Some(why);
        }
    }

    pub fn has_masters(&self) -> bool {
        !self.masters.is_empty()
    }

    /// Adds the masters of `other` (for the same server) not known yet.
    pub fn add_masters(&mut self, other: &Introduction) {
        for master in &other.masters {
            if !self.masters.contains(master) && self.masters.len() < 4 {
                self.masters.push(*master);
            }
        }
    }

    pub fn is_master(&self, from: SocketAddr) -> bool {
        self.masters.contains(&arena_udp::canonical(from))
    }

    /// What to send at `clock` (since connecting), given whether the server
    /// has been heard from.
    pub fn due(&mut self, clock: Duration, heard: bool) -> Vec<(SocketAddr, Vec<u8>)> {
        if !heard && self.relay.is_none() && self.punching_failed(clock) {
            let master = self.answered_by.or(self.masters.first().copied());
            if let Some(master) = master {
                info!("no way through to {} by punching: asking the master at {master} for its relay", self.server);
                self.relay = Some(RelayAsk {
                    master,
                    asks: 0,
                    last_ask: None,
                    answered_cookie: false,
                    cookie: None,
                    grant: None,
                    granted: false,
                    refused: None,
                    relayed: None,
                    introduced: false,
                    failed: None,
                });
            }
        }
        if let Some(relay) = self.relay.as_mut() {
            // A busy relay (a server listed a moment ago, which the relay
            // does not admit yet; a network's budget spent) is asked again.
            let waiting = !relay.granted && relay.refused.is_none_or(|r| r == RelayRefusal::Busy);
            let asked_lately = relay.last_ask.is_some_and(|t| clock.saturating_sub(t) < RELAY_ASK_EVERY);
            if heard || !waiting || asked_lately || relay.asks >= MAX_RELAY_ASKS {
                return Vec::new();
            }
            relay.asks += 1;
            relay.last_ask = Some(clock);
            relay.answered_cookie = false;
            relay.refused = None;
            let request = Reach::RelayRequest { server: self.server, cookie: None }.padded(REQUEST_BYTES);
            return vec![(relay.master, request)];
        }
        // A busy server's budget refills: ask again.
        let answered = self.started || self.refused.is_some_and(|r| r != Refusal::Busy);
        if heard || answered || clock < ASK_AFTER || self.asks >= MAX_ASKS {
            return Vec::new();
        }
        if self.last_ask.is_some_and(|t| clock.saturating_sub(t) < ASK_EVERY) {
            return Vec::new();
        }
        self.asks += 1;
        self.last_ask = Some(clock);
        self.answered_cookie = false;
        self.refused = None;
        if self.asks == 1 {
            let masters: Vec<String> = self.masters.iter().map(SocketAddr::to_string).collect();
            info!("{} is silent: asking the master at {} for an introduction", self.server, masters.join(", "));
        }
        let request = Reach::PunchRequest { server: self.server, cookie: None }.padded(REQUEST_BYTES);
        self.masters.iter().map(|m| (*m, request.clone())).collect()
    }

    /// A master's message: what to send back. Only while an ask is out and
    /// the server silent (`heard`: it has answered): a forged challenge gets
    /// at most one answer per ask, and a connected client ignores them all.
    pub fn receive(&mut self, from: SocketAddr, message: Reach, heard: bool) -> Option<(SocketAddr, Vec<u8>)> {
        if heard || self.asks == 0 {
            return None;
        }
        if let Some(relay) = self.relay.as_mut().filter(|r| r.master == from) {
            match message {
                Reach::RelayChallenge { server, cookie } if server == self.server && !relay.answered_cookie => {
                    relay.answered_cookie = true;
                    relay.cookie = Some(cookie.clone());
                    // Before the grant: the request again with the cookie;
                    // after it (the cookie went stale while allocating): the
                    // introduction of the relayed address with the new one.
                    let answer = match relay.relayed {
                        Some(relayed) if !relay.introduced => Reach::RelayIntro { server, relayed, cookie },
                        _ => Reach::RelayRequest { server, cookie: Some(cookie) },
                    };
                    return Some((from, answer.padded(REQUEST_BYTES)));
                }
                Reach::RelayGrant { server, turn, username, password } if server == self.server && !relay.granted => {
                    info!("the master at {from} gave us the relay at {turn}");
                    relay.grant = Some(RelayGrant { turn, username, password, master: from });
                    relay.granted = true;
                    // The next challenge (a stale cookie) is answered too.
                    relay.answered_cookie = false;
                    return None;
                }
                Reach::RelayRefused { server, why } if server == self.server => {
                    info!("the master at {from} refused us its relay: {}", why.as_str());
                    relay.refused = Some(why);
                    return None;
                }
                Reach::PunchStarted { server, nat, .. } if server == self.server && relay.relayed.is_some() => {
                    relay.introduced = true;
                    self.nat = nat;
                    return None;
                }
                _ => {}
            }
        }
        match message {
            Reach::PunchChallenge { server, cookie }
                if server == self.server && !self.started && !self.answered_cookie =>
            {
                self.answered_cookie = true;
                Some((from, Reach::PunchRequest { server, cookie: Some(cookie) }.padded(REQUEST_BYTES)))
            }
            Reach::PunchStarted { server, nat, game_port } if server == self.server => {
                self.answered_by = Some(from);
                if !self.started {
                    info!("the master at {from} introduced us to {server}: waiting for its probes");
                    self.started_at = Some(self.last_ask.unwrap_or_default());
                }
                self.started = true;
                self.nat = nat;
                self.game_port = game_port;
                None
            }
            Reach::PunchRefused { server, why, game_port } if server == self.server => {
                self.answered_by = Some(from);
                self.refused = Some(why);
                self.game_port = game_port;
                None
            }
            _ => None,
        }
    }

    /// Whether a connection silent until `clock` has failed every way.
    pub fn gave_up(&self, clock: Duration) -> bool {
        // A relay under way: granted, or still being asked for (a master
        // that runs none answers at once; one that does not know the
        // request never does).
        let unanswered = self.relay.as_ref().is_some_and(|r| {
            !r.granted
                && r.asks >= MAX_RELAY_ASKS
                && r.last_ask.is_some_and(|t| clock.saturating_sub(t) >= RELAY_ASK_EVERY)
        });
        if self.relaying() && !unanswered {
            return clock >= GIVE_UP_RELAYED_AFTER;
        }
        let relay_said_no =
            self.relay.as_ref().is_some_and(|r| r.refused.is_some() || r.failed.is_some() || r.asks >= MAX_RELAY_ASKS);
        let hopeless = self.refused == Some(Refusal::Symmetric) || self.nat == Nat::Symmetric;
        clock >= GIVE_UP_AFTER
            || (hopeless && (relay_said_no || self.relay.is_none()) && clock >= GIVE_UP_SYMMETRIC_AFTER)
    }

    /// Why joining failed, in words for the player.
    pub fn advice(&self) -> String {
        // The port the host forwards is their game's, which their router
        // may show as another.
        let port = if self.game_port != 0 { self.game_port } else { self.server.port() };
        let server = self.server;
        if let Some(relay) = &self.relay {
            if let Some(why) = &relay.failed {
                return format!(
                    "No way through to {server}: punching cannot cross the routers, and the relay failed: {why}. \
                     The host should forward UDP port {port}, or host on a dedicated server."
                );
            }
            match relay.refused {
                Some(RelayRefusal::Off) | None if !relay.granted => {
                    return format!(
                        "No way through to {server}: punching cannot cross the routers, and the master offers no relay; \
                         the host should forward UDP port {port}, or host on a dedicated server."
                    );
                }
                Some(RelayRefusal::Busy) => {
                    return format!(
                        "No way through to {server}: punching cannot cross the routers, and the master's relay is \
                         busy for your network just now: try again in a few seconds."
                    );
                }
                _ => {}
            }
        }
        match (self.refused, self.nat) {
            (Some(Refusal::Symmetric), _) | (_, Nat::Symmetric) => format!(
                "No way through to {server}: the host's router changes ports per destination; \
                 the host should forward UDP port {port}, or host on a dedicated server."
            ),
            (Some(Refusal::Busy), _) => format!(
                "No answer from {server}, and the master could not introduce us (too many players joining it \
                 just now): try again in a few seconds, or ask the host to forward UDP port {port}."
            ),
            (Some(Refusal::Unlisted), _) => format!(
                "No answer from {server}, and the master does not list it: check the address, \
                 or ask the host to forward UDP port {port} on their router."
            ),
            _ if self.started => format!(
                "No way through to {server}, directly or by hole punching through the master: \
                 one of the two routers changes ports per destination or blocks the probes; \
                 the host should forward UDP port {port}, or host on a dedicated server."
            ),
            _ => format!(
                "No answer from {server}, and no master answered for it: \
                 the host should forward UDP port {port} on their router, or host on a dedicated server."
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_master_is_asked_again_and_nothing_is_answered_before_asking() {
        let server: SocketAddr = "11.0.2.1:27015".parse().unwrap();
        let master: SocketAddr = "11.0.0.1:27950".parse().unwrap();
        let mut intro = Introduction::new(server, &[master]);
        let challenge = Reach::PunchChallenge { server, cookie: "abcdefgh12345678".into() };
        assert_eq!(intro.receive(master, challenge, false), None, "never asked");
        assert_eq!(intro.due(Duration::from_millis(600), false).len(), 1);
        intro.receive(master, Reach::PunchRefused { server, why: Refusal::Busy, game_port: 27015 }, false);
        assert_eq!(intro.due(Duration::from_millis(1700), false).len(), 1, "asked again");
        assert!(intro.advice().contains("27015"));
    }

    #[test]
    fn asks_after_silence_answers_the_cookie_and_stops_once_introduced() {
        let server: SocketAddr = "11.0.2.1:27015".parse().unwrap();
        let master: SocketAddr = "11.0.0.1:27950".parse().unwrap();
        let mut intro = Introduction::new(server, &[master, "[2001:db8::1]:27950".parse().unwrap()]);
        assert!(intro.due(Duration::from_millis(100), false).is_empty());
        assert!(intro.due(Duration::from_millis(600), true).is_empty());
        let asked = intro.due(Duration::from_millis(600), false);
        assert_eq!(asked.len(), 1, "one master of the server's family");
        assert_eq!(Reach::parse(&asked[0].1), Some(Reach::PunchRequest { server, cookie: None }));
        assert!(intro.due(Duration::from_millis(700), false).is_empty(), "not again within a second");
        let cookie = "abcdefgh12345678".to_string();
        let challenge = Reach::PunchChallenge { server, cookie: cookie.clone() };
        assert_eq!(intro.receive(master, challenge.clone(), true), None, "a connected client answers nothing");
        let (to, reply) = intro.receive(master, challenge.clone(), false).unwrap();
        assert_eq!((to, Reach::parse(&reply)), (master, Some(Reach::PunchRequest { server, cookie: Some(cookie) })));
        assert_eq!(intro.receive(master, challenge, false), None, "one answer per ask");
        let started = Reach::PunchStarted { server, nat: Nat::Punchable, game_port: 27015 };
        assert_eq!(intro.receive(master, started, false), None);
        assert!(intro.due(Duration::from_millis(1500), false).is_empty(), "no punch request once introduced");
        assert!(intro.advice().contains("27015"));
        // Punching that got nothing through by PUNCH_FAILS_AFTER: the relay.
        let asked = intro.due(Duration::from_secs(3), false);
        assert_eq!(asked.len(), 1);
        assert_eq!(Reach::parse(&asked[0].1), Some(Reach::RelayRequest { server, cookie: None }));

        let mut intro = Introduction::new(server, &[master]);
        intro.due(Duration::from_millis(600), false);
        intro.receive(master, Reach::PunchRefused { server, why: Refusal::Symmetric, game_port: 27016 }, false);
        assert!(intro.advice().contains("changes ports per destination; the host should forward UDP port 27016"));
    }

    #[test]
    fn a_hopeless_punch_asks_for_the_relay_and_introduces_the_relayed_address() {
        let server: SocketAddr = "11.0.3.1:27015".parse().unwrap();
        let master: SocketAddr = "11.0.0.1:27950".parse().unwrap();
        let mut intro = Introduction::new(server, &[master]);
        intro.due(Duration::from_millis(600), false);
        intro.receive(master, Reach::PunchRefused { server, why: Refusal::Symmetric, game_port: 27015 }, false);
        // At once, not after PUNCH_FAILS_AFTER: nothing will come through.
        let asked = intro.due(Duration::from_millis(700), false);
        assert_eq!(asked, vec![(master, Reach::RelayRequest { server, cookie: None }.padded(REQUEST_BYTES))]);
        assert!(!intro.gave_up(Duration::from_millis(2500)), "not while the relay is asked for");
        let cookie = "abcdefgh12345678".to_string();
        let (to, reply) =
            intro.receive(master, Reach::RelayChallenge { server, cookie: cookie.clone() }, false).expect("answered");
        assert_eq!(
            (to, Reach::parse(&reply)),
            (master, Some(Reach::RelayRequest { server, cookie: Some(cookie.clone()) }))
        );
        let turn: SocketAddr = "11.0.0.3:3478".parse().unwrap();
        let grant = Reach::RelayGrant {
            server,
            turn,
            username: "1800000600:11.0.9.1".into(),
            password: "q7uTmiJ3tbEVq2aD3Ri9hDEHaSs=".into(),
        };
        // A grant for another server is not taken.
        let other = Reach::RelayGrant {
            server: "11.0.4.1:27015".parse().unwrap(),
            turn,
            username: "1800000600:11.0.9.1".into(),
            password: "q7uTmiJ3tbEVq2aD3Ri9hDEHaSs=".into(),
        };
        intro.receive(master, other, false);
        assert_eq!(intro.take_grant(), None);
        intro.receive(master, grant, false);
        let taken = intro.take_grant().expect("granted");
        assert_eq!((taken.turn, taken.master), (turn, master));
        assert_eq!(intro.take_grant(), None, "taken once");
        assert!(intro.due(Duration::from_millis(1500), false).is_empty(), "granted: asked no more");
        let relayed: SocketAddr = "11.0.0.3:50001".parse().unwrap();
        let (to, intro_request) = intro.relayed(relayed, master).expect("introduced");
        assert_eq!((to, Reach::parse(&intro_request)), (master, Some(Reach::RelayIntro { server, relayed, cookie })));
        intro.receive(master, Reach::PunchStarted { server, nat: Nat::Symmetric, game_port: 27015 }, false);
        assert!(!intro.gave_up(Duration::from_millis(6900)));
        assert!(intro.gave_up(Duration::from_millis(7000)), "gives up in the end");
        intro.relay_failed("the relay at 11.0.0.3:3478 did not answer within 3 s".into());
        assert!(
            intro.advice().contains("the relay failed: the relay at 11.0.0.3:3478 did not answer"),
            "{}",
            intro.advice()
        );
    }

    #[test]
    fn a_master_without_a_relay_leaves_the_advice_at_once() {
        let server: SocketAddr = "11.0.3.1:27015".parse().unwrap();
        let master: SocketAddr = "11.0.0.1:27950".parse().unwrap();
        let mut intro = Introduction::new(server, &[master]);
        intro.due(Duration::from_millis(600), false);
        intro.receive(master, Reach::PunchRefused { server, why: Refusal::Symmetric, game_port: 27015 }, false);
        intro.due(Duration::from_millis(700), false);
        intro.receive(master, Reach::RelayRefused { server, why: RelayRefusal::Off }, false);
        assert!(intro.gave_up(Duration::from_millis(2000)));
        assert!(intro.advice().contains("the master offers no relay; the host should forward UDP port 27015"));
    }
}
