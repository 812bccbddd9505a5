//! Finding games: server queries (A2S, see `arena_protocol::query`) to
//! addresses one knows and, by broadcast, to the default ports of every
//! local network, with the challenge handshake; a list of the servers that
//! answered, filled in as replies come. Used by the main menu's browser and
//! by `arena servers`. Plain Rust over a non-blocking socket: poll it once a
//! frame, or in a loop.
//!
//! Replies are untrusted like everything from the network: parsed with
//! bounds, at most [`MAX_SERVERS`] servers and [`MAX_DATAGRAMS_PER_POLL`]
//! datagrams a poll, a server asking for challenges over and over answered a
//! few times and then left alone, other games' servers (on Source's port)
//! left out.

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use arena_protocol::query::{PlayerEntry, QueryKind, Reassembly, Reply, Request, ServerListing};
use arena_protocol::{DEFAULT_PORT, PROTOCOL_VERSION};

/// The ports a LAN scan asks on: the default and the next nine (a second
/// server on one machine takes the next free one).
pub const LAN_PORTS: std::ops::RangeInclusive<u16> = DEFAULT_PORT..=DEFAULT_PORT + 9;
/// Most servers listed.
pub const MAX_SERVERS: usize = 256;
/// Most datagrams read in one poll (the rest wait for the next).
pub const MAX_DATAGRAMS_PER_POLL: usize = 512;
/// Challenges one server may ask for per refresh before it is ignored.
const MAX_CHALLENGES: u32 = 4;
/// A server that has not answered this long after being asked is "not answering".
pub const ANSWER_TIMEOUT: Duration = Duration::from_millis(1500);
/// The game folder Arena servers give (others, on the same port, are left out).
const ARENA_FOLDER: &str = "arena";

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
}

/// Asks servers what they are and keeps what they say.
#[derive(Debug)]
pub struct ServerBrowser {
    socket: UdpSocket,
    servers: BTreeMap<SocketAddr, BrowsedServer>,
    /// When the last LAN scan went out (pings of LAN servers count from it
    /// until they are asked directly).
    scanned_at: Option<Instant>,
    /// This machine's addresses: a server answering from one is listed as 127.0.0.1.
    local_ips: Vec<IpAddr>,
    /// Ask for players and rules too (not only the info).
    pub details: bool,
    pub stats: BrowserStats,
}

impl ServerBrowser {
    /// A browser on a new socket (IPv4, any port, broadcast allowed).
    pub fn new() -> io::Result<Self> {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        socket.set_nonblocking(true)?;
        socket.set_broadcast(true)?;
        let local_ips =
            if_addrs::get_if_addrs().map(|interfaces| interfaces.iter().map(|i| i.ip()).collect()).unwrap_or_default();
        Ok(Self {
            socket,
            servers: BTreeMap::new(),
            scanned_at: None,
            local_ips,
            details: false,
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
    }

    /// A server on this machine is listed once, at 127.0.0.1.
    fn key(&self, addr: SocketAddr) -> SocketAddr {
        if addr.ip().is_loopback() || self.local_ips.contains(&addr.ip()) {
            SocketAddr::from((Ipv4Addr::LOCALHOST, addr.port()))
        } else {
            addr
        }
    }

    fn send(&self, to: SocketAddr, request: Request) {
        // A send that fails (no route, a full buffer) is a server that does
        // not answer: it shows as such.
        let _ = self.socket.send_to(&request.encode(), to);
    }

    /// Asks the server at `addr` (again): it is listed at once, as "asking".
    pub fn query(&mut self, addr: SocketAddr) {
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
        if let Ok(interfaces) = if_addrs::get_if_addrs() {
            for interface in interfaces {
                let if_addrs::IfAddr::V4(v4) = interface.addr else { continue };
                if v4.ip.is_loopback() {
                    continue;
                }
                // The interface's broadcast address, or (when none is set, as
                // `ip addr add` without `brd +` leaves it, and then netlink
                // gives the address itself) its subnet's.
                let subnet = Ipv4Addr::from(u32::from(v4.ip) | !u32::from(v4.netmask));
                let broadcast = v4.broadcast.filter(|b| *b != v4.ip && !b.is_unspecified()).unwrap_or(subnet);
                if broadcast != v4.ip && !targets.contains(&IpAddr::V4(broadcast)) {
                    targets.push(IpAddr::V4(broadcast));
                }
            }
        }
        for ip in targets {
            for port in LAN_PORTS {
                self.send(SocketAddr::new(ip, port), Request { kind: QueryKind::Info, challenge: None });
            }
        }
        for server in self.servers.values_mut().filter(|s| s.on_lan) {
            server.status = Status::Asking;
            server.asked_at = Some(now);
            server.challenges = 0;
        }
    }

    /// Everything asked is answered (or timed out).
    pub fn settled(&self) -> bool {
        let now = Instant::now();
        let scan_done = self.scanned_at.is_none_or(|t| now.duration_since(t) >= ANSWER_TIMEOUT);
        scan_done
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
        for _ in 0..MAX_DATAGRAMS_PER_POLL {
            let (len, from) = match self.socket.recv_from(&mut buffer) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                // An ICMP "port unreachable" from an address asked: nothing there.
                Err(_) => continue,
            };
            self.receive(from, &buffer[..len]);
        }
        let now = Instant::now();
        for server in self.servers.values_mut() {
            if server.status == Status::Asking && server.waited(now) {
                server.status = Status::NotAnswering;
            }
        }
    }

    /// One datagram from `from`.
    pub fn receive(&mut self, from: SocketAddr, datagram: &[u8]) {
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
            IpAddr::V6(v6) => v6.is_loopback(),
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
