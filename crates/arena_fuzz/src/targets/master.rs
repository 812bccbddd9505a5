//! Fuzz targets of the internet master: every datagram a master receives
//! (with the invariants it must keep: no reply over 1400 bytes, never more
//! bytes to an address than it sent, tables within their caps), a game
//! server's `getinfo` handling (the guard's verdict and the answer's size),
//! and a client's reading of master replies.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arena_client::browser::ServerBrowser;
use arena_master::reach::Reach;
use arena_master::wire::{self, InfoString, ServerQuery};
use arena_master::{Master, MasterConfig};
use arena_udp::limit_key;
use arena_udp::{INTRODUCTION_BURST, INTRODUCTIONS_PER_S};

use crate::target::Target;

/// A master with small caps (so that inputs reach them), fed each input
/// from one of a few addresses, time moving on; a few real servers keep
/// registering so that lists are not empty.
pub struct MasterReceives {
    master: Master,
    now_ms: u64,
    sent_to: HashMap<IpAddr, u64>,
    received_from: HashMap<IpAddr, u64>,
    /// Introductions sent to each server.
    introduced: HashMap<SocketAddr, u64>,
    out: Vec<(SocketAddr, Vec<u8>)>,
}

fn small_config() -> MasterConfig {
    MasterConfig {
        max_servers: 64,
        max_servers_per_address: 8,
        max_pending: 64,
        max_tracked_addresses: 256,
        // A relay, so that credentials and relayed introductions go out too.
        relay: Some(arena_master::RelayConfig {
            turn: SocketAddr::from(([198, 51, 100, 200], 3478)),
            relay_ips: vec![std::net::IpAddr::from([198, 51, 100, 200])],
            relay_ports: 50000..=50999,
            secret: b"fuzz".to_vec(),
            own_ips: Vec::new(),
            credential_lifetime: Duration::from_secs(600),
            started_unix: Duration::from_secs(1_800_000_000),
        }),
        ..MasterConfig::default()
    }
}

impl Default for MasterReceives {
    fn default() -> Self {
        let mut master = Master::new(small_config());
        master.set_probe_port(27951);
        Self {
            master,
            now_ms: 0,
            sent_to: HashMap::new(),
            received_from: HashMap::new(),
            introduced: HashMap::new(),
            out: Vec::new(),
        }
    }
}

/// The query Arena's browser sends.
fn arena_query() -> ServerQuery {
    ServerQuery::everything(wire::GAME, arena_protocol::PROTOCOL_VERSION as i64)
}

fn info(challenge: &str, maxclients: &str) -> Vec<u8> {
    let pairs = [
        ("challenge", challenge),
        ("gamename", wire::GAME),
        ("protocol", "12"),
        ("clients", "3"),
        ("sv_maxclients", maxclients),
        ("hostname", "Fuzz"),
        (arena_master::reach::INTRO_KEY, "fuzzkey123456789"),
        (arena_master::reach::NAT_KEY, "punchable"),
    ];
    let info = InfoString::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .expect("a valid infostring");
    wire::info_response(&info).expect("fits")
}

impl MasterReceives {
    fn feed(&mut self, from: SocketAddr, datagram: &[u8]) {
        self.feed_on(from, datagram, false);
    }

    /// A datagram to the master's main socket, or to its probe socket.
    fn feed_on(&mut self, from: SocketAddr, datagram: &[u8], probe_socket: bool) {
        self.now_ms += 13;
        let now = Duration::from_millis(self.now_ms);
        *self.received_from.entry(limit_key(from.ip())).or_default() += datagram.len() as u64;
        self.out.clear();
        if probe_socket {
            self.master.receive_on_probe_socket(from, datagram, now, &mut self.out);
        } else {
            self.master.receive(from, datagram, now, &mut self.out);
        }
        self.out.extend(self.master.take_probe_datagrams());
        for (to, reply) in &self.out {
            assert!(reply.len() <= wire::MAX_DATAGRAM_BYTES, "a reply of {} bytes", reply.len());
            if let Some(Reach::PunchIntro { .. } | Reach::PunchIntroRelayed { .. }) = Reach::parse(reply) {
                // Introductions go to listed servers (which asked for
                // them by listing), within each one's budget.
                let n = self.introduced.entry(*to).or_default();
                *n += 1;
                let budget = INTRODUCTION_BURST + now.as_secs_f64() * INTRODUCTIONS_PER_S + 1.0;
                assert!((*n as f64) <= budget, "{n} introductions to {to} by {now:?}");
                assert!(self.master.listed().any(|(a, _)| a == to), "an introduction to {to}, not listed");
                continue;
            }
            let key = limit_key(to.ip());
            let sent = self.sent_to.entry(key).or_default();
            *sent += reply.len() as u64;
            let received = self.received_from.get(&key).copied().unwrap_or(0);
            assert!(*sent <= received, "{sent} bytes to {key} which sent {received}");
        }
        self.master.expire(now);
        assert!(self.master.listed().count() <= 64);
        assert!(self.master.pending() <= 64);
    }
}

