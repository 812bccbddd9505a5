//! The master's relay desk (see `reach.rs` for the messages): TURN REST
//! credentials for a player who proved its address and asked to join a
//! listed server that strangers cannot reach, budgeted per network; the
//! relayed address such a player then holds introduced to the server; and
//! the set of listed servers' addresses, which the TURN server is told to
//! admit as its only peers (so that it relays to nobody else).
//!
//! Credentials are named after the player's network (`EXPIRY:NETWORK`: an
//! IPv4 address, or the IPv6 /56 the budgets count by), so that coturn's
//! `--user-quota` caps the allocations one network holds: named after each
//! address, 50 addresses of one /64 could take all of `--total-quota`
//! (issue 60). The relay's own addresses, the TURN server's and the
//! master's are never peers, even when a game server is listed from them.

use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::Master;
use crate::budget::{NetworkBudget, Rate, Rates};
use crate::reach::{Nat, Reach, RelayRefusal};

/// Credentials for one server: per network (an IPv4 address or an IPv6
/// /56) and per address (an IPv6 /64) a burst of 4, then one every 2 s (a
/// player needs one per join; a house of friends joining at once, a few);
/// in all, twice the introductions a server takes.
const GRANT_RATES: Rates = Rates {
    target: Rate { per_s: 16.0, burst: 32.0 },
    network: Rate { per_s: 0.5, burst: 4.0 },
    address: Rate { per_s: 0.5, burst: 4.0 },
};
/// Servers, and (server, network) pairs, whose budgets are remembered.
const MAX_GRANT_SERVERS: usize = 4096;
const MAX_GRANT_CLIENTS: usize = 16_384;
/// How often the set of peers the relay admits is worked out again.
const PEERS_EVERY: Duration = Duration::from_secs(1);
/// How long after a server's address went to the relay's database the
/// relay is taken to admit it (coturn reads the table again every few
/// seconds: about 3 s seen here): until then its players are told "busy"
/// and ask again, rather than being refused by the relay for good.
const PEER_SETTLES_AFTER: Duration = Duration::from_secs(4);

/// Where a master's players find the relay, and how its credentials are made.
#[derive(Clone)]
pub struct RelayConfig {
    /// The TURN server's address, as players reach it.
    pub turn: SocketAddr,
    /// The addresses its relayed addresses are on (coturn's `relay-ip`;
    /// at least the TURN server's own), and their ports (coturn's
    /// `min-port`-`max-port`).
    pub relay_ips: Vec<IpAddr>,
    pub relay_ports: std::ops::RangeInclusive<u16>,
    /// coturn's `static-auth-secret`.
    pub secret: Vec<u8>,
    /// The master's own addresses (its bind and probe addresses, and any
    /// the operator names): never the relay's peers.
    pub own_ips: Vec<IpAddr>,
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
            .field("relay_ports", &self.relay_ports)
            .field("credential_lifetime", &self.credential_lifetime)
            .finish_non_exhaustive()
    }
}

/// Where the set of peers the relay admits goes whenever it changes (the
/// master's binary writes it into the TURN server's database).
pub type RelayPeersSink = Box<dyn FnMut(&BTreeSet<IpAddr>) + Send>;

/// The desk's state: budgets per network, and the peers last worked out.
pub(super) struct RelayDesk {
    /// Credentials per server, per network and per address.
    pub(super) budget: NetworkBudget<SocketAddr>,
    /// The listed servers' addresses as last handed to the relay, and when.
    peers: BTreeSet<IpAddr>,
    peers_at: Option<Duration>,
    /// When each of them went to the sink (bounded by the list: a listed
    /// server's address each).
    published_at: HashMap<IpAddr, Duration>,
    sink: Option<RelayPeersSink>,
}

impl std::fmt::Debug for RelayDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayDesk").field("budget", &self.budget).field("peers", &self.peers).finish_non_exhaustive()
    }
}

impl RelayDesk {
    /// Whether the relay admits `ip` by now (its row has had time to be read).
    fn admits(&self, ip: IpAddr, now: Duration) -> bool {
        self.published_at.get(&ip).is_some_and(|&at| now.saturating_sub(at) >= PEER_SETTLES_AFTER)
    }
}

impl Default for RelayDesk {
    fn default() -> Self {
        Self {
            budget: NetworkBudget::new(GRANT_RATES, MAX_GRANT_SERVERS, MAX_GRANT_CLIENTS),
            peers: BTreeSet::new(),
            peers_at: None,
            published_at: HashMap::new(),
            sink: None,
        }
    }
}

