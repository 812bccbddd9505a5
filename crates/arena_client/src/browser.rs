//! Finding games: server queries (A2S, see `arena_protocol::query`) to
//! addresses one knows, to the servers internet masters list (the dpmaster
//! protocol, see `arena_master::wire`) and, by broadcast, to the default
//! ports of every local network, with the challenge handshake; a list of
//! the servers that answered, filled in as replies come. Used by the main
//! menu's browser and by `arena servers`. Plain Rust over non-blocking
//! sockets (one IPv4, one IPv6 where the machine has it): poll them once a
//! frame, or in a loop.
//!
//! Replies are untrusted like everything from the network: parsed with
//! bounds, at most [`MAX_SERVERS`] servers and [`MAX_DATAGRAMS_PER_POLL`]
//! datagrams a poll, a server asking for challenges over and over answered a
//! few times and then left alone, other games' servers (on Source's port)
//! left out. A master's list is taken only from the master asked; addresses
//! no one can join (port 0, unspecified, multicast, broadcast) are dropped.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use arena_master::wire::{self, ServerQuery};
use arena_protocol::query::{PlayerEntry, QueryKind, Reassembly, Reply, Request, ServerListing};
use arena_protocol::{DEFAULT_PORT, PROTOCOL_VERSION};
use arena_udp::UdpSocket;
// std's clock panics in a browser; web-time's is std's natively.
use web_time::Instant;

/// The ports a LAN scan asks on: the default and the next nine (a second
/// server on one machine takes the next free one).
pub const LAN_PORTS: std::ops::RangeInclusive<u16> = DEFAULT_PORT..=DEFAULT_PORT + 9;
/// Most servers listed in all.
pub const MAX_SERVERS: usize = 512;
/// Most of them listed by masters (the rest stays for the LAN and the
/// servers asked by address).
pub const MAX_MASTER_SERVERS: usize = 256;
/// Most datagrams read in one poll (the rest wait for the next).
pub const MAX_DATAGRAMS_PER_POLL: usize = 512;
/// Challenges one server may ask for per refresh before it is ignored.
const MAX_CHALLENGES: u32 = 4;
/// A server that has not answered this long after being asked is "not answering".
pub const ANSWER_TIMEOUT: Duration = Duration::from_millis(1500);
/// The game folder Arena servers give (others, on the same port, are left out).
const ARENA_FOLDER: &str = "arena";
/// Requests to one master per refresh, at most: the first, repeats that
/// fetch the rest of a long list (a master sends no more bytes than it was
/// sent, so each padded request buys one more datagram of the list), and
/// one repeat of a request that got no answer.
pub const MAX_MASTER_REQUESTS: u32 = 6;
/// Silence from a master after which the request goes again.
const MASTER_REPEAT_AFTER: Duration = Duration::from_millis(400);

/// How a listed server is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Asked, no answer yet.
    Asking,
    /// Answered since it was last asked.
    Answering,
    /// Asked and did not answer in time (what it said before is kept).
    NotAnswering,
}

/// A server as the browser knows it.
#[derive(Clone, Debug)]
pub struct BrowsedServer {
    /// Where it answered from (a server on this machine as 127.0.0.1).
    pub addr: SocketAddr,
    pub status: Status,
    pub info: Option<ServerListing>,
    pub players: Option<Vec<PlayerEntry>>,
    pub rules: Option<Vec<(String, String)>>,
    /// From the info request to its answer, milliseconds.
    pub ping_ms: Option<f64>,
    /// Found by the LAN scan (else asked by address).
    pub on_lan: bool,
    /// Listed by an internet master (in the current refresh).
    pub from_master: bool,
    /// Asked by address (a favourite, a recent server, the command line).
    asked_directly: bool,
    /// Other addresses it was asked at (this machine's own addresses of a
    /// server listed at 127.0.0.1), a few.
    pub aliases: Vec<SocketAddr>,
    asked_at: Option<Instant>,
    challenge: Option<i32>,
    challenges: u32,
    reassembly: Reassembly,
}