impl Target for MasterReceives {
    fn name(&self) -> &'static str {
        "master_receives"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut query = arena_query();
        let mut seeds = vec![wire::heartbeat(), wire::get_servers(&query, 0), wire::get_servers(&query, 300)];
        query.extended = false;
        seeds.push(wire::get_servers(&query, 0));
        seeds.push(info("abcdefgh", "16"));
        seeds.push(info("abcdefgh", "0"));
        seeds.push(b"\xFF\xFF\xFF\xFFgetservers 68 empty full".to_vec());
        seeds.push(b"\xFF\xFF\xFF\xFFgetserversExt Arena 12 ipv6 gametype=ffa ffa tourney".to_vec());
        seeds.push(wire::heartbeat_with_nonce("heartbeat1234567"));
        seeds.push(b"\xFF\xFF\xFF\xFFheartbeat DarkPlaces\nnonce \nnonce abc".to_vec());
        seeds.push(wire::get_servers(&ServerQuery { refresh: Some("refresh123456789".into()), ..arena_query() }, 600));
        let server = SocketAddr::from(([198, 51, 100, 1], 27015));
        // Padded as clients pad them: a master answers no address with more
        // bytes than it sent.
        seeds.push(Reach::Check { nonce: "abcdefgh12345678".into() }.padded(200));
        seeds.push(Reach::WhoAmI { nonce: "abcdefgh12345678".into() }.padded(200));
        seeds.push(Reach::PunchRequest { server, cookie: None }.padded(200));
        seeds.push(Reach::PunchRequest { server, cookie: Some("0123456789abcdef01234567".into()) }.padded(200));
        seeds.push(Reach::RelayRequest { server, cookie: None }.padded(200));
        let relayed = SocketAddr::from(([198, 51, 100, 200], 50001));
        seeds.push(Reach::RelayIntro { server, relayed, cookie: "0123456789abcdef01234567".into() }.padded(200));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        // The input from one of four addresses (two families, one mapped).
        let first = input.first().copied().unwrap_or(0);
        let from: SocketAddr = match first % 4 {
            0 => SocketAddr::from(([192, 0, 2, 1], 27015)),
            1 => SocketAddr::from(([192, 0, 2, 2], 27016)),
            2 => "[2001:db8::1]:27015".parse().expect("address"),
            _ => "[::ffff:192.0.2.1]:27015".parse().expect("address"),
        };
        // Now and then to the probe socket (the first byte of a real
        // datagram is always 0xFF: the length chooses).
        self.feed_on(from, input, input.len() % 5 == 3);
        // A request for an introduction with the cookie the master gave,
        // now and then, so that introductions go out.
        match self.out.iter().find_map(|(_, d)| Reach::parse(d)) {
            Some(Reach::PunchChallenge { server, cookie }) => {
                let request = Reach::PunchRequest { server, cookie: Some(cookie) }.padded(200);
                self.feed(from, &request);
            }
            // The relay's credentials, then the relayed address introduced
            // (on the relay, or, with an odd input, off it: never introduced).
            Some(Reach::RelayChallenge { server, cookie }) => {
                self.feed(from, &Reach::RelayRequest { server, cookie: Some(cookie.clone()) }.padded(200));
                let ip = if input.len().is_multiple_of(2) { [198, 51, 100, 200] } else { [198, 51, 100, 7] };
                let relayed = SocketAddr::from((ip, 50001));
                self.feed(from, &Reach::RelayIntro { server, relayed, cookie }.padded(200));
                if ip[3] == 7 {
                    let introduced = self
                        .out
                        .iter()
                        .any(|(_, d)| Reach::parse(d).is_some_and(|r| matches!(r, Reach::PunchIntroRelayed { .. })));
                    assert!(!introduced, "an address off the relay was introduced");
                }
            }
            _ => {}
        }
        // A real server answering whatever challenge it was given, now and
        // then, so that lists have entries.
        if self.now_ms.is_multiple_of(7) {
            let server = SocketAddr::from(([198, 51, 100, (self.now_ms % 5) as u8], 27015));
            self.feed(server, &wire::heartbeat());
            let challenge = self.out.iter().find_map(|(_, reply)| wire::parse_getinfo(reply).ok()?.challenge);
            if let Some(challenge) = challenge {
                self.feed(server, &info(&challenge, "16"));
            }
        }
    }

    fn reset(&mut self) {
        *self = Self::default();
    }
}

/// A game server's guard judging connectionless datagrams (`getinfo` from
/// a master and from strangers, A2S, garbage), and the answer's size rule.
pub struct ServerGetInfo {
    guard: arena_server::Guard,
    now_ms: u64,
}

