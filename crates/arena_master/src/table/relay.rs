//! The master's relay desk (see `reach.rs` for the messages): TURN REST
//! credentials for a player who proved its address and asked to join a
//! listed server that strangers cannot reach, budgeted per network; the
//! relayed address such a player then holds introduced to the server; and
//! the set of listed servers' addresses, which the TURN server is told to
//! admit as its only peers (so that it relays to nobody else).
//!
//! Credentials are named after the player's IP address (`EXPIRY:ADDRESS`),
//! so that coturn's `--user-quota` caps the allocations one address holds.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arena_udp::limit_key;

use super::Master;
use crate::reach::{Nat, Reach, RelayRefusal};

/// Credentials a network (an IPv4 address or an IPv6 /64) may be given:
/// this many a second, in bursts of [`GRANT_BURST`]. A player needs one
/// per join; a house of friends joining at once needs a few.
const GRANTS_PER_S: f64 = 0.5;
const GRANT_BURST: f64 = 4.0;
/// Networks whose budget is remembered, at most (a full budget is the same
/// as none, so the fullest make room).
const MAX_GRANT_BUDGETS: usize = 16_384;
/// How often the set of peers the relay admits is worked out again.
const PEERS_EVERY: Duration = Duration::from_secs(1);

/// Where a master's players find the relay, and how its credentials are made.
#[derive(Clone)]
pub struct RelayConfig {
    /// The TURN server's address, as players reach it.
    pub turn: SocketAddr,
    /// The addresses its relayed addresses are on (coturn's `relay-ip`;
    /// at least the TURN server's own).
    pub relay_ips: Vec<IpAddr>,
    /// coturn's `static-auth-secret`.
    pub secret: Vec<u8>,
    /// How long credentials may start an allocation.
    pub credential_lifetime: Duration,
    /// The Unix time the master's clock (`now`) counts from.
    pub started_unix: Duration,
}

impl std::fmt::Debug for RelayConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret, not even in a debug line.
        f.debug_struct("RelayConfig")
            .field("turn", &self.turn)
            .field("relay_ips", &self.relay_ips)
            .field("credential_lifetime", &self.credential_lifetime)
            .finish_non_exhaustive()
    }
}

/// Where the set of peers the relay admits goes whenever it changes (the
/// master's binary writes it into the TURN server's database).
pub type RelayPeersSink = Box<dyn FnMut(&BTreeSet<IpAddr>) + Send>;

/// The desk's state: budgets per network, and the peers last worked out.
#[derive(Default)]
pub(super) struct RelayDesk {
    /// Per network: credentials left and when they were counted.
    budgets: HashMap<IpAddr, (f64, Duration)>,
    /// The listed servers' addresses as last handed to the relay, and when.
    peers: BTreeSet<IpAddr>,
    peers_at: Option<Duration>,
    sink: Option<RelayPeersSink>,
}

impl std::fmt::Debug for RelayDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayDesk")
            .field("budgets", &self.budgets.len())
            .field("peers", &self.peers)
            .finish_non_exhaustive()
    }
}