impl BrowsedServer {
    fn new(addr: SocketAddr, on_lan: bool) -> Self {
        Self {
            addr,
            status: Status::Asking,
            info: None,
            players: None,
            rules: None,
            ping_ms: None,
            on_lan,
            from_master: false,
            asked_directly: false,
            aliases: Vec::new(),
            asked_at: None,
            challenge: None,
            challenges: 0,
            reassembly: Reassembly::default(),
        }
    }

    /// Whether this build can join it (same protocol).
    pub fn compatible(&self) -> bool {
        self.info.as_ref().is_some_and(|i| u64::from(i.protocol) == PROTOCOL_VERSION)
    }

    /// How its matches are played, from its A2S keywords (an older
    /// server's: free-for-all); none before it answered.
    pub fn mode(&self) -> Option<arena_protocol::modes::Mode> {
        self.info.as_ref().map(|i| arena_protocol::modes::Mode::from_keywords(i.keywords.as_deref().unwrap_or("")))
    }

    /// Asked long enough ago to give up on an answer.
    fn waited(&self, now: Instant) -> bool {
        self.asked_at.is_some_and(|t| now.duration_since(t) >= ANSWER_TIMEOUT)
    }

    /// Everything asked for has come.
    fn complete(&self, details: bool) -> bool {
        self.info.is_some() && (!details || (self.players.is_some() && self.rules.is_some()))
    }
}

/// What the browser dropped, for logs and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrowserStats {
    pub replies: u64,
    /// Datagrams that did not parse as replies.
    pub bad_replies: u64,
    /// Replies from servers beyond [`MAX_SERVERS`], or of other games, or
    /// challenges beyond the limit.
    pub ignored: u64,
    /// Addresses masters listed that no one can join (dropped).
    pub nonsense_listed: u64,
}

/// How asking one master is going.
#[derive(Clone, Debug)]
pub struct MasterQuery {
    pub addr: SocketAddr,
    /// Requests sent this refresh.
    pub requests: u32,
    /// Servers it listed (before the browser's cap).
    pub listed: usize,
    /// It said its list was complete.
    pub complete: bool,
    /// It answered at all.
    pub answered: bool,
    last_activity: Instant,
    /// This refresh's token: the master continues a list only for requests
    /// carrying it (one forged from this address cannot move its place).
    refresh: String,
}

impl MasterQuery {
    /// Nothing more to wait for: the list is complete, or the master has
    /// had its requests and its time.
    pub fn done(&self, now: Instant) -> bool {
        self.complete
            || (self.requests >= MAX_MASTER_REQUESTS && now.duration_since(self.last_activity) >= MASTER_REPEAT_AFTER)
            || now.duration_since(self.last_activity) >= ANSWER_TIMEOUT
    }
}

/// Asks servers what they are and keeps what they say.
#[derive(Debug)]
pub struct ServerBrowser {
    socket: UdpSocket,
    /// For IPv6 servers and masters, where this machine has IPv6.
    socket6: Option<UdpSocket>,
    masters: BTreeMap<SocketAddr, MasterQuery>,
    servers: BTreeMap<SocketAddr, BrowsedServer>,
    /// When the last LAN scan went out (pings of LAN servers count from it
    /// until they are asked directly).
    scanned_at: Option<Instant>,
    /// This machine's addresses: a server answering from one is listed as 127.0.0.1.
    local_ips: Vec<IpAddr>,
    /// Ask for players and rules too (not only the info).
    pub details: bool,
    /// Send nothing (the fuzz harness feeds it replies from anywhere, and
    /// must not send queries to the addresses they list).
    pub muted: bool,
    pub stats: BrowserStats,
}