impl Master {
    /// Whether `ip` is the TURN server's, one of the relay's or one of the
    /// master's own (its probe address among them).
    fn is_own_ip(&self, ip: IpAddr) -> bool {
        let ip = arena_udp::canonical(SocketAddr::new(ip, 0)).ip();
        self.probe_ip == Some(ip)
            || self.config.relay.as_ref().is_some_and(|r| {
                arena_udp::canonical(r.turn).ip() == ip || r.relay_ips.contains(&ip) || r.own_ips.contains(&ip)
            })
    }

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
        let challenge = |server, cookie| Reach::RelayChallenge { server, cookie };
        if !self.proved(from, server, cookie.as_deref(), now, out, challenge) {
            return;
        }
        let answer = match (&self.config.relay, self.listed.get(&server)) {
            (None, _) => Err(RelayRefusal::Off),
            (_, None) => Err(RelayRefusal::Unlisted),
            (_, Some(listing)) if listing.intro_key.is_none() => Err(RelayRefusal::Unlisted),
            // "Open" is trusted only from a check made from a second
            // address (`--probe-bind`): from the master's own, a router
            // that admits any port of an address it has talked to passes
            // it, and its players would be refused the relay they need.
            (_, Some(listing)) if listing.nat == Nat::Open && self.probe_ip.is_some() => Err(RelayRefusal::Open),
            // Not admitted by the relay yet (see PEER_SETTLES_AFTER).
            // A server on the relay's or the master's own host is never a
            // peer: its players would reach those services through the relay.
            (Some(_), Some(_)) if self.is_own_ip(server.ip()) => Err(RelayRefusal::Unlisted),
            (Some(_), Some(_)) if self.relay.sink.is_some() && !self.relay.admits(server.ip(), now) => {
                Err(RelayRefusal::Busy)
            }
            (Some(_), Some(_)) if !self.relay.budget.allow(server, from.ip(), now) => Err(RelayRefusal::Busy),
            (Some(relay), Some(_)) => {
                let expires = (relay.started_unix + now + relay.credential_lifetime).as_secs();
                let name = crate::budget::network_key(arena_udp::canonical(from).ip()).to_string();
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
        let challenge = |server, cookie| Reach::RelayChallenge { server, cookie };
        if !self.proved(from, server, Some(cookie), now, out, challenge) {
            return;
        }
        // Only an address on the master's own relay: anything else would
        // make the server probe whatever a player names.
        let on_relay = self
            .config
            .relay
            .as_ref()
            .is_some_and(|r| r.relay_ips.contains(&relayed.ip()) && r.relay_ports.contains(&relayed.port()));
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
        } else if self.introductions.allow_charged(from.ip(), relayed, server, now) {
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
        let peers: BTreeSet<IpAddr> = self
            .listed
            .iter()
            .filter(|(_, l)| l.intro_key.is_some())
            .map(|(addr, _)| addr.ip())
            .filter(|ip| !self.is_own_ip(*ip))
            .collect();
        if !first && peers == self.relay.peers {
            return;
        }
        self.relay.published_at.retain(|ip, _| peers.contains(ip));
        for ip in &peers {
            self.relay.published_at.entry(*ip).or_insert(now);
        }
        self.relay.peers = peers;
        if let Some(sink) = self.relay.sink.as_mut() {
            sink(&self.relay.peers);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::reach::{INTRO_KEY, NAT_KEY};
    use crate::table::MasterConfig;
    use crate::wire::{self, InfoString};

    type Out = Vec<(SocketAddr, Vec<u8>)>;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("an address")
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an IP address")
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    const TURN: &str = "11.0.0.3:3478";
    const KEY: &str = "serverkey1234567";

    fn master(relay: bool) -> Master {
        let relay = relay.then(|| RelayConfig {
            turn: addr(TURN),
            relay_ips: vec![addr(TURN).ip()],
            relay_ports: 50000..=50999,
            secret: b"the secret".to_vec(),
            own_ips: vec![ip("11.0.0.1")],
            credential_lifetime: Duration::from_secs(600),
            started_unix: Duration::from_secs(1_800_000_000),
        });
        Master::new(MasterConfig { relay, ..MasterConfig::default() })
    }

    /// Lists `server` with an introduction key and its router's kind.
    fn register(m: &mut Master, server: SocketAddr, nat: &str, now: Duration) {
        let mut out = Vec::new();
        m.receive(server, &wire::heartbeat(), now, &mut out);
        let challenge = out
            .iter()
            .filter(|(to, _)| *to == server)
            .find_map(|(_, d)| wire::parse_getinfo(d).ok()?.challenge)
            .expect("a challenge");
        let pairs: Vec<(String, String)> = [
            ("challenge", challenge.as_str()),
            ("gamename", wire::GAME),
            ("protocol", "12"),
            ("clients", "1"),
            ("sv_maxclients", "8"),
            (INTRO_KEY, KEY),
            (NAT_KEY, nat),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let info = wire::info_response(&InfoString::new(pairs).expect("valid")).expect("fits");
        m.receive(server, &info, now + ms(1), &mut out);
        assert!(m.listed().any(|(a, _)| *a == server), "listed");
    }

    /// A client's relay request with the cookie dance; the master's answer.
    fn ask(m: &mut Master, client: SocketAddr, server: SocketAddr, now: Duration) -> (Option<Reach>, String) {
        let mut out: Out = Vec::new();
        m.receive(client, &Reach::RelayRequest { server, cookie: None }.padded(160), now, &mut out);
        let Some(Reach::RelayChallenge { cookie, .. }) = Reach::parse(&out[0].1) else { panic!("{out:?}") };
        out.clear();
        m.receive(client, &Reach::RelayRequest { server, cookie: Some(cookie.clone()) }.padded(160), now, &mut out);
        (out.iter().filter(|(to, _)| *to == client).find_map(|(_, d)| Reach::parse(d)), cookie)
    }

    #[test]
    fn credentials_go_only_for_a_listed_server_strangers_cannot_reach() {
        let symmetric = addr("11.0.3.1:27015");
        let open = addr("11.0.1.1:27015");
        let unlisted = addr("11.0.5.1:27015");
        let client = addr("11.0.9.1:40000");
        let mut m = master(true);
        register(&mut m, symmetric, "symmetric", ms(10));
        register(&mut m, open, "open", ms(10));
        let (answer, _) = ask(&mut m, client, symmetric, ms(100));
        let Some(Reach::RelayGrant { server, turn, username, password }) = answer else { panic!("{answer:?}") };
        assert_eq!((server, turn), (symmetric, addr(TURN)));
        // Named after the client's address, good for the lifetime.
        assert_eq!(username, format!("{}:11.0.9.1", 1_800_000_000 + 600));
        assert_eq!(arena_turn::rest_credentials(b"the secret", 1_800_000_600, "11.0.9.1").password, password);
        assert!(
            matches!(ask(&mut m, client, open, ms(100)).0, Some(Reach::RelayGrant { .. })),
            "open by a one-address check only: granted"
        );
        m.set_probe_addr("11.0.0.100:27951".parse().expect("an address"));
        assert_eq!(
            ask(&mut m, client, open, ms(100)).0,
            Some(Reach::RelayRefused { server: open, why: RelayRefusal::Open }),
            "open by a check from a second address: no relay needed"
        );
        assert_eq!(
            ask(&mut m, client, unlisted, ms(100)).0,
            Some(Reach::RelayRefused { server: unlisted, why: RelayRefusal::Unlisted })
        );
        let mut without = master(false);
        register(&mut without, symmetric, "symmetric", ms(10));
        assert_eq!(
            ask(&mut without, client, symmetric, ms(100)).0,
            Some(Reach::RelayRefused { server: symmetric, why: RelayRefusal::Off })
        );
        // A forged request (a cookie never seen) gets a challenge, never credentials.
        let mut out: Out = Vec::new();
        let forged = Reach::RelayRequest { server: symmetric, cookie: Some("abcdefgh12345678abcdefgh".into()) };
        m.receive(addr("11.0.7.7:1"), &forged.padded(160), ms(200), &mut out);
        assert!(matches!(Reach::parse(&out[0].1), Some(Reach::RelayChallenge { .. })), "{out:?}");
        assert_eq!(m.counters().relay_grants, 2);
    }

    #[test]
    fn one_network_spends_only_its_own_budget_of_credentials() {
        let server = addr("11.0.3.1:27015");
        let mut m = master(true);
        register(&mut m, server, "symmetric", ms(10));
        let mut granted = 0;
        let mut names = BTreeSet::new();
        for port in 0..300u16 {
            let client = SocketAddr::new(format!("2a00:9::{port:x}").parse().expect("v6"), 40000);
            if let Some(Reach::RelayGrant { username, .. }) = ask(&mut m, client, server, ms(100)).0 {
                granted += 1;
                names.insert(username.split_once(':').map(|(_, name)| name.to_string()).expect("EXPIRY:NAME"));
            }
        }
        assert_eq!(granted, GRANT_RATES.network.burst as usize, "one /56: its burst, then busy");
        // Issue 60: named after each address, one network's credentials
        // escaped coturn's user-quota; named after the network, they share it.
        assert_eq!(names, BTreeSet::from(["2a00:9::".to_string()]));
        if let Some(Reach::RelayGrant { username, .. }) = ask(&mut m, addr("[2a00:9:0:1::5]:4"), server, ms(2200)).0 {
            assert!(username.ends_with(":2a00:9::"), "another /64 of the same /56: {username}");
        } else {
            panic!("no grant after the refill");
        }
        let v4 = ask(&mut m, addr("11.0.9.2:40000"), server, ms(2300)).0;
        assert!(matches!(&v4, Some(Reach::RelayGrant { username, .. }) if username.ends_with(":11.0.9.2")), "{v4:?}");
        let elsewhere = addr("11.0.9.1:40000");
        assert!(matches!(ask(&mut m, elsewhere, server, ms(100)).0, Some(Reach::RelayGrant { .. })));
        assert!(
            matches!(ask(&mut m, addr("[2a00:9::1]:40000"), server, ms(4400)).0, Some(Reach::RelayGrant { .. })),
            "refilled after 2 s"
        );
    }

    /// Issue 60: a game server listed from the relay's host, the TURN
    /// server's or the master's made that host a peer, so the relay would
    /// carry players' datagrams to every port of it. Never now: those are
    /// not published, and their players are refused the relay.
    #[test]
    fn the_relay_admits_neither_its_own_nor_the_masters_address() {
        let mut m = master(true);
        m.set_probe_addr(addr("11.0.0.100:27951"));
        let seen: Arc<Mutex<Vec<Vec<IpAddr>>>> = Arc::default();
        let sink = seen.clone();
        m.set_relay_peers_sink(Box::new(move |peers| sink.lock().unwrap().push(peers.iter().copied().collect())));
        m.expire(ms(1));
        let own = ["11.0.0.3:27015", "11.0.0.1:27015", "11.0.0.100:27015"].map(addr);
        let stranger = addr("11.0.3.1:27015");
        for server in own.iter().chain([&stranger]) {
            register(&mut m, *server, "symmetric", ms(10));
        }
        m.expire(ms(1200));
        assert_eq!(seen.lock().unwrap().last(), Some(&vec![stranger.ip()]), "only the stranger is a peer");
        for server in own {
            assert_eq!(
                ask(&mut m, addr("11.0.9.1:40000"), server, ms(6000)).0,
                Some(Reach::RelayRefused { server, why: RelayRefusal::Unlisted }),
                "{server}"
            );
        }
    }

    #[test]
    fn only_an_address_on_the_relay_is_introduced_and_the_relay_learns_the_listed_servers() {
        let server = addr("11.0.3.1:27015");
        let client = addr("11.0.9.1:40000");
        let mut m = master(true);
        let seen: Arc<Mutex<Vec<Vec<IpAddr>>>> = Arc::default();
        let sink = seen.clone();
        m.set_relay_peers_sink(Box::new(move |peers| sink.lock().unwrap().push(peers.iter().copied().collect())));
        m.expire(ms(1));
        register(&mut m, server, "symmetric", ms(10));
        let (_, cookie) = ask(&mut m, client, server, ms(100));
        let mut out: Out = Vec::new();
        let elsewhere = Reach::RelayIntro { server, relayed: addr("11.0.0.66:50001"), cookie: cookie.clone() };
        m.receive(client, &elsewhere.padded(160), ms(150), &mut out);
        assert!(out.is_empty(), "an address off the relay is not introduced: {out:?}");
        let relayed = addr("11.0.0.3:50001");
        m.receive(client, &Reach::RelayIntro { server, relayed, cookie }.padded(160), ms(150), &mut out);
        let sent: Vec<(SocketAddr, Option<Reach>)> = out.iter().map(|(to, d)| (*to, Reach::parse(d))).collect();
        assert!(
            sent.contains(&(server, Some(Reach::PunchIntroRelayed { client: relayed, key: KEY.into() }))),
            "{sent:?}"
        );
        assert!(sent.iter().any(|(to, r)| *to == client && matches!(r, Some(Reach::PunchStarted { .. }))));
        m.expire(ms(500));
        m.expire(ms(1200));
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, vec![vec![], vec![server.ip()]], "empty at start, then the listed server, once");
        // Credentials only once the relay has had time to read its row.
        let other_client = addr("11.0.8.1:40000");
        assert_eq!(
            ask(&mut m, other_client, server, ms(2000)).0,
            Some(Reach::RelayRefused { server, why: RelayRefusal::Busy })
        );
        assert!(matches!(ask(&mut m, other_client, server, ms(5300)).0, Some(Reach::RelayGrant { .. })));
        // A port of the relay's address outside its relayed ports (the
        // master's own, the TURN port): not introduced.
        let (_, cookie) = ask(&mut m, client, server, ms(5400));
        out.clear();
        let off_range = Reach::RelayIntro { server, relayed: addr("11.0.0.3:3478"), cookie };
        m.receive(client, &off_range.padded(160), ms(5400), &mut out);
        assert!(
            !out.iter().any(|(to, _)| *to == server),
            "a port outside the relay's range is not introduced: {out:?}"
        );
    }
}