impl RelayDesk {
    /// Whether `client`'s network may have credentials now (spends one).
    fn allow(&mut self, client: IpAddr, now: Duration) -> bool {
        let key = limit_key(client);
        if !self.budgets.contains_key(&key) && self.budgets.len() >= MAX_GRANT_BUDGETS {
            // Full budgets are the same as none: they go first.
            self.budgets.retain(|_, (tokens, at)| {
                *tokens + now.saturating_sub(*at).as_secs_f64() * GRANTS_PER_S < GRANT_BURST
            });
            if self.budgets.len() >= MAX_GRANT_BUDGETS {
                return false;
            }
        }
        let (tokens, at) = self.budgets.entry(key).or_insert((GRANT_BURST, now));
        *tokens = (*tokens + now.saturating_sub(*at).as_secs_f64() * GRANTS_PER_S).min(GRANT_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Master {
    /// A `relayRequest`: a challenge first (the cookie proves the player's
    /// address, which the credentials are named after), then credentials
    /// or the reason there are none.
    pub(super) fn relay_request(
        &mut self,
        from: SocketAddr,
        server: SocketAddr,
        cookie: Option<String>,
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        let good = cookie.is_some_and(|c| self.introductions.cookie_good(from, server, &c, now));
        if !good {
            let cookie = self.introductions.cookie(from, server, now);
            if self.reply(from, Reach::RelayChallenge { server, cookie }.encode(), out) {
                self.counters.cookies += 1;
            }
            return;
        }
        let answer = match (&self.config.relay, self.listed.get(&server)) {
            (None, _) => Err(RelayRefusal::Off),
            (_, None) => Err(RelayRefusal::Unlisted),
            (_, Some(listing)) if listing.intro_key.is_none() => Err(RelayRefusal::Unlisted),
            (_, Some(listing)) if listing.nat == Nat::Open => Err(RelayRefusal::Open),
            (Some(_), Some(_)) if !self.relay.allow(from.ip(), now) => Err(RelayRefusal::Busy),
            (Some(relay), Some(_)) => {
                let expires = (relay.started_unix + now + relay.credential_lifetime).as_secs();
                let name = from.ip().to_string();
                let credentials = arena_turn::rest_credentials(&relay.secret, expires, &name);
                Ok(Reach::RelayGrant {
                    server,
                    turn: relay.turn,
                    username: credentials.username,
                    password: credentials.password,
                })
            }
        };
        let answer = match answer {
            Ok(grant) => {
                self.counters.relay_grants += 1;
                grant
            }
            Err(why) => Reach::RelayRefused { server, why },
        };
        self.reply(from, answer.encode(), out);
    }

    /// A `relayIntro`: the player, its address proved by the cookie, holds
    /// `relayed` on the master's relay; the server is told to probe it.
    pub(super) fn relay_intro(
        &mut self,
        from: SocketAddr,
        server: SocketAddr,
        relayed: SocketAddr,
        cookie: &str,
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        if !self.introductions.cookie_good(from, server, cookie, now) {
            let cookie = self.introductions.cookie(from, server, now);
            if self.reply(from, Reach::RelayChallenge { server, cookie }.encode(), out) {
                self.counters.cookies += 1;
            }
            return;
        }
        // Only an address on the master's own relay: anything else would
        // make the server probe whatever a player names.
        let on_relay = self.config.relay.as_ref().is_some_and(|r| r.relay_ips.contains(&relayed.ip()));
        if !on_relay {
            self.counters.drop("relayed address not on the relay");
            return;
        }
        let game_port = self.listed.get(&server).map_or(0, |l| l.game_port);
        let Some((key, nat)) = self.listed.get(&server).and_then(|l| l.intro_key.clone().map(|k| (k, l.nat))) else {
            let refused = Reach::PunchRefused { server, why: crate::reach::Refusal::Unlisted, game_port };
            self.reply(from, refused.encode(), out);
            return;
        };
        let answer = if self.introductions.introduced_lately(relayed, server, now) {
            Reach::PunchStarted { server, nat, game_port }
        } else if self.introductions.allow(server, now) {
            let intro = Reach::PunchIntroRelayed { client: relayed, key }.encode();
            self.counters.bytes_out += intro.len() as u64;
            self.counters.introductions += 1;
            out.push((server, intro));
            Reach::PunchStarted { server, nat, game_port }
        } else {
            Reach::PunchRefused { server, why: crate::reach::Refusal::Busy, game_port }
        };
        self.reply(from, answer.encode(), out);
    }

    /// Where the addresses of the listed Arena servers go whenever they
    /// change (the first time at once): the only peers the relay is to admit.
    pub fn set_relay_peers_sink(&mut self, sink: RelayPeersSink) {
        self.relay.sink = Some(sink);
        self.relay.peers_at = None;
    }

    /// Hands the sink the listed servers' addresses if they changed (looked
    /// at no more than once every [`PEERS_EVERY`]).
    pub(super) fn publish_relay_peers(&mut self, now: Duration) {
        if self.relay.sink.is_none() || self.relay.peers_at.is_some_and(|t| now.saturating_sub(t) < PEERS_EVERY) {
            return;
        }
        let first = self.relay.peers_at.is_none();
        self.relay.peers_at = Some(now);
        let peers: BTreeSet<IpAddr> =
            self.listed.iter().filter(|(_, l)| l.intro_key.is_some()).map(|(addr, _)| addr.ip()).collect();
        if !first && peers == self.relay.peers {
            return;
        }
        self.relay.peers = peers;
        if let Some(sink) = self.relay.sink.as_mut() {
            sink(&self.relay.peers);
        }
    }
}