impl ServerBrowser {
    /// A browser on new sockets: IPv4 (any port, broadcast allowed), and
    /// IPv6 if this machine has it.
    pub fn new() -> io::Result<Self> {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        socket.set_nonblocking(true)?;
        socket.set_broadcast(true)?;
        let socket6 = UdpSocket::bind((std::net::Ipv6Addr::UNSPECIFIED, 0))
            .and_then(|s| s.set_nonblocking(true).map(|()| s))
            .ok();
        let local_ips =
            arena_udp::interfaces().map(|interfaces| interfaces.iter().map(|i| i.ip).collect()).unwrap_or_default();
        Ok(Self {
            socket,
            socket6,
            masters: BTreeMap::new(),
            servers: BTreeMap::new(),
            scanned_at: None,
            local_ips,
            details: false,
            muted: false,
            stats: BrowserStats::default(),
        })
    }

    /// The servers known, in address order.
    pub fn servers(&self) -> impl Iterator<Item = &BrowsedServer> {
        self.servers.values()
    }

    pub fn server(&self, addr: SocketAddr) -> Option<&BrowsedServer> {
        self.servers.get(&self.key(addr))
    }

    /// Forgets every server.
    pub fn clear(&mut self) {
        self.servers.clear();
        self.masters.clear();
    }

    /// Whether this machine can reach IPv6 servers.
    pub fn has_ipv6(&self) -> bool {
        self.socket6.is_some()
    }

    /// The masters asked, and how each is going.
    pub fn masters(&self) -> impl Iterator<Item = &MasterQuery> {
        self.masters.values()
    }