impl Default for ServerGetInfo {
    fn default() -> Self {
        let mut guard = arena_server::Guard::new(arena_protocol::key::OPEN_KEY, arena_protocol::PROTOCOL_ID);
        guard.set_masters(vec![SocketAddr::from(([192, 0, 2, 27], 27950))]);
        Self { guard, now_ms: 0 }
    }
}

impl Target for ServerGetInfo {
    fn name(&self) -> &'static str {
        "server_getinfo"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            wire::getinfo("abcdefgh"),
            b"\xFF\xFF\xFF\xFFgetinfo".to_vec(),
            b"\xFF\xFF\xFF\xFFgetinfo qstat ............................................".to_vec(),
            b"\xFF\xFF\xFF\xFFgetinfo \\\\\\".to_vec(),
            wire::getinfo_with_nonce("abcdefgh", "heartbeat0000001"),
            wire::getinfo_with_nonce("abcdefgh", "heartbeat0000002"),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        if let Ok(getinfo) = wire::parse_getinfo(input)
            && let Some(challenge) = &getinfo.challenge
        {
            // A challenge that parses can go into an infostring.
            let pairs = vec![("challenge".to_string(), challenge.clone())];
            assert!(InfoString::new(pairs).is_ok(), "challenge {challenge:?} does not fit an infostring");
            // An echoed nonce is a nonce.
            assert!(getinfo.nonce.as_deref().is_none_or(wire::is_nonce));
        }
        self.now_ms += 11;
        let now = Duration::from_millis(self.now_ms);
        // A heartbeat now and then opens the master's window to ask.
        if self.now_ms.is_multiple_of(50) {
            self.guard.heartbeat_sent(SocketAddr::from(([192, 0, 2, 27], 27950)), "heartbeat0000001", now);
        }
        let from = if self.now_ms.is_multiple_of(3) {
            SocketAddr::from(([192, 0, 2, 27], 27950))
        } else {
            SocketAddr::from(([203, 0, 113, (self.now_ms % 9) as u8], 4000))
        };
        let mut datagram = input.to_vec();
        match self.guard.judge(from, &mut datagram, now, 0) {
            arena_server::Verdict::GetInfo { from_master, request_bytes, .. } => {
                assert_eq!(request_bytes, input.len());
                // A 300-byte answer goes to a stranger only if it asked with as many.
                let answered = self.guard.answered_getinfo(from_master, request_bytes, 300);
                assert!(answered == (from_master || request_bytes >= 300));
            }
            arena_server::Verdict::Reply(reply) => assert!(reply.len() <= input.len()),
            _ => {}
        }
    }
}

/// A client's browser reading what a master sends it: whole replies,
/// replies cut short, and anything else from the master's address.
pub struct MasterReplies {
    browser: Option<ServerBrowser>,
    master: SocketAddr,
}

impl Default for MasterReplies {
    fn default() -> Self {
        let master = SocketAddr::from(([127, 0, 0, 1], 9));
        let mut browser = ServerBrowser::new().ok();
        if let Some(browser) = &mut browser {
            // Nothing leaves: the lists name addresses anywhere.
            browser.muted = true;
            browser.ask_master(master);
        }
        Self { browser, master }
    }
}

impl Target for MasterReplies {
    fn name(&self) -> &'static str {
        "master_replies"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let addrs: Vec<SocketAddr> = vec![
            SocketAddr::from(([192, 0, 2, 1], 27015)),
            SocketAddr::from(([10, 92, 47, 92], 0x5C2F)),
            "[2001:db8::5c2f]:27015".parse().expect("address"),
        ];
        let plain = wire::servers_response(false, &addrs[..2], true, wire::MAX_DATAGRAM_BYTES);
        let ext = wire::servers_response(true, &addrs, true, wire::MAX_DATAGRAM_BYTES);
        let part = wire::servers_response(true, &addrs, false, wire::MAX_DATAGRAM_BYTES);
        vec![plain.datagram, ext.datagram, part.datagram]
    }

    fn run(&mut self, input: &[u8]) {
        if let Ok(part) = wire::parse_servers_response(input) {
            assert!(part.servers.iter().all(|a| arena_udp::is_joinable(*a)), "{part:?}");
            // What parses can be said again, and reads back the same.
            let again = wire::servers_response(part.extended, &part.servers, part.end, wire::MAX_DATAGRAM_BYTES);
            if again.taken == part.servers.len() && again.ended == part.end {
                let back = wire::parse_servers_response(&again.datagram).expect("an encoded reply parses");
                assert_eq!(back.servers, part.servers);
                assert_eq!(back.end, part.end);
            }
        }
        if let Some(browser) = &mut self.browser {
            browser.receive(self.master, input);
            assert!(browser.servers().count() <= arena_client::browser::MAX_SERVERS);
            if browser.servers().count() >= arena_client::browser::MAX_SERVERS {
                browser.clear();
                browser.ask_master(self.master);
            }
        }
    }
}