    /// A server on this machine is listed once per family: at 127.0.0.1,
    /// or at ::1.
    fn key(&self, addr: SocketAddr) -> SocketAddr {
        let addr = arena_udp::canonical(addr);
        let local = addr.ip().is_loopback() || self.local_ips.contains(&addr.ip());
        match addr.ip() {
            IpAddr::V4(_) if local => SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port())),
            IpAddr::V6(_) if local => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port())),
            _ => addr,
        }
    }

    fn send(&self, to: SocketAddr, request: Request) {
        self.send_bytes(to, &request.encode());
    }

    /// A send that fails (no route, no IPv6, a full buffer) is a server
    /// that does not answer: it shows as such.
    fn send_bytes(&self, to: SocketAddr, datagram: &[u8]) {
        if self.muted {
            return;
        }
        let to = arena_udp::canonical(to);
        let socket = if to.is_ipv4() { Some(&self.socket) } else { self.socket6.as_ref() };
        if let Some(socket) = socket {
            let _ = socket.send_to(datagram, to);
        }
    }

    /// Starts a refresh of the masters' lists: forgets the masters asked
    /// before (the settings may have changed), and the servers only they
    /// listed (those still listed come back with the new lists; those gone
    /// from them do not linger); what they listed besides is kept.
    pub fn begin_master_refresh(&mut self) {
        self.masters.clear();
        self.servers.retain(|_, s| !s.from_master || s.on_lan || s.asked_directly);
        for server in self.servers.values_mut() {
            server.from_master = false;
        }
    }

    /// Asks the master at `addr` for its list of Arena servers of this
    /// protocol (empty and full ones too: the browser filters); each server
    /// it lists is then asked, like one asked by address.
    pub fn ask_master(&mut self, addr: SocketAddr) {
        let addr = arena_udp::canonical(addr);
        if addr.is_ipv6() && self.socket6.is_none() {
            return;
        }
        let now = Instant::now();
        let query = self.masters.entry(addr).or_insert(MasterQuery {
            addr,
            requests: 0,
            listed: 0,
            complete: false,
            answered: false,
            last_activity: now,
            refresh: String::new(),
        });
        // A refresh: the list is counted afresh.
        query.requests = 0;
        query.listed = 0;
        query.answered = false;
        query.complete = false;
        query.last_activity = now;
        query.refresh = arena_master::reach::new_token();
        self.send_master_request(addr);
    }

    fn send_master_request(&mut self, addr: SocketAddr) {
        let Some(query) = self.masters.get_mut(&addr) else { return };
        query.requests += 1;
        query.last_activity = Instant::now();
        let request = ServerQuery {
            ipv6: self.socket6.is_some(),
            refresh: Some(query.refresh.clone()),
            ..ServerQuery::everything(wire::GAME, PROTOCOL_VERSION as i64)
        };
        // Padded to the largest reply datagram: the master sends an address
        // no more bytes than it sent (so that it cannot be used to flood).
        let datagram = wire::get_servers(&request, wire::MAX_DATAGRAM_BYTES);
        self.send_bytes(addr, &datagram);
    }

    /// One datagram from a master being asked: its servers are asked in turn.
    fn receive_from_master(&mut self, master: SocketAddr, datagram: &[u8]) {
        let part = match wire::parse_servers_response(datagram) {
            Ok(part) => part,
            Err(_) => {
                self.stats.bad_replies += 1;
                return;
            }
        };
        self.stats.replies += 1;
        self.stats.nonsense_listed += part.dropped as u64;
        if let Some(query) = self.masters.get_mut(&master) {
            query.answered = true;
            query.listed += part.servers.len();
            query.complete |= part.end;
            query.last_activity = Instant::now();
        }
        // Only a master on this machine or its networks may list servers
        // there: an internet master listing 127.0.0.1 or 192.168.1.1 would
        // aim this browser at its own machine or LAN.
        let local_master = arena_udp::is_local(master.ip());
        let mut from_masters = self.servers.values().filter(|s| s.from_master).count();
        for server in part.servers {
            if !local_master && arena_udp::is_local(server.ip()) {
                self.stats.nonsense_listed += 1;
                continue;
            }
            if server.is_ipv6() && self.socket6.is_none() {
                continue;
            }
            let key = self.key(server);
            if !self.servers.contains_key(&key)
                && (self.servers.len() >= MAX_SERVERS || from_masters >= MAX_MASTER_SERVERS)
            {
                self.stats.ignored += 1;
                continue;
            }
            // Listed by two masters (or twice): asked once, so that its
            // ping counts from the first question.
            let now = Instant::now();
            let asking = self.servers.get(&key).is_some_and(|s| {
                s.status == Status::Asking && s.asked_at.is_some_and(|t| now.duration_since(t) < ANSWER_TIMEOUT)
            });
            if !asking {
                self.ask(server);
            }
            if let Some(listed) = self.servers.get_mut(&key)
                && !std::mem::replace(&mut listed.from_master, true)
            {
                from_masters += 1;
            }
        }
    }

    /// Asks the server at `addr` (again): it is listed at once, as "asking".
    pub fn query(&mut self, addr: SocketAddr) {
        self.ask(addr);
        if let Some(server) = self.servers.get_mut(&self.key(addr)) {
            server.asked_directly = true;
        }
    }

    fn ask(&mut self, addr: SocketAddr) {
        let key = self.key(addr);
        if !self.servers.contains_key(&key) && self.servers.len() >= MAX_SERVERS {
            return;
        }
        let now = Instant::now();
        let server = self.servers.entry(key).or_insert_with(|| BrowsedServer::new(key, false));
        if addr != key && !server.aliases.contains(&addr) && server.aliases.len() < 4 {
            server.aliases.push(addr);
        }
        server.status = Status::Asking;
        server.asked_at = Some(now);
        server.challenges = 0;
        let challenge = server.challenge;
        self.send(key, Request { kind: QueryKind::Info, challenge });
    }

    /// Broadcasts an info query to [`LAN_PORTS`] on every local network
    /// (and this machine); LAN servers already known are asked again.
    pub fn scan_lan(&mut self) {
        let now = Instant::now();
        self.scanned_at = Some(now);
        let mut targets: Vec<IpAddr> = vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V4(Ipv4Addr::BROADCAST)];
        if let Ok(interfaces) = arena_udp::interfaces() {
            for interface in interfaces {
                let (Some(broadcast), IpAddr::V4(ip)) = (interface.broadcast, interface.ip) else { continue };
                if ip.is_loopback() {
                    continue;
                }
                if broadcast != ip && !targets.contains(&IpAddr::V4(broadcast)) {
                    targets.push(IpAddr::V4(broadcast));
                }
            }
        }
        for ip in targets {
            for port in LAN_PORTS {
                self.send(SocketAddr::new(ip, port), Request { kind: QueryKind::Info, challenge: None });
            }
        }
        // LAN servers on the scanned ports were just asked; the others
        // (found on the LAN while answering a master's list, say) are asked
        // directly, or they would wait for an answer to a question never sent.
        let mut direct = Vec::new();
        for server in self.servers.values_mut().filter(|s| s.on_lan) {
            if LAN_PORTS.contains(&server.addr.port()) {
                server.status = Status::Asking;
                server.asked_at = Some(now);
                server.challenges = 0;
            } else {
                direct.push(server.addr);
            }
        }
        for addr in direct {
            self.ask(addr);
        }
    }

    /// Everything asked is answered (or timed out).
    pub fn settled(&self) -> bool {
        let now = Instant::now();
        let scan_done = self.scanned_at.is_none_or(|t| now.duration_since(t) >= ANSWER_TIMEOUT);
        scan_done
            && self.masters.values().all(|m| m.done(now))
            && self.servers.values().all(|s| match s.status {
                Status::Asking => false,
                Status::NotAnswering => true,
                // Players and rules that never came are given up on too.
                Status::Answering => s.complete(self.details) || s.waited(now),
            })
    }

    /// Reads what has come and asks what follows from it; marks servers
    /// that did not answer in time.
    pub fn poll(&mut self) {
        let mut buffer = [0u8; 2048];
        for v6 in [false, true] {
            for _ in 0..MAX_DATAGRAMS_PER_POLL {
                let socket = if v6 { self.socket6.as_ref() } else { Some(&self.socket) };
                let Some(socket) = socket else { break };
                let (len, from) = match arena_udp::recv_from(socket, &mut buffer) {
                    Ok(received) => received,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    // An ICMP "port unreachable" from an address asked: nothing there.
                    Err(_) => continue,
                };
                self.receive(from, &buffer[..len]);
            }
        }
        let now = Instant::now();
        // A master whose list is not complete and that has gone quiet is
        // asked again: for the rest of a long list, or after a loss.
        let repeat: Vec<SocketAddr> = self
            .masters
            .values()
            .filter(|m| {
                !m.complete
                    && m.requests < MAX_MASTER_REQUESTS
                    && now.duration_since(m.last_activity) >= MASTER_REPEAT_AFTER
                    && (m.answered || m.requests < 2)
            })
            .map(|m| m.addr)
            .collect();
        for master in repeat {
            self.send_master_request(master);
        }
        for server in self.servers.values_mut() {
            if server.status == Status::Asking && server.waited(now) {
                server.status = Status::NotAnswering;
            }
        }
    }

    /// One datagram from `from`.
    pub fn receive(&mut self, from: SocketAddr, datagram: &[u8]) {
        let from = arena_udp::canonical(from);
        if self.masters.contains_key(&from) && !self.servers.contains_key(&self.key(from)) {
            self.receive_from_master(from, datagram);
            return;
        }
        let key = self.key(from);
        let now = Instant::now();
        let known = self.servers.contains_key(&key);
        // Unknown senders are LAN servers answering the scan, if one went out lately.
        let scanning = self.scanned_at.is_some_and(|t| now.duration_since(t) < ANSWER_TIMEOUT * 2);
        if !known && (!scanning || self.servers.len() >= MAX_SERVERS) {
            self.stats.ignored += 1;
            return;
        }
        let details = self.details;
        let scanned_at = self.scanned_at;
        let server = self.servers.entry(key).or_insert_with(|| BrowsedServer::new(key, true));
        // A server asked by address (a favourite) that also answers the scan
        // from this machine or a private network is on the LAN too.
        let private = match key.ip() {
            IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
            IpAddr::V6(v6) => v6.is_loopback() || v6.segments()[0] & 0xFE00 == 0xFC00,
        };
        server.on_lan |= scanning && private;
        let reply = match server.reassembly.accept(datagram) {
            None => return,
            Some(Ok(reply)) => reply,
            Some(Err(_)) => {
                self.stats.bad_replies += 1;
                if !known {
                    self.servers.remove(&key);
                }
                return;
            }
        };
        self.stats.replies += 1;
        let mut ask: Vec<Request> = Vec::new();
        match reply {
            Reply::Challenge(c) => {
                server.challenges += 1;
                if server.challenges > MAX_CHALLENGES {
                    self.stats.ignored += 1;
                    return;
                }
                server.challenge = Some(c);
                if server.info.is_none() || server.status != Status::Answering {
                    server.asked_at = Some(now);
                    ask.push(Request { kind: QueryKind::Info, challenge: Some(c) });
                } else if details {
                    for (kind, missing) in
                        [(QueryKind::Players, server.players.is_none()), (QueryKind::Rules, server.rules.is_none())]
                    {
                        if missing {
                            ask.push(Request { kind, challenge: Some(c) });
                        }
                    }
                }
            }
            Reply::Info(info) => {
                if info.folder != ARENA_FOLDER {
                    // Another game's server on a port we scan.
                    self.stats.ignored += 1;
                    if !known {
                        self.servers.remove(&key);
                    }
                    return;
                }
                let since = server.asked_at.or(scanned_at);
                server.ping_ms = since.map(|t| now.duration_since(t).as_secs_f64() * 1000.0);
                server.info = Some(info);
                server.status = Status::Answering;
                if details {
                    server.players = None;
                    server.rules = None;
                    let challenge = server.challenge;
                    ask.push(Request { kind: QueryKind::Players, challenge: challenge.or(Some(-1)) });
                    ask.push(Request { kind: QueryKind::Rules, challenge: challenge.or(Some(-1)) });
                }
            }
            Reply::Players(players) => server.players = Some(players),
            Reply::Rules(rules) => server.rules = Some(rules),
        }
        for request in ask {
            self.send(key, request);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(folder: &str) -> ServerListing {
        ServerListing {
            protocol: PROTOCOL_VERSION as u8,
            name: "LAN party".into(),
            map: "Foundry".into(),
            folder: folder.into(),
            game: "Arena".into(),
            players: 3,
            max_players: 8,
            bots: 2,
            kind: arena_protocol::query::ServerKind::Dedicated,
            environment: 'l',
            password: false,
            version: "0.1.0".into(),
            port: Some(27015),
            keywords: None,
        }
    }

    #[test]
    fn strangers_bad_replies_and_other_games_are_left_out() {
        let mut browser = ServerBrowser::new().expect("a socket");
        let stranger: SocketAddr = "192.0.2.9:27015".parse().expect("address");
        let info = Reply::Info(listing("arena")).datagrams(1).remove(0);
        // Nobody asked, no scan: ignored.
        browser.receive(stranger, &info);
        assert_eq!(browser.servers().count(), 0);
        assert_eq!(browser.stats.ignored, 1);
        // During a scan: listed.
        browser.scan_lan();
        browser.receive(stranger, &info);
        assert_eq!(browser.server(stranger).map(|s| s.status), Some(Status::Answering));
        assert!(browser.server(stranger).is_some_and(|s| s.on_lan && s.compatible()));
        // Garbage from another, and a Source server on the same port: not listed.
        let other: SocketAddr = "192.0.2.10:27015".parse().expect("address");
        browser.receive(other, &[0xFF, 0xFF, 0xFF, 0xFF, 0x49, 1, 2]);
        browser.receive(other, &Reply::Info(listing("cstrike")).datagrams(1).remove(0));
        assert!(browser.server(other).is_none());
        assert_eq!(browser.stats.bad_replies, 1);
        // A flood of servers stops at the limit.
        for i in 0..(MAX_SERVERS as u32 + 50) {
            let addr = SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 27015));
            browser.receive(addr, &info);
        }
        assert_eq!(browser.servers().count(), MAX_SERVERS);
    }

    #[test]
    fn an_internet_master_cannot_aim_the_browser_at_its_own_machine_or_lan() {
        let mut browser = ServerBrowser::new().expect("a socket");
        browser.muted = true;
        let internet: SocketAddr = "198.51.100.7:27950".parse().expect("address");
        let local: SocketAddr = "127.0.0.1:27950".parse().expect("address");
        let listed: Vec<SocketAddr> = ["127.0.0.1:27015", "192.168.1.1:27015", "[fd00::1]:27015", "203.0.113.9:27015"]
            .iter()
            .map(|a| a.parse().expect("address"))
            .collect();
        let reply = wire::servers_response(true, &listed, true, wire::MAX_DATAGRAM_BYTES).datagram;
        browser.ask_master(internet);
        browser.receive(internet, &reply);
        let found: Vec<SocketAddr> = browser.servers().map(|s| s.addr).collect();
        assert_eq!(found, vec!["203.0.113.9:27015".parse::<SocketAddr>().expect("address")]);
        assert_eq!(browser.stats.nonsense_listed, 3);
        // A master on this machine lists what it likes.
        browser.clear();
        browser.ask_master(local);
        browser.receive(local, &reply);
        assert_eq!(browser.servers().count(), listed.len() - usize::from(!browser.has_ipv6()));
    }

    #[test]
    fn a_refresh_forgets_servers_the_masters_no_longer_list() {
        let mut browser = ServerBrowser::new().expect("a socket");
        browser.muted = true;
        let master: SocketAddr = "127.0.0.1:27950".parse().expect("address");
        let (gone, stays, favourite): (SocketAddr, SocketAddr, SocketAddr) = (
            "203.0.113.1:27015".parse().expect("address"),
            "203.0.113.2:27015".parse().expect("address"),
            "203.0.113.3:27015".parse().expect("address"),
        );
        browser.query(favourite);
        browser.ask_master(master);
        let first = wire::servers_response(true, &[gone, stays, favourite], true, wire::MAX_DATAGRAM_BYTES);
        browser.receive(master, &first.datagram);
        assert_eq!(browser.servers().filter(|s| s.from_master).count(), 3);
        browser.begin_master_refresh();
        browser.ask_master(master);
        let second = wire::servers_response(true, &[stays], true, wire::MAX_DATAGRAM_BYTES);
        browser.receive(master, &second.datagram);
        assert!(browser.server(gone).is_none(), "no longer listed: gone");
        assert!(browser.server(stays).is_some_and(|s| s.from_master));
        assert!(browser.server(favourite).is_some_and(|s| !s.from_master), "asked by address: kept");
        assert_eq!(browser.masters().map(|m| m.listed).sum::<usize>(), 1);
    }

    #[test]
    fn endless_challenges_are_answered_a_few_times() {
        let mut browser = ServerBrowser::new().expect("a socket");
        let addr: SocketAddr = "192.0.2.1:27015".parse().expect("address");
        browser.query(addr);
        for c in 0..100 {
            browser.receive(addr, &Reply::Challenge(1000 + c).datagrams(1).remove(0));
        }
        assert_eq!(browser.stats.ignored, 100 - u64::from(MAX_CHALLENGES));
    }
}
