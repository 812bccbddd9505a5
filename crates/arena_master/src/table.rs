//! The master's state, pure (time comes in as a [`Duration`] since start):
//! servers proving themselves and listed, clients' list requests answered,
//! everything capped, and no reply ever larger in sum than what its address
//! sent (no reflection).
//!
//! As dpmaster (`doc/techinfo.txt`, section 4): a heartbeat gets a `getinfo`
//! with a challenge no one else can make (a keyed MAC of the server's
//! address and the quarter-second, so that an answer counts even if a
//! flood pushed the server's pending entry out); only an `infoResponse` from the same address and
//! port carrying that challenge, within [`MasterConfig::challenge_timeout`]
//! and once, lists the server, until [`MasterConfig::listing_timeout`]
//! after the last such answer. Heartbeats prolong nothing, so a forged one
//! lists nothing. Arena's servers say goodbye with an authenticated answer
//! whose `sv_maxclients` is 0, which dpmaster itself would refuse as
//! invalid: it drops them at once.
//!
//! A heartbeat while a challenge is open gets that same challenge again, as
//! dpmaster's does, with its expiry unchanged: so a heartbeat prolongs
//! nothing, and one forged from a server's address cannot replace the
//! challenge that server is about to answer.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arena_udp::limit_key;

use crate::credit::{Credits, SWEEP_PERIOD};
use crate::introductions::Introductions;
use crate::reach::{self, Nat, Reach};
use crate::wire::{self, Challenges, InfoString, ServerQuery, ToMaster};

mod counters;
mod extension;
mod index;
mod lists;
mod relay;

pub use counters::MasterCounters;
pub use relay::{RelayConfig, RelayPeersSink};

/// A master's limits and timeouts.
#[derive(Clone, Debug)]
pub struct MasterConfig {
    /// Game names listed (others refused).
    pub games: Vec<String>,
    /// Servers listed in all, at most.
    pub max_servers: usize,
    /// Servers (pending and listed) per address (an IPv4 address or an
    /// IPv6 /64), at most.
    pub max_servers_per_address: usize,
    /// Servers listed per IPv6 /56 and per IPv6 /48, at most (one home's
    /// prefix, one site's: without them one /56 could hold 32 × 256
    /// listings, more than the whole list).
    pub max_servers_per_56: usize,
    pub max_servers_per_48: usize,
    /// Servers waiting to answer their challenge, at most (the oldest make
    /// room for the newest).
    pub max_pending: usize,
    /// How long a challenge is good for.
    pub challenge_timeout: Duration,
    /// How long a listing lasts after its last good answer.
    pub listing_timeout: Duration,
    /// How long a list that did not all go out can be continued.
    pub continuation_timeout: Duration,
    /// Addresses whose bytes are counted (for the no-reflection rule), at most.
    pub max_tracked_addresses: usize,
    /// The TURN relay offered to players who cannot reach a listed server
    /// otherwise (none: no relay).
    pub relay: Option<RelayConfig>,
}

impl Default for MasterConfig {
    fn default() -> Self {
        Self {
            games: vec![wire::GAME.to_string()],
            max_servers: 4096,
            max_servers_per_address: 32,
            max_servers_per_56: 64,
            max_servers_per_48: 256,
            max_pending: 4096,
            challenge_timeout: Duration::from_secs(2),
            listing_timeout: Duration::from_secs(15 * 60),
            continuation_timeout: Duration::from_secs(5),
            max_tracked_addresses: 65_536,
            relay: None,
        }
    }
}

/// Most list continuations remembered.
pub(super) const MAX_CONTINUATIONS: usize = 4096;
/// How often the summary line may be given.
pub(super) const SUMMARY_PERIOD: Duration = Duration::from_secs(1);
/// Challenges are a keyed MAC of the server's address and the window of
/// this length they were made in; one is good until `challenge_timeout`
/// after its window began.
const CHALLENGE_WINDOW: Duration = Duration::from_millis(250);
/// Stale entries the queue of pending servers may hold beyond twice the
/// live ones before it is compacted.
const PENDING_ORDER_SLACK: usize = 64;

/// A listed server, as its last good answer described it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub game: String,
    pub protocol: i64,
    pub clients: u32,
    pub max_clients: u32,
    pub gametype: String,
    /// When it is dropped unless it answers again.
    pub expires: Duration,
    /// The key introductions to it carry (Arena's extension; none from
    /// other games, which are then not introduced).
    pub intro_key: Option<String>,
    /// What it learnt of its router.
    pub nat: Nat,
    /// Its own game port, if it said (0: not said).
    pub game_port: u16,
}

/// A challenge handed out and not yet answered.
#[derive(Clone, Debug)]
struct Challenge {
    text: String,
    expires: Duration,
    /// When the server became pending (`None`: a listed server proving
    /// itself again).
    pending_since: Option<Duration>,
}

/// The rest of a list that did not fit what its asker sent (kept per
/// address and per-refresh token: a request forged from the asker's
/// address, which cannot know the token, cannot move its place).
#[derive(Clone, Debug)]
pub(super) struct Continuation {
    query: ServerQuery,
    after: SocketAddr,
    expires: Duration,
}

/// The master.
#[derive(Debug)]
pub struct Master {
    config: MasterConfig,
    challenges: Challenges,
    /// Listed servers, in address order (lists go out in this order).
    listed: BTreeMap<SocketAddr, Listing>,
    /// The same by what list requests filter on, and counted per network
    /// (see `table/index.rs`); changed only through `put_listing` and
    /// `drop_listing`.
    index: index::ListIndex,
    /// Open challenges, by server address (listed servers re-proving, and
    /// pending ones).
    open: HashMap<SocketAddr, Challenge>,
    /// Pending servers (an open challenge, not listed), oldest first; may
    /// hold stale entries, skipped when met.
    pending_order: VecDeque<(SocketAddr, Duration)>,
    /// The same per address (by [`limit_key`]), oldest first: when an
    /// address is at its cap, its own oldest pending server makes room (so
    /// that heartbeats forged from a host's address cannot keep its real
    /// server out, which answers within a round trip). Stale entries too.
    pending_of: HashMap<IpAddr, VecDeque<(SocketAddr, Duration)>>,
    pending: usize,
    /// Servers (pending and listed) per address.
    per_address: HashMap<IpAddr, usize>,
    /// The no-reflection rule (see `credit.rs`).
    credits: Credits,
    /// When the full tables of continuations and of spent challenges were
    /// last swept (a sweep per datagram would be a flood's lever).
    continuations_swept: Option<Duration>,
    spent_swept: Option<Duration>,
    continuations: HashMap<(SocketAddr, Option<String>), Continuation>,
    /// Challenges answered lately, per server address, and until when they
    /// would still be good: each is good once.
    spent: HashMap<SocketAddr, (String, Duration)>,
    introductions: Introductions,
    relay: relay::RelayDesk,
    /// The second socket's port (0: none, reachability checks unanswered)
    /// and what is to go out of it.
    probe_port: u16,
    /// The second socket's own address, when it has one of its own.
    probe_ip: Option<IpAddr>,
    probe_out: Vec<(SocketAddr, Vec<u8>)>,
    counters: MasterCounters,
    summarised: MasterCounters,
    last_summary: Option<Duration>,
}

impl Master {
    pub fn new(config: MasterConfig) -> Self {
        let max_tracked_addresses = config.max_tracked_addresses;
        let max_servers = config.max_servers;
        Self {
            config,
            challenges: Challenges::default(),
            listed: BTreeMap::new(),
            index: index::ListIndex::default(),
            open: HashMap::new(),
            pending_order: VecDeque::new(),
            pending_of: HashMap::new(),
            pending: 0,
            per_address: HashMap::new(),
            credits: Credits::new(max_tracked_addresses),
            continuations_swept: None,
            spent_swept: None,
            continuations: HashMap::new(),
            spent: HashMap::new(),
            introductions: Introductions::new(max_servers),
            relay: relay::RelayDesk::default(),
            probe_port: 0,
            probe_ip: None,
            probe_out: Vec::new(),
            counters: MasterCounters::default(),
            summarised: MasterCounters::default(),
            last_summary: None,
        }
    }

    pub fn config(&self) -> &MasterConfig {
        &self.config
    }

    /// The servers listed, in address order.
    pub fn listed(&self) -> impl Iterator<Item = (&SocketAddr, &Listing)> {
        self.listed.iter()
    }

    /// Servers waiting to answer their challenge.
    pub fn pending(&self) -> usize {
        self.pending
    }

    pub fn counters(&self) -> &MasterCounters {
        &self.counters
    }

    /// One datagram from `from` at `now`; what to send goes into `out`.
    pub fn receive(&mut self, from: SocketAddr, datagram: &[u8], now: Duration, out: &mut Vec<(SocketAddr, Vec<u8>)>) {
        let from = arena_udp::canonical(from);
        self.counters.datagrams += 1;
        self.counters.bytes_in += datagram.len() as u64;
        if !self.credits.received(from.ip(), datagram.len(), now) {
            self.counters.untracked += 1;
        }
        if let Some(message) = Reach::parse(datagram) {
            self.reach(from, message, now, out);
            self.credits.datagram_done();
            return;
        }
        match wire::parse_to_master(datagram) {
            Ok(ToMaster::Heartbeat { tag, nonce }) => self.heartbeat(from, &tag, nonce.as_deref(), now, out),
            Ok(ToMaster::InfoResponse(info)) => self.info_response(from, &info, now),
            Ok(ToMaster::GetServers(query)) => self.get_servers(from, query, now, out),
            Err(e) => self.counters.drop(match e {
                wire::WireError::NotMaster => "not dpmaster",
                wire::WireError::Unknown => "unknown command",
                wire::WireError::TooLong => "too long",
                wire::WireError::Syntax => "bad syntax",
                wire::WireError::NoGame => "list request without a game",
                wire::WireError::BadInfoString => "bad infostring",
                wire::WireError::BadChallenge => "bad challenge",
            }),
        }
        self.credits.datagram_done();
    }

    /// Bytes `ip` may still be sent.
    pub(super) fn credit_of(&self, ip: IpAddr) -> usize {
        self.credits.available(ip)
    }

    pub(super) fn send(&mut self, to: SocketAddr, datagram: Vec<u8>, out: &mut Vec<(SocketAddr, Vec<u8>)>) {
        self.credits.spend(to.ip(), datagram.len());
        self.counters.bytes_out += datagram.len() as u64;
        out.push((to, datagram));
    }

    fn heartbeat(
        &mut self,
        from: SocketAddr,
        tag: &str,
        nonce: Option<&str>,
        now: Duration,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        self.counters.heartbeats += 1;
        if tag != wire::HEARTBEAT_TAG {
            self.counters.drop("unknown heartbeat");
            return;
        }
        // An expired challenge not swept yet is as good as gone: a pending
        // server starts again (at the back of the queue).
        if self.open.get(&from).is_some_and(|c| c.expires <= now) {
            self.forget_pending(from);
            self.open.remove(&from);
        }
        let text = match self.open.get(&from) {
            // The open challenge again, its expiry unchanged.
            Some(open) => open.text.clone(),
            None => {
                let listed = self.listed.contains_key(&from);
                if !listed && !self.admit_pending(from, now) {
                    return;
                }
                let window = Self::window(now);
                let text = self.challenges.for_addr(from, window);
                let expires = Self::window_start(window) + self.config.challenge_timeout;
                let pending_since = (!listed).then_some(now);
                self.open.insert(from, Challenge { text: text.clone(), expires, pending_since });
                text
            }
        };
        // Arena's servers send a nonce: echoed, so that the server can tell
        // this `getinfo` from one forged from this master's address.
        let datagram = match nonce {
            Some(nonce) => wire::getinfo_with_nonce(&text, nonce),
            None => wire::getinfo(&text),
        };
        if datagram.len() <= self.credit_of(from.ip()) {
            self.counters.challenges_sent += 1;
            self.send(from, datagram, out);
        } else {
            self.counters.withheld += 1;
        }
    }

    /// Makes `from` a pending server if its address's share, the list and
    /// the pending table have room (the oldest pending server pushed out if
    /// need be: a flood of forged heartbeats cannot keep out a real server,
    /// which answers within a round trip); false (counted) if not.
    fn admit_pending(&mut self, from: SocketAddr, now: Duration) -> bool {
        let key = limit_key(from.ip());
        if self.per_address.get(&key).copied().unwrap_or(0) >= self.config.max_servers_per_address
            && !self.evict_oldest_pending_of(key)
        {
            self.counters.drop("servers per address");
            return false;
        }
        if self.listed.len() >= self.config.max_servers && !self.fairer_with(from.ip()) {
            self.counters.drop("list full");
            return false;
        }
        while self.pending >= self.config.max_pending {
            if !self.evict_oldest_pending() {
                self.counters.drop("pending full");
                return false;
            }
        }
        self.pending += 1;
        *self.per_address.entry(key).or_default() += 1;
        self.pending_order.push_back((from, now));
        if self.pending_order.len() > 2 * self.pending + PENDING_ORDER_SLACK {
            self.compact_pending_order();
        }
        let cap = self.config.max_servers_per_address;
        let open = &self.open;
        let mine = self.pending_of.entry(key).or_default();
        mine.push_back((from, now));
        if mine.len() > 2 * cap + PENDING_ORDER_SLACK {
            mine.retain(|(addr, since)| open.get(addr).is_some_and(|c| c.pending_since == Some(*since)));
        }
        true
    }

    /// Pushes out the oldest pending server of one address; false if it
    /// has none (all its servers are listed).
    fn evict_oldest_pending_of(&mut self, key: IpAddr) -> bool {
        while let Some((addr, since)) = self.pending_of.get_mut(&key).and_then(VecDeque::pop_front) {
            if self.open.get(&addr).is_some_and(|c| c.pending_since == Some(since)) {
                self.forget_pending(addr);
                self.counters.evicted_pending += 1;
                return true;
            }
        }
        self.pending_of.remove(&key);
        false
    }

    /// Drops the queue's entries of servers no longer pending (listed,
    /// gone, or pending again since a later time).
    fn compact_pending_order(&mut self) {
        let open = &self.open;
        self.pending_order.retain(|(addr, since)| open.get(addr).is_some_and(|c| c.pending_since == Some(*since)));
    }

    /// Pushes the oldest pending server out; false if there is none.
    fn evict_oldest_pending(&mut self) -> bool {
        while let Some((addr, since)) = self.pending_order.pop_front() {
            // Entries of servers since listed or expired are stale.
            if self.open.get(&addr).is_some_and(|c| c.pending_since == Some(since)) {
                self.forget_pending(addr);
                self.counters.evicted_pending += 1;
                return true;
            }
        }
        false
    }

    /// Forgets a pending server's challenge and its place.
    fn forget_pending(&mut self, addr: SocketAddr) {
        if self.open.get(&addr).is_some_and(|c| c.pending_since.is_some()) {
            self.open.remove(&addr);
            self.pending = self.pending.saturating_sub(1);
            self.less_per_address(addr);
        }
    }

    fn less_per_address(&mut self, addr: SocketAddr) {
        let key = limit_key(addr.ip());
        if let Some(n) = self.per_address.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_address.remove(&key);
            }
        }
    }

    /// The challenge window `now` falls in, and when a window began.
    fn window(now: Duration) -> u64 {
        (now.as_millis() / CHALLENGE_WINDOW.as_millis()) as u64
    }

    fn window_start(window: u64) -> Duration {
        CHALLENGE_WINDOW.saturating_mul(u32::try_from(window).unwrap_or(u32::MAX))
    }

    /// Whether `text` is a challenge this master made for `from` within
    /// the challenge timeout, kept or not: a flood of forged heartbeats
    /// that pushes a real server's pending entry out cannot keep its
    /// answer from counting.
    fn made_for(&self, from: SocketAddr, text: &str, now: Duration) -> bool {
        let mut window = Self::window(now);
        loop {
            if Self::window_start(window) + self.config.challenge_timeout <= now {
                return false;
            }
            if self.challenges.for_addr(from, window) == text {
                return true;
            }
            if window == 0 {
                return false;
            }
            window -= 1;
        }
    }

    fn info_response(&mut self, from: SocketAddr, info: &InfoString, now: Duration) {
        let text = info.get("challenge").unwrap_or_default().to_string();
        let kept = self.open.get(&from).is_some_and(|c| c.text == text && c.expires > now);
        if !kept {
            let spent = self.spent.get(&from).is_some_and(|(t, until)| *t == text && *until > now);
            if spent || !self.made_for(from, &text, now) {
                self.counters.drop(match self.open.get(&from) {
                    _ if spent => "challenge spent",
                    None => "infoResponse unasked",
                    Some(c) if c.expires <= now => "challenge expired",
                    Some(_) => "wrong challenge",
                });
                return;
            }
        }
        // Checked in full before the challenge is spent: a bad answer
        // leaves everything as it was.
        let listing = match self.listing_of(info, now) {
            Ok(listing) => listing,
            Err(why) => {
                self.counters.drop(why);
                return;
            }
        };
        let was_pending = self.open.remove(&from).is_some_and(|c| c.pending_since.is_some());
        if was_pending {
            self.pending = self.pending.saturating_sub(1);
        }
        self.spend(from, text, now);
        let listed = self.listed.contains_key(&from);
        // Counted in its address's share: pending with its entry, or listed.
        let counted = was_pending || listed;
        if listing.max_clients == 0 {
            // An authenticated goodbye.
            if self.drop_listing(from).is_some() {
                self.counters.farewells += 1;
            }
            if counted {
                self.less_per_address(from);
            }
            return;
        }
        if !listed {
            let crowded = index::capped_networks(from.ip()).into_iter().find(|&(bits, ip)| {
                let cap = if bits == 56 { self.config.max_servers_per_56 } else { self.config.max_servers_per_48 };
                self.index.listed_in((bits, ip)) >= cap
            });
            let refusal = if crowded.is_some() {
                Some("servers per network")
            } else if self.listed.len() >= self.config.max_servers && !self.make_room_for(from.ip()) {
                Some("list full")
            } else {
                None
            };
            if let Some(why) = refusal {
                self.counters.drop(why);
                if counted {
                    self.less_per_address(from);
                }
                return;
            }
            if !counted {
                // Its pending entry was pushed out: it takes its place again.
                let key = limit_key(from.ip());
                if self.per_address.get(&key).copied().unwrap_or(0) >= self.config.max_servers_per_address
                    && !self.evict_oldest_pending_of(key)
                {
                    self.counters.drop("servers per address");
                    return;
                }
                *self.per_address.entry(key).or_default() += 1;
            }
        }
        if self.put_listing(from, listing) {
            self.counters.refreshed += 1;
        } else {
            self.counters.listed_new += 1;
        }
    }

    /// Lists (or lists again) `addr`, indexed; true if it was listed.
    fn put_listing(&mut self, addr: SocketAddr, listing: Listing) -> bool {
        self.index.insert(addr, &listing);
        match self.listed.insert(addr, listing) {
            Some(old) => {
                self.index.remove(addr, &old);
                // Its new entry may share the old one's set.
                if let Some(new) = self.listed.get(&addr) {
                    self.index.insert(addr, new);
                }
                true
            }
            None => {
                self.index.count(addr.ip(), true);
                false
            }
        }
    }

    /// Unlists `addr` (its address's share is the caller's).
    fn drop_listing(&mut self, addr: SocketAddr) -> Option<Listing> {
        let old = self.listed.remove(&addr)?;
        self.index.remove(addr, &old);
        self.index.count(addr.ip(), false);
        Some(old)
    }

    /// Whether listing one more server of `ip`'s network would be fairer
    /// than keeping a listing of the network that holds the most: it holds
    /// at least two more than `ip`'s would.
    fn fairer_with(&self, ip: IpAddr) -> bool {
        let mine = self.index.listed_in(index::fairness_group(ip));
        self.index.largest_group().is_some_and(|(most, _)| most > mine + 1)
    }

    /// The list is full: the network holding the most listings gives one
    /// up (its largest address), if that is fairer to `ip`'s; false if not.
    fn make_room_for(&mut self, ip: IpAddr) -> bool {
        if !self.fairer_with(ip) {
            return false;
        }
        let Some((_, group)) = self.index.largest_group() else { return false };
        let (first, last) = index::ListIndex::bounds(group);
        let Some(victim) = self.listed.range(first..=last).next_back().map(|(a, _)| *a) else { return false };
        self.drop_listing(victim);
        if self.open.get(&victim).is_some_and(|c| c.pending_since.is_none()) {
            self.open.remove(&victim);
        }
        self.less_per_address(victim);
        self.counters.evicted_for_fairness += 1;
        true
    }

    /// Remembers an answered challenge until it would have expired.
    fn spend(&mut self, from: SocketAddr, text: String, now: Duration) {
        if self.spent.len() >= self.config.max_tracked_addresses
            && !self.spent.contains_key(&from)
            && self.spent_swept.is_none_or(|t| now.saturating_sub(t) >= SWEEP_PERIOD)
        {
            self.spent_swept = Some(now);
            self.spent.retain(|_, (_, until)| *until > now);
        }
        if self.spent.len() < self.config.max_tracked_addresses || self.spent.contains_key(&from) {
            self.spent.insert(from, (text, now + self.config.challenge_timeout));
        }
    }

    /// The listing an authenticated answer asks for (`max_clients` 0: a
    /// goodbye), or why it is refused.
    fn listing_of(&self, info: &InfoString, now: Duration) -> Result<Listing, &'static str> {
        let number = |key: &str| info.get(key).and_then(|v| v.trim().parse::<i64>().ok());
        let (Some(protocol), Some(clients), Some(max_clients)) =
            (number("protocol"), number("clients"), number("sv_maxclients"))
        else {
            return Err("infoResponse without numbers");
        };
        let (Ok(clients), Ok(max_clients)) = (u32::try_from(clients), u32::try_from(max_clients)) else {
            return Err("infoResponse out of range");
        };
        let game = info.get("gamename").unwrap_or_default();
        if game.contains(char::is_whitespace) || !self.config.games.iter().any(|g| g == game) {
            return Err("game not listed here");
        }
        // dpmaster's default, and its refusal of a game type with spaces.
        let gametype = info.get("gametype").unwrap_or("0");
        if gametype.contains(char::is_whitespace) {
            return Err("bad gametype");
        }
        Ok(Listing {
            game: game.to_string(),
            protocol,
            clients,
            max_clients,
            gametype: gametype.to_string(),
            expires: now + self.config.listing_timeout,
            intro_key: info.get(reach::INTRO_KEY).filter(|k| reach::is_token(k)).map(str::to_string),
            nat: Nat::parse(info.get(reach::NAT_KEY).unwrap_or_default()),
            game_port: info.get(reach::GAME_PORT_KEY).and_then(|p| p.parse().ok()).unwrap_or(0),
        })
    }

    /// Forgets expired challenges, listings, continuations and credit.
    pub fn expire(&mut self, now: Duration) {
        self.introductions.forget_idle(now);
        self.relay.budget.forget_idle(now);
        let expired: Vec<SocketAddr> = self.open.iter().filter(|(_, c)| c.expires <= now).map(|(a, _)| *a).collect();
        for addr in expired {
            // A pending server is forgotten; a listed one's unanswered
            // challenge goes, and it stays listed.
            self.forget_pending(addr);
            self.open.remove(&addr);
        }
        let gone: Vec<SocketAddr> = self.listed.iter().filter(|(_, l)| l.expires <= now).map(|(a, _)| *a).collect();
        for addr in gone {
            self.drop_listing(addr);
            self.open.remove(&addr);
            self.counters.expired += 1;
            self.less_per_address(addr);
        }
        if self.pending_order.len() > 2 * self.pending + PENDING_ORDER_SLACK {
            self.compact_pending_order();
        }
        let open = &self.open;
        self.pending_of.retain(|_, mine| {
            mine.retain(|(addr, since)| open.get(addr).is_some_and(|c| c.pending_since == Some(*since)));
            !mine.is_empty()
        });
        self.continuations.retain(|_, c| c.expires > now);
        self.spent.retain(|_, (_, until)| *until > now);
        self.credits.expire(now);
        self.publish_relay_peers(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reach::Refusal;

    type Out = Vec<(SocketAddr, Vec<u8>)>;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn info(challenge: &str, clients: u32, max: u32) -> Vec<u8> {
        let pairs = vec![
            ("challenge".to_string(), challenge.to_string()),
            ("gamename".to_string(), wire::GAME.to_string()),
            ("protocol".to_string(), "12".to_string()),
            ("clients".to_string(), clients.to_string()),
            ("sv_maxclients".to_string(), max.to_string()),
        ];
        wire::info_response(&InfoString::new(pairs).expect("valid")).expect("fits")
    }

    /// The challenge in the getinfo sent to `to`, if one was.
    fn challenge_for(out: &Out, to: SocketAddr) -> Option<String> {
        out.iter().filter(|(a, _)| *a == to).find_map(|(_, d)| wire::parse_getinfo(d).ok()?.challenge)
    }

    /// A server that heartbeats and answers its challenge at `now`.
    fn register(master: &mut Master, server: SocketAddr, clients: u32, max: u32, now: Duration) {
        let mut out = Vec::new();
        master.receive(server, &wire::heartbeat(), now, &mut out);
        let challenge = challenge_for(&out, server).expect("a challenge");
        master.receive(server, &info(&challenge, clients, max), now + ms(1), &mut out);
    }

    fn query() -> ServerQuery {
        ServerQuery {
            extended: true,
            game: wire::GAME.into(),
            protocol: 12,
            empty: true,
            full: true,
            ipv4: false,
            ipv6: false,
            gametype: None,
            refresh: None,
        }
    }

    /// The whole list as `client` gets it with padded requests.
    fn list(master: &mut Master, client: SocketAddr, query: &ServerQuery, now: Duration) -> Vec<SocketAddr> {
        let mut servers = Vec::new();
        for _ in 0..20 {
            let mut out = Vec::new();
            master.receive(client, &wire::get_servers(query, wire::MAX_DATAGRAM_BYTES), now, &mut out);
            for (_, d) in &out {
                let part = wire::parse_servers_response(d).expect("a list");
                servers.extend(part.servers);
                if part.end {
                    return servers;
                }
            }
        }
        panic!("the list never ended")
    }

    #[test]
    fn a_server_that_answers_its_challenge_is_listed_refreshed_and_expires() {
        let mut m = Master::new(MasterConfig { listing_timeout: Duration::from_secs(10), ..MasterConfig::default() });
        let server = addr("192.0.2.1:27015");
        register(&mut m, server, 3, 16, ms(0));
        assert_eq!(m.listed().count(), 1);
        assert_eq!(m.pending(), 0);
        let client = addr("198.51.100.1:5000");
        assert_eq!(list(&mut m, client, &query(), ms(100)), vec![server]);
        register(&mut m, server, 4, 16, ms(8000));
        assert_eq!(m.counters().refreshed, 1);
        m.expire(ms(17_000));
        assert_eq!(m.listed().count(), 1, "refreshed at 8 s: listed until 18 s");
        m.expire(ms(18_001));
        assert_eq!(m.listed().count(), 0);
        assert!(list(&mut m, client, &query(), ms(18_100)).is_empty());
    }

    #[test]
    fn forged_heartbeats_and_wrong_answers_list_nothing() {
        let mut m = Master::new(MasterConfig::default());
        let mut out = Vec::new();
        let server = addr("192.0.2.1:27015");
        m.receive(server, &wire::heartbeat(), ms(0), &mut out);
        let challenge = challenge_for(&out, server).expect("a challenge");
        // From another port, with a wrong challenge, too late: refused.
        m.receive(addr("192.0.2.1:27016"), &info(&challenge, 1, 8), ms(1), &mut out);
        m.receive(server, &info("wrongwrong", 1, 8), ms(1), &mut out);
        m.receive(server, &info(&challenge, 1, 8), ms(2001), &mut out);
        assert_eq!(m.listed().count(), 0);
        // A fresh one, answered twice: the second is refused (spent).
        out.clear();
        m.receive(server, &wire::heartbeat(), ms(3000), &mut out);
        let challenge = challenge_for(&out, server).expect("a challenge");
        m.receive(server, &info(&challenge, 1, 8), ms(3001), &mut out);
        assert_eq!(m.listed().count(), 1);
        m.receive(server, &info(&challenge, 1, 0), ms(3002), &mut out);
        assert_eq!(m.listed().count(), 1, "a spent challenge says nothing");
        // Another game, a zero maximum before listing, no numbers: refused.
        let other = addr("192.0.2.2:27015");
        for bad in
            [&b"\\gamename\\Quake\\protocol\\12\\clients\\1\\sv_maxclients\\8"[..], b"\\gamename\\Arena\\protocol\\12"]
        {
            out.clear();
            m.receive(other, &wire::heartbeat(), ms(4000), &mut out);
            let challenge = challenge_for(&out, other).expect("a challenge");
            let mut d = b"\xFF\xFF\xFF\xFFinfoResponse\n\\challenge\\".to_vec();
            d.extend_from_slice(challenge.as_bytes());
            d.extend_from_slice(bad);
            m.receive(other, &d, ms(4001), &mut out);
        }
        assert_eq!(m.listed().count(), 1);
    }

    #[test]
    fn an_authenticated_goodbye_drops_a_server_at_once() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("[2001:db8::1]:27015");
        register(&mut m, server, 0, 8, ms(0));
        assert_eq!(m.listed().count(), 1);
        register(&mut m, server, 0, 0, ms(500));
        assert_eq!(m.listed().count(), 0);
        assert_eq!(m.counters().farewells, 1);
        assert!(m.per_address.is_empty());
    }

    #[test]
    fn filters_choose_what_a_list_carries() {
        let mut m = Master::new(MasterConfig::default());
        let (empty, busy, full) = (addr("192.0.2.1:1"), addr("192.0.2.2:1"), addr("192.0.2.3:1"));
        let six = addr("[2001:db8::1]:1");
        register(&mut m, empty, 0, 8, ms(0));
        register(&mut m, busy, 3, 8, ms(0));
        register(&mut m, full, 8, 8, ms(0));
        register(&mut m, six, 2, 8, ms(0));
        let client = addr("198.51.100.1:5000");
        let mut q = query();
        let mut got = list(&mut m, client, &q, ms(10));
        got.sort();
        assert_eq!(got.len(), 4);
        q.empty = false;
        q.full = false;
        assert_eq!(list(&mut m, client, &q, ms(20)), vec![busy, six]);
        q.ipv4 = true;
        assert_eq!(list(&mut m, client, &q, ms(30)), vec![busy], "IPv4 only");
        q.extended = false;
        q.ipv4 = false;
        assert_eq!(list(&mut m, client, &q, ms(40)), vec![busy], "a plain list is IPv4");
        q.protocol = 11;
        assert!(list(&mut m, client, &q, ms(50)).is_empty(), "another protocol");
        q.protocol = 12;
        q.gametype = Some("3".into());
        assert!(list(&mut m, client, &q, ms(60)).is_empty(), "another game type");
    }

    #[test]
    fn replies_never_exceed_what_an_address_sent() {
        let mut m = Master::new(MasterConfig::default());
        for i in 0..500u32 {
            register(&mut m, SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27015)), 1, 8, ms(0));
        }
        assert_eq!(m.listed().count(), 500);
        // A bare request (like qstat's, 40 bytes or so) gets no more than it sent.
        let client = addr("198.51.100.1:5000");
        let bare = wire::get_servers(&query(), 0);
        let mut out = Vec::new();
        m.receive(client, &bare, ms(100), &mut out);
        let sent: usize = out.iter().map(|(_, d)| d.len()).sum();
        assert!(sent <= bare.len(), "{sent} bytes for {}", bare.len());
        // Padded requests get the whole list, in a few datagrams, each
        // repeat resuming where the last stopped.
        let other = addr("198.51.100.2:5000");
        let got = list(&mut m, other, &query(), ms(200));
        assert_eq!(got.len(), 500);
        let mut unique = got.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 500, "no server twice");
        // Random traffic from a few addresses: the rule holds in sum.
        let mut seed = 7u64;
        let mut sent: HashMap<IpAddr, u64> = HashMap::new();
        let mut received: HashMap<IpAddr, u64> = HashMap::new();
        for step in 0..20_000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let from = SocketAddr::from(([198, 51, 100, 10 + (seed % 3) as u8], 5000));
            let datagram = match seed % 4 {
                0 => wire::heartbeat(),
                1 => wire::get_servers(&query(), (seed >> 8) as usize % 1500),
                2 => wire::get_servers(&query(), 0),
                _ => info("whatever1", 1, 8),
            };
            *received.entry(from.ip()).or_default() += datagram.len() as u64;
            out.clear();
            m.receive(from, &datagram, ms(1000 + step), &mut out);
            for (to, d) in &out {
                assert!(d.len() <= wire::MAX_DATAGRAM_BYTES);
                *sent.entry(to.ip()).or_default() += d.len() as u64;
                assert!(sent[&to.ip()] <= received[&to.ip()], "more out than in for {to}");
            }
        }
    }

    #[test]
    fn a_flood_of_forged_heartbeats_cannot_keep_a_real_server_out() {
        let mut m = Master::new(MasterConfig::default());
        let mut out = Vec::new();
        for i in 0..10_000u32 {
            let forged = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 27015));
            m.receive(forged, &wire::heartbeat(), ms(u64::from(i) / 10), &mut out);
            if i % 1000 == 500 {
                // A real server heartbeats amid the flood and answers at once.
                let real = SocketAddr::from(([192, 0, 2, (i / 1000) as u8], 27015));
                register(&mut m, real, 1, 8, ms(u64::from(i) / 10));
            }
        }
        assert!(m.pending() <= MasterConfig::default().max_pending);
        assert_eq!(m.listed().count(), 10);
        assert!(m.counters().evicted_pending > 0);
        m.expire(ms(5000));
        assert_eq!(m.pending(), 0);
        assert_eq!(m.per_address.len(), 10, "only the listed servers' addresses are counted");
    }

    #[test]
    fn caps_hold_per_address_and_in_all() {
        let config = MasterConfig { max_servers: 50, max_servers_per_address: 4, ..MasterConfig::default() };
        let mut m = Master::new(config);
        for port in 0..10u16 {
            register_maybe(&mut m, SocketAddr::from(([192, 0, 2, 1], 1000 + port)), ms(0));
        }
        assert_eq!(m.listed().count(), 4);
        for i in 0..100u32 {
            register_maybe(&mut m, SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 1)), ms(10));
        }
        assert_eq!(m.listed().count(), 50);
        // IPv6: one /64 is one address.
        let mut m = Master::new(MasterConfig { max_servers_per_address: 4, ..MasterConfig::default() });
        for i in 0..10u16 {
            register_maybe(&mut m, SocketAddr::from(([0x2001, 0xdb8, 0, 1, i, i, i, i], 27015)), ms(0));
        }
        assert_eq!(m.listed().count(), 4);
    }

    #[test]
    fn heartbeats_forged_from_a_hosts_address_cannot_keep_its_server_out() {
        let mut m = Master::new(MasterConfig { max_servers_per_address: 4, ..MasterConfig::default() });
        let mut out = Vec::new();
        // 32 ports of the host's address, heartbeating over and over (no
        // one there answers): the address's share is always full of them.
        for round in 0..10u64 {
            for port in 0..32u16 {
                let forged = SocketAddr::from(([192, 0, 2, 1], 40_000 + port));
                m.receive(forged, &wire::heartbeat(), ms(round * 100 + u64::from(port)), &mut out);
            }
        }
        // The host's real server still gets a challenge, and is listed.
        register(&mut m, addr("192.0.2.1:27015"), 1, 8, ms(1000));
        assert_eq!(m.listed().count(), 1);
        // Even when the flood pushes its pending entry out between its
        // heartbeat and its answer: the challenge proves itself.
        let real = addr("192.0.2.1:27016");
        out.clear();
        m.receive(real, &wire::heartbeat(), ms(1100), &mut out);
        let challenge = challenge_for(&out, real).expect("a challenge");
        for port in 0..64u16 {
            let forged = SocketAddr::from(([192, 0, 2, 1], 41_000 + port));
            m.receive(forged, &wire::heartbeat(), ms(1101), &mut out);
        }
        assert!(!m.open.contains_key(&real), "pushed out");
        m.receive(real, &info(&challenge, 1, 8), ms(1200), &mut out);
        assert_eq!(m.listed().count(), 2);
        // The same answer again is refused: a challenge is good once.
        m.receive(real, &info(&challenge, 1, 0), ms(1300), &mut out);
        assert_eq!(m.listed().count(), 2);
        assert_eq!(m.counters().dropped.get("challenge spent"), Some(&1));
        assert!(m.pending() <= 4);
        m.expire(ms(10_000));
        assert!(m.pending_of.is_empty(), "no queue kept for nothing");
    }

    fn register_maybe(master: &mut Master, server: SocketAddr, now: Duration) {
        let mut out = Vec::new();
        master.receive(server, &wire::heartbeat(), now, &mut out);
        if let Some(challenge) = challenge_for(&out, server) {
            master.receive(server, &info(&challenge, 1, 8), now, &mut out);
        }
    }

    #[test]
    fn garbage_is_counted_and_summarised_once_a_second() {
        let mut m = Master::new(MasterConfig::default());
        let mut out = Vec::new();
        for junk in [&b"hello"[..], b"\xFF\xFF\xFF\xFFgetservers 68", b"\xFF\xFF\xFF\xFFheartbeat QuakeArena-1\n"] {
            m.receive(addr("192.0.2.9:1"), junk, ms(5), &mut out);
        }
        assert!(out.is_empty());
        assert_eq!(m.counters().dropped.values().sum::<u64>(), 3);
        let line = m.summary(ms(10)).expect("a line");
        assert!(line.contains("3 datagrams"), "{line}");
        assert_eq!(m.summary(ms(500)), None, "not twice a second");
        assert_eq!(m.summary(ms(1500)), None, "nothing new");
    }

    fn info_with(pairs: &[(&str, &str)]) -> Vec<u8> {
        let pairs = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        wire::info_response(&InfoString::new(pairs).expect("valid")).expect("fits")
    }

    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn a_heartbeat_prolongs_nothing_and_cannot_spoil_the_challenge_in_flight() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        let mut out = Vec::new();
        m.receive(server, &wire::heartbeat(), ms(0), &mut out);
        let first = challenge_for(&out, server).expect("a challenge");
        // More heartbeats (the server's own or forged from its address): the
        // same challenge again, valid until 2 s after the first.
        for t in [500, 1000, 1900] {
            out.clear();
            m.receive(server, &wire::heartbeat(), ms(t), &mut out);
            assert_eq!(challenge_for(&out, server).as_deref(), Some(first.as_str()));
        }
        m.expire(ms(2000));
        assert_eq!(m.pending(), 0, "forgotten 2 s after the first heartbeat, not the last");
        out.clear();
        m.receive(server, &wire::heartbeat(), ms(2100), &mut out);
        let second = challenge_for(&out, server).expect("a challenge");
        assert_ne!(second, first);
        // A heartbeat between the getinfo and the answer does not spoil it.
        m.receive(server, &wire::heartbeat(), ms(2110), &mut out);
        m.receive(server, &info(&second, 1, 8), ms(2120), &mut out);
        assert_eq!(m.listed().count(), 1);
        // An expired challenge not swept yet gives way to a new one.
        out.clear();
        m.receive(server, &wire::heartbeat(), ms(3000), &mut out);
        let third = challenge_for(&out, server).expect("a challenge");
        out.clear();
        m.receive(server, &wire::heartbeat(), ms(5500), &mut out);
        assert_ne!(challenge_for(&out, server), Some(third.clone()));
        m.receive(server, &info(&third, 1, 8), ms(5501), &mut out);
        assert_eq!(m.counters().dropped.get("wrong challenge"), Some(&1));
    }

    #[test]
    fn a_bad_answer_leaves_the_challenge_for_a_good_one() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        let mut out = Vec::new();
        m.receive(server, &wire::heartbeat(), ms(0), &mut out);
        let c = challenge_for(&out, server).expect("a challenge");
        let base = [("challenge", c.as_str()), ("gamename", "Arena"), ("protocol", "12")];
        let bad: [&[(&str, &str)]; 5] = [
            &[("clients", "1")],
            &[("clients", "-1"), ("sv_maxclients", "8")],
            &[("clients", "1"), ("sv_maxclients", "99999999999")],
            &[("clients", "1"), ("sv_maxclients", "8"), ("gametype", "capture the flag")],
            &[("clients", "x"), ("sv_maxclients", "8")],
        ];
        for extra in bad {
            let pairs: Vec<(&str, &str)> = base.iter().chain(extra).copied().collect();
            m.receive(server, &info_with(&pairs), ms(10), &mut out);
        }
        assert_eq!(m.listed().count(), 0);
        assert_eq!(m.pending(), 1, "still pending");
        let pairs: Vec<(&str, &str)> =
            base.iter().chain(&[("clients", " 2 "), ("sv_maxclients", "8"), ("gametype", "ctf")]).copied().collect();
        m.receive(server, &info_with(&pairs), ms(20), &mut out);
        let listed: Vec<_> = m.listed().collect();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].1.clients, listed[0].1.max_clients, listed[0].1.gametype.as_str()), (2, 8, "ctf"));
        assert_eq!(listed[0].1.expires, ms(20) + MasterConfig::default().listing_timeout);
        let dropped = &m.counters().dropped;
        assert_eq!(dropped.get("infoResponse without numbers"), Some(&2));
        assert_eq!(dropped.get("infoResponse out of range"), Some(&2));
        assert_eq!(dropped.get("bad gametype"), Some(&1));
        // The default listing timeout: 15 minutes after the last good answer.
        m.expire(ms(20) + Duration::from_secs(15 * 60) - ms(1));
        assert_eq!(m.listed().count(), 1);
        m.expire(ms(20) + Duration::from_secs(15 * 60));
        assert_eq!((m.listed().count(), m.counters().expired), (0, 1));
        assert!(m.per_address.is_empty() && m.open.is_empty());
    }

    #[test]
    fn only_the_games_configured_are_listed_and_listed_apart() {
        let config = MasterConfig { games: vec!["Arena".into(), "Other".into()], ..MasterConfig::default() };
        let mut m = Master::new(config);
        let arena = addr("192.0.2.1:27015");
        register(&mut m, arena, 1, 8, ms(0));
        let mut out = Vec::new();
        for (server, game) in [(addr("192.0.2.2:27015"), "Other"), (addr("192.0.2.3:27015"), "Quake")] {
            m.receive(server, &wire::heartbeat(), ms(10), &mut out);
            let c = challenge_for(&out, server).expect("a challenge");
            let pairs = [
                ("challenge", c.as_str()),
                ("gamename", game),
                ("protocol", "12"),
                ("clients", "1"),
                ("sv_maxclients", "8"),
            ];
            m.receive(server, &info_with(&pairs), ms(11), &mut out);
        }
        assert_eq!(m.listed().count(), 2);
        assert_eq!(m.counters().dropped.get("game not listed here"), Some(&1));
        let client = addr("198.51.100.1:5000");
        assert_eq!(list(&mut m, client, &query(), ms(20)), vec![arena]);
        let other = ServerQuery { game: "Other".into(), ..query() };
        assert_eq!(list(&mut m, client, &other, ms(30)), vec![addr("192.0.2.2:27015")]);
        out.clear();
        let quake = ServerQuery { game: "Quake".into(), ..query() };
        m.receive(client, &wire::get_servers(&quake, 1400), ms(40), &mut out);
        assert!(out.is_empty(), "no answer for a game not listed here");
        assert_eq!(m.counters().dropped.get("list of a game not listed here"), Some(&1));
    }

    #[test]
    fn a_small_unpadded_request_gets_a_whole_list_only_if_it_fits() {
        let plain = ServerQuery { extended: false, ipv6: false, ..query() };
        let request = wire::get_servers(&plain, 0);
        assert_eq!(request, b"\xFF\xFF\xFF\xFFgetservers Arena 12 empty full", "qstat's, 34 bytes");
        assert_eq!(request.len(), 34);
        for servers in 0..=2u8 {
            let mut m = Master::new(MasterConfig::default());
            for i in 0..servers {
                register(&mut m, SocketAddr::from(([192, 0, 2, 1 + i], 27015)), 1, 8, ms(0));
            }
            let client = addr("198.51.100.1:5000");
            let mut out = Vec::new();
            m.receive(client, &request, ms(10), &mut out);
            let sent: usize = out.iter().map(|(_, d)| d.len()).sum();
            assert!(sent <= request.len());
            let parts: Vec<wire::ServersPart> =
                out.iter().map(|(_, d)| wire::parse_servers_response(d).expect("a list")).collect();
            // 22 bytes of header, 7 per server, 7 for the end mark.
            let whole = 22 + 7 * usize::from(servers) + 7;
            assert_eq!(parts.iter().any(|p| p.end), whole <= request.len(), "{servers} servers");
            // The same request again gets the rest: the list is whole in the end.
            let mut got: Vec<SocketAddr> = parts.iter().flat_map(|p| p.servers.clone()).collect();
            if !parts.iter().any(|p| p.end) {
                out.clear();
                m.receive(client, &request, ms(20), &mut out);
                let parts: Vec<wire::ServersPart> =
                    out.iter().map(|(_, d)| wire::parse_servers_response(d).expect("a list")).collect();
                assert!(parts.last().is_some_and(|p| p.end), "{servers} servers");
                got.extend(parts.iter().flat_map(|p| p.servers.clone()));
            }
            assert_eq!(got.len(), usize::from(servers));
            // Asked with as many bytes as the answer: whole at once.
            let padded = wire::get_servers(&plain, whole);
            out.clear();
            m.receive(addr("198.51.100.2:5000"), &padded, ms(30), &mut out);
            assert_eq!(out.len(), 1);
            let part = wire::parse_servers_response(&out[0].1).expect("a list");
            assert!(part.end && part.servers.len() == usize::from(servers) && out[0].1.len() == whole);
        }
    }

    #[test]
    fn a_long_list_goes_in_parts_and_ends_only_once() {
        let mut m = Master::new(MasterConfig::default());
        for i in 0..500u32 {
            register(&mut m, SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27015)), 1, 8, ms(0));
        }
        let client = addr("198.51.100.1:5000");
        let request = wire::get_servers(&query(), wire::MAX_DATAGRAM_BYTES);
        let mut got = Vec::new();
        let mut parts = Vec::new();
        let mut t = 100;
        while !parts.last().is_some_and(|p: &wire::ServersPart| p.end) {
            assert!(parts.len() < 10, "the list never ended");
            let mut out = Vec::new();
            m.receive(client, &request, ms(t), &mut out);
            t += 10;
            assert_eq!(out.len(), 1, "one datagram per request of 1400 bytes");
            for (to, d) in &out {
                assert_eq!(*to, client);
                let part = wire::parse_servers_response(d).expect("a list");
                assert!(!parts.last().is_some_and(|p: &wire::ServersPart| p.end), "nothing after the end");
                got.extend(part.servers.iter().copied());
                parts.push(part);
            }
        }
        // 25 + 7 x 196 = 1397 bytes a part: 196, 196, and 108 with the end.
        let sizes: Vec<usize> = parts.iter().map(|p| p.servers.len()).collect();
        assert_eq!(sizes, vec![196, 196, 108]);
        let expected: Vec<SocketAddr> = m.listed().map(|(a, _)| *a).collect();
        assert_eq!(got, expected, "all of it, in address order, once");
        // The list done, the same request starts again.
        let mut out = Vec::new();
        m.receive(client, &request, ms(t), &mut out);
        assert_eq!(wire::parse_servers_response(&out[0].1).expect("a list").servers.first(), expected.first());
        // A continuation is for that address and that query only, for a while.
        let mut out = Vec::new();
        m.receive(addr("198.51.100.1:5001"), &request, ms(t + 10), &mut out);
        assert_eq!(wire::parse_servers_response(&out[0].1).expect("a list").servers.first(), expected.first());
        let other = wire::get_servers(&ServerQuery { full: false, ..query() }, wire::MAX_DATAGRAM_BYTES);
        let mut out = Vec::new();
        m.receive(client, &other, ms(t + 20), &mut out);
        assert_eq!(wire::parse_servers_response(&out[0].1).expect("a list").servers.first(), expected.first());
        let mut out = Vec::new();
        m.receive(client, &request, ms(t + 30), &mut out);
        let mut again = Vec::new();
        m.receive(client, &request, ms(t + 30) + Duration::from_secs(6), &mut again);
        assert_eq!(wire::parse_servers_response(&again[0].1).expect("a list").servers.first(), expected.first());
    }

    #[test]
    fn no_address_gets_more_bytes_than_it_sent_whatever_comes() {
        let mut m = Master::new(MasterConfig {
            max_servers: 300,
            max_pending: 64,
            max_servers_per_address: 300,
            max_tracked_addresses: 8,
            ..MasterConfig::default()
        });
        for i in 0..300u16 {
            register(&mut m, SocketAddr::from(([10, 1, 0, 1], 1000 + i)), 1, 8, ms(0));
        }
        assert_eq!(m.listed().count(), 300);
        // A few senders: IPv4, IPv6 addresses in one /64 and in another,
        // some of them servers answering their challenges.
        let senders: Vec<SocketAddr> = vec![
            addr("198.51.100.1:5000"),
            addr("198.51.100.1:5001"),
            addr("198.51.100.2:27015"),
            addr("[2001:db8:0:1::1]:5000"),
            addr("[2001:db8:0:1::2]:5000"),
            addr("[2001:db8:0:2::1]:27015"),
            addr("[::ffff:198.51.100.3]:27015"),
        ];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut now = ms(1000);
        let mut sent: HashMap<IpAddr, u64> = HashMap::new();
        let mut received: HashMap<IpAddr, u64> = HashMap::new();
        let mut challenges: HashMap<SocketAddr, String> = HashMap::new();
        let mut out = Vec::new();
        for _ in 0..50_000 {
            let r = xorshift(&mut seed);
            let from = senders[(r % senders.len() as u64) as usize];
            let q = ServerQuery {
                extended: r & (1 << 8) != 0,
                empty: r & (1 << 9) != 0,
                full: r & (1 << 10) != 0,
                ipv6: r & (1 << 11) != 0,
                ..query()
            };
            let datagram = match (r >> 12) % 8 {
                0 => wire::heartbeat(),
                1 | 2 => wire::get_servers(&q, (r >> 20) as usize % 1500),
                3 => wire::get_servers(&q, 0),
                4 => {
                    let c = challenges.get(&arena_udp::canonical(from)).cloned().unwrap_or_else(|| "guessing".into());
                    info(&c, (r >> 20) as u32 % 9, if r & (1 << 30) != 0 { 0 } else { 8 })
                }
                5 => vec![0xFF; (r >> 20) as usize % 2048],
                6 => b"\xFF\xFF\xFF\xFFgetserversExt Arena 12 empty full ipv4 ipv6".to_vec(),
                _ => (0..(r >> 20) % 64).map(|i| (r >> (i % 56)) as u8).collect(),
            };
            *received.entry(limit_key(from.ip())).or_default() += datagram.len() as u64;
            out.clear();
            m.receive(from, &datagram, now, &mut out);
            for (to, d) in &out {
                assert!(d.len() <= wire::MAX_DATAGRAM_BYTES);
                let key = limit_key(to.ip());
                *sent.entry(key).or_default() += d.len() as u64;
                assert!(sent[&key] <= received.get(&key).copied().unwrap_or(0), "more out than in for {key}");
                if let Ok(getinfo) = wire::parse_getinfo(d) {
                    challenges.insert(*to, getinfo.challenge.unwrap_or_default());
                }
            }
            // Time moves on, now and then by more than a second.
            now += ms((r >> 40) % 40) + if r.is_multiple_of(1000) { Duration::from_secs(3) } else { Duration::ZERO };
            if r.is_multiple_of(50) {
                m.expire(now);
            }
        }
        assert!(m.counters().list_datagrams > 100 && m.counters().challenges_sent > 100, "{:?}", m.counters());
        assert!(m.counters().withheld > 0);
        assert!(m.pending() <= 64 && m.listed().count() <= 300);
        assert!(m.credits.len() <= 8 && m.continuations.len() <= MAX_CONTINUATIONS);
    }

    #[test]
    fn the_table_of_addresses_is_bounded_and_idle_ones_make_room() {
        let mut m = Master::new(MasterConfig { max_tracked_addresses: 4, ..MasterConfig::default() });
        let mut out = Vec::new();
        let request = wire::get_servers(&query(), 100);
        for i in 1..=4u8 {
            m.receive(SocketAddr::from(([198, 51, 100, i], 5000)), &request, ms(0), &mut out);
        }
        // A fifth address finds the table full: it is still answered, from
        // a credit of its own datagram that is not kept.
        out.clear();
        m.receive(addr("[2001:db8::1]:1"), &request, ms(500), &mut out);
        assert_eq!(m.counters().untracked, 1);
        assert_eq!(out.len(), 1, "answered");
        assert!(out[0].1.len() <= request.len());
        assert_eq!(m.credits.len(), 4, "not kept");
        out.clear();
        m.receive(addr("198.51.100.1:5001"), &request, ms(600), &mut out);
        assert_eq!(out.len(), 1, "an address counted already is answered");
        // A second later the idle ones are forgotten, and it is kept.
        m.receive(addr("[2001:db8::1]:1"), &request, ms(1100), &mut out);
        assert_eq!(m.counters().untracked, 1);
        assert!(m.credits.len() <= 4);
    }

    #[test]
    fn no_table_grows_without_bound_even_without_expiry() {
        let mut m = Master::new(MasterConfig::default());
        let mut out = Vec::new();
        for i in 0..20_000u64 {
            let server = SocketAddr::from(([192, 0, 2, 1], 1000 + (i % 7) as u16));
            out.clear();
            m.receive(server, &wire::heartbeat(), ms(i), &mut out);
            let c = challenge_for(&out, server).expect("a challenge");
            m.receive(server, &info(&c, 1, if i % 2 == 0 { 8 } else { 0 }), ms(i), &mut out);
            assert!(m.pending_order.len() <= 2 * (m.pending + 1) + PENDING_ORDER_SLACK);
        }
        assert!(m.open.len() <= 7 && m.per_address.len() <= 1 && m.listed().count() <= 7);
    }

    #[test]
    fn a_full_list_refuses_new_servers_at_their_heartbeat() {
        let mut m = Master::new(MasterConfig { max_servers: 1, ..MasterConfig::default() });
        register(&mut m, addr("192.0.2.1:1"), 1, 8, ms(0));
        let mut out = Vec::new();
        m.receive(addr("192.0.2.2:1"), &wire::heartbeat(), ms(10), &mut out);
        assert!(out.is_empty() && m.pending() == 0);
        assert_eq!(m.counters().dropped.get("list full"), Some(&1));
        // The listed one still proves itself again.
        register(&mut m, addr("192.0.2.1:1"), 2, 8, ms(20));
        assert_eq!(m.counters().refreshed, 1);
    }

    fn info_extended(challenge: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut pairs = vec![
            ("challenge".to_string(), challenge.to_string()),
            ("gamename".to_string(), wire::GAME.to_string()),
            ("protocol".to_string(), "12".to_string()),
            ("clients".to_string(), "1".to_string()),
            ("sv_maxclients".to_string(), "8".to_string()),
        ];
        pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        wire::info_response(&InfoString::new(pairs).expect("valid")).expect("fits")
    }

    fn register_with(master: &mut Master, server: SocketAddr, extra: &[(&str, &str)], now: Duration) {
        let mut out = Vec::new();
        master.receive(server, &wire::heartbeat(), now, &mut out);
        let challenge = challenge_for(&out, server).expect("a challenge");
        master.receive(server, &info_extended(&challenge, extra), now + ms(1), &mut out);
        assert!(master.listed().any(|(a, _)| *a == server));
    }

    #[test]
    fn a_reachability_check_probes_from_the_second_socket_within_the_askers_credit() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        let mut out = Vec::new();
        let check = Reach::Check { nonce: "abcdefgh12345678".into() }.padded(200);
        m.receive(server, &check, ms(0), &mut out);
        assert!(out.is_empty() && m.take_probe_datagrams().is_empty(), "no probe socket: no answer");
        m.set_probe_port(27951);
        m.receive(server, &check, ms(10), &mut out);
        let probes = m.take_probe_datagrams();
        assert_eq!(probes, vec![(server, Reach::Probe { nonce: "abcdefgh12345678".into() }.encode())]);
        assert_eq!(
            out.iter().map(|(to, d)| (*to, Reach::parse(d))).collect::<Vec<_>>(),
            vec![(
                server,
                Some(Reach::Sent { nonce: "abcdefgh12345678".into(), seen: server, probe_port: 27951, probe_ip: None })
            )]
        );
        // A bare check (smaller than its answers) from a new address: withheld.
        out.clear();
        m.receive(addr("192.0.2.9:1"), &Reach::Check { nonce: "abcdefgh12345678".into() }.encode(), ms(20), &mut out);
        assert!(out.is_empty() && m.take_probe_datagrams().is_empty());
        // whoami on the second socket.
        out.clear();
        let whoami = Reach::WhoAmI { nonce: "abcdefgh12345678".into() }.padded(120);
        m.receive_on_probe_socket(addr("192.0.2.1:40000"), &whoami, ms(30), &mut out);
        assert_eq!(
            Reach::parse(&out[0].1),
            Some(Reach::YouAre { nonce: "abcdefgh12345678".into(), seen: addr("192.0.2.1:40000") })
        );
    }

    #[test]
    fn introductions_go_only_to_listed_servers_for_clients_that_proved_their_address() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        let symmetric = addr("192.0.2.2:27015");
        let client = addr("198.51.100.7:40000");
        register_with(
            &mut m,
            server,
            &[(reach::INTRO_KEY, "serverkey1234567"), (reach::NAT_KEY, "punchable"), (reach::GAME_PORT_KEY, "27015")],
            ms(0),
        );
        register_with(
            &mut m,
            symmetric,
            &[(reach::INTRO_KEY, "serverkey7654321"), (reach::NAT_KEY, "symmetric")],
            ms(0),
        );
        let mut out = Vec::new();
        m.receive(client, &Reach::PunchRequest { server, cookie: None }.padded(160), ms(100), &mut out);
        let Some(Reach::PunchChallenge { cookie, .. }) = Reach::parse(&out[0].1) else { panic!("{out:?}") };
        assert_eq!(out.len(), 1, "nothing to the server before the client proves its address");
        // The cookie from another address (a forged source) is no good.
        out.clear();
        let forged = Reach::PunchRequest { server, cookie: Some(cookie.clone()) }.padded(160);
        m.receive(addr("203.0.113.5:40000"), &forged, ms(150), &mut out);
        assert!(out.iter().all(|(to, _)| *to != server), "{out:?}");
        out.clear();
        m.receive(client, &forged, ms(200), &mut out);
        let sent: Vec<(SocketAddr, Option<Reach>)> = out.iter().map(|(to, d)| (*to, Reach::parse(d))).collect();
        assert!(
            sent.contains(&(server, Some(Reach::PunchIntro { client, key: "serverkey1234567".into() }))),
            "{sent:?}"
        );
        assert!(
            sent.contains(&(client, Some(Reach::PunchStarted { server, nat: Nat::Punchable, game_port: 27015 }))),
            "{sent:?}"
        );
        // Too late for that cookie.
        out.clear();
        m.receive(client, &forged, ms(3000), &mut out);
        assert!(out.iter().all(|(to, _)| *to != server));
        // A symmetric server and an unlisted one are refused, with the reason.
        for (target, why) in [(symmetric, Refusal::Symmetric), (addr("192.0.2.3:27015"), Refusal::Unlisted)] {
            out.clear();
            m.receive(client, &Reach::PunchRequest { server: target, cookie: None }.padded(160), ms(4000), &mut out);
            let Some(Reach::PunchChallenge { cookie, .. }) = Reach::parse(&out[0].1) else { panic!() };
            out.clear();
            m.receive(
                client,
                &Reach::PunchRequest { server: target, cookie: Some(cookie) }.padded(160),
                ms(4010),
                &mut out,
            );
            assert_eq!(
                out.iter().map(|(to, d)| (*to, Reach::parse(d))).collect::<Vec<_>>(),
                vec![(client, Some(Reach::PunchRefused { server: target, why, game_port: 0 }))]
            );
        }
        // A cookie replayed: told it is under way, introduced once.
        let c = addr("198.51.100.9:4000");
        out.clear();
        m.receive(c, &Reach::PunchRequest { server, cookie: None }.padded(160), ms(4500), &mut out);
        let Some(Reach::PunchChallenge { cookie, .. }) = Reach::parse(&out[0].1) else { panic!() };
        out.clear();
        for i in 0..50 {
            m.receive(
                c,
                &Reach::PunchRequest { server, cookie: Some(cookie.clone()) }.padded(160),
                ms(4501 + i),
                &mut out,
            );
        }
        assert_eq!(out.iter().filter(|(to, _)| *to == server).count(), 1, "a replayed cookie introduced again");
        assert_eq!(out.iter().filter(|(to, _)| *to == c).count(), 50, "each replay is still answered (within credit)");
        // A flood of genuine requests: at most the server's budget reaches it.
        let mut intros = 0;
        for i in 0..200u16 {
            let c = SocketAddr::from(([198, 51, 100, 8], 1000 + i));
            out.clear();
            m.receive(c, &Reach::PunchRequest { server, cookie: None }.padded(160), ms(7000), &mut out);
            let Some(Reach::PunchChallenge { cookie, .. }) = Reach::parse(&out[0].1) else { panic!() };
            out.clear();
            m.receive(c, &Reach::PunchRequest { server, cookie: Some(cookie) }.padded(160), ms(7001), &mut out);
            intros += out.iter().filter(|(to, _)| *to == server).count();
        }
        assert!(intros <= arena_udp::INTRODUCTION_BURST as usize, "{intros}");
    }
    /// A client's introduction to `server`: the cookie asked for, then the
    /// request that proves its address; what went to the server.
    fn ask_introduction(m: &mut Master, client: SocketAddr, server: SocketAddr, now: Duration) -> (usize, Out) {
        let mut out = Vec::new();
        m.receive(client, &Reach::PunchRequest { server, cookie: None }.padded(160), now, &mut out);
        let Some(Reach::PunchChallenge { cookie, .. }) = out.iter().find_map(|(_, d)| Reach::parse(d)) else {
            return (0, out);
        };
        out.clear();
        m.receive(client, &Reach::PunchRequest { server, cookie: Some(cookie) }.padded(160), now + ms(1), &mut out);
        (out.iter().filter(|(to, _)| *to == server).count(), out)
    }

    #[test]
    fn one_network_cannot_spend_a_servers_introductions_for_everyone() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        register_with(&mut m, server, &[(reach::INTRO_KEY, "serverkey1234567"), (reach::NAT_KEY, "punchable")], ms(0));
        // 300 requests (each with its cookie) from one /64, many hosts and ports.
        let mut from_one = 0;
        for i in 0..300u16 {
            let c = SocketAddr::from(([0x2001, 0xdb8, 0, 7, 0, 0, i, 1], 40_000 + i));
            from_one += ask_introduction(&mut m, c, server, ms(100)).0;
        }
        // Another network's player, in the same instant: introduced.
        let (introduced, out) = ask_introduction(&mut m, addr("198.51.100.20:5000"), server, ms(100));
        assert_eq!(introduced, 1, "another network's join was refused after {from_one} from one /64: {out:?}");
        assert!(from_one < arena_udp::INTRODUCTION_BURST as usize, "{from_one}");
    }

    #[test]
    fn the_recent_introductions_table_costs_no_sweep_per_request() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        register_with(&mut m, server, &[(reach::INTRO_KEY, "serverkey1234567"), (reach::NAT_KEY, "punchable")], ms(0));
        let mut introduced = 0;
        for i in 0..20_000u32 {
            let c = SocketAddr::from(([10, 9, (i >> 8) as u8, i as u8], 1000 + (i % 7) as u16));
            introduced += ask_introduction(&mut m, c, server, ms(100)).0;
        }
        assert!(introduced <= arena_udp::INTRODUCTION_BURST as usize);
        // Only introductions made are remembered, and no request sweeps a table.
        assert!(m.introductions.recent_len() <= introduced, "{} remembered", m.introductions.recent_len());
        assert!(m.introductions.swept <= 40_000, "{} entries swept for 20,000 requests", m.introductions.swept);
    }

    #[test]
    fn a_list_request_that_matches_nothing_looks_at_no_listing() {
        let mut m = Master::new(MasterConfig { max_servers_per_address: 4096, ..MasterConfig::default() });
        for i in 0..4096u32 {
            register(&mut m, SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27015)), 0, 8, ms(0));
        }
        assert_eq!(m.listed().count(), 4096);
        let before = m.counters().scanned;
        // Not empty ones (all are), another protocol, another game type: nothing.
        for q in [
            ServerQuery { empty: false, ..query() },
            ServerQuery { protocol: 11, ..query() },
            ServerQuery { gametype: Some("7".into()), ..query() },
            ServerQuery { ipv6: true, ..query() },
        ] {
            let got = list(&mut m, addr("198.51.100.1:5000"), &q, ms(100));
            assert!(got.is_empty());
        }
        let scanned = m.counters().scanned - before;
        assert!(scanned <= 16, "{scanned} listings looked at for four requests that match nothing");
        // A request that matches looks at what it sends, about.
        let before = m.counters().scanned;
        let mut out = Vec::new();
        m.receive(addr("198.51.100.2:5000"), &wire::get_servers(&query(), 200), ms(200), &mut out);
        assert!(m.counters().scanned - before <= 64, "{}", m.counters().scanned - before);
    }

    #[test]
    fn one_ipv6_56_cannot_fill_the_list() {
        let mut m = Master::new(MasterConfig::default());
        // 32 servers in each of the 256 /64s of one /56.
        for net in 0..256u16 {
            for host in 0..32u16 {
                let a = SocketAddr::from(([0x2001, 0xdb8, 0x77, net, 0, 0, 0, host + 1], 27015));
                register_maybe(&mut m, a, ms(0));
            }
        }
        let held = m.listed().count();
        // A real server elsewhere, restarted: it comes back.
        register_maybe(&mut m, addr("192.0.2.50:27015"), ms(10));
        register_maybe(&mut m, addr("[2001:db8:99::1]:27015"), ms(10));
        assert_eq!(m.listed().count(), held + 2, "{held} listed from one /56; newcomers refused");
        assert!(held <= 64, "one /56 holds {held}");
    }

    #[test]
    fn a_full_list_makes_room_for_a_network_with_fewer_listings() {
        let mut m = Master::new(MasterConfig { max_servers: 100, ..MasterConfig::default() });
        // Four /48s fill the list.
        for i in 0..100u16 {
            let a = SocketAddr::from(([0x2001, 0xdb8, i % 4, i, 0, 0, 0, 1], 27015));
            register_maybe(&mut m, a, ms(0));
        }
        assert_eq!(m.listed().count(), 100);
        let newcomer = addr("[2001:db9::1]:27015");
        register_maybe(&mut m, newcomer, ms(10));
        assert!(m.listed().any(|(a, _)| *a == newcomer), "a newcomer from an unlisted network was refused");
        assert_eq!(m.listed().count(), 100);
        // One of the four largest networks gave up a listing; a second
        // server of the newcomer's network, then, is no fairer: refused.
        register_maybe(&mut m, addr("[2001:db9::2]:27015"), ms(20));
        register_maybe(&mut m, addr("[2001:db9::3]:27015"), ms(20));
        let newcomers = m.listed().filter(|(a, _)| a.ip().to_string().starts_with("2001:db9")).count();
        assert!(newcomers <= 25, "{newcomers}");
    }

    /// A padded list request carrying a per-refresh token.
    fn request_with_token(query: &ServerQuery, token: Option<&str>, pad: usize) -> Vec<u8> {
        let mut d = wire::get_servers(query, 0);
        if let Some(token) = token {
            d.extend_from_slice(format!(" refresh={token}").as_bytes());
        }
        if d.len() < pad {
            d.resize(pad, b' ');
        }
        d
    }

    #[test]
    fn a_forged_request_cannot_move_another_clients_place_in_a_list() {
        let mut m = Master::new(MasterConfig::default());
        for i in 0..500u32 {
            register(&mut m, SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27015)), 1, 8, ms(0));
        }
        let client = addr("198.51.100.1:5000");
        let token = "refresh1234567890";
        let mut got = Vec::new();
        let mut out = Vec::new();
        m.receive(client, &request_with_token(&query(), Some(token), 700), ms(100), &mut out);
        for (_, d) in &out {
            got.extend(wire::parse_servers_response(d).expect("a list").servers);
        }
        assert!(!got.is_empty() && got.len() < 500);
        // Forged from the client's address and port: the same query,
        // without the token, then with a wrong one.
        for forged in [None, Some("guessedtoken0000")] {
            let mut ignored = Vec::new();
            m.receive(client, &request_with_token(&query(), forged, 1400), ms(110), &mut ignored);
        }
        // The client's next requests resume where its own list stopped.
        for i in 0..10 {
            let mut out = Vec::new();
            m.receive(client, &request_with_token(&query(), Some(token), 1400), ms(120 + i), &mut out);
            let part = wire::parse_servers_response(&out[0].1).expect("a list");
            got.extend(part.servers);
            if part.end {
                break;
            }
        }
        let mut unique = got.clone();
        unique.sort();
        unique.dedup();
        assert_eq!((got.len(), unique.len()), (500, 500), "the list as the client got it");
    }
    #[test]
    fn a_heartbeats_nonce_comes_back_in_its_getinfo_and_plain_ones_get_plain_getinfo() {
        let mut m = Master::new(MasterConfig::default());
        let server = addr("192.0.2.1:27015");
        let mut out = Vec::new();
        m.receive(server, &wire::heartbeat_with_nonce("heartbeat1234567"), ms(0), &mut out);
        let got = wire::parse_getinfo(&out[0].1).expect("a getinfo");
        assert_eq!(got.nonce.as_deref(), Some("heartbeat1234567"));
        let challenge = got.challenge.expect("a challenge");
        m.receive(server, &info(&challenge, 1, 8), ms(1), &mut out);
        assert_eq!(m.listed().count(), 1);
        out.clear();
        m.receive(addr("192.0.2.2:27015"), &wire::heartbeat(), ms(2), &mut out);
        assert_eq!(wire::parse_getinfo(&out[0].1).expect("a getinfo").nonce, None);
    }

    #[test]
    fn a_second_address_is_named_in_the_word_that_the_probe_went() {
        let mut m = Master::new(MasterConfig::default());
        m.set_probe_addr(addr("11.0.0.100:27951"));
        let server = addr("11.0.2.1:27015");
        let mut out = Vec::new();
        let check = Reach::Check { nonce: "abcdefgh12345678".into() }.padded(200);
        m.receive(server, &check, ms(0), &mut out);
        assert_eq!(m.take_probe_datagrams().len(), 1);
        assert_eq!(
            Reach::parse(&out[0].1),
            Some(Reach::Sent {
                nonce: "abcdefgh12345678".into(),
                seen: server,
                probe_port: 27951,
                probe_ip: Some("11.0.0.100".parse().expect("address")),
            })
        );
        // An IPv6 server cannot be probed from an IPv4 second socket.
        out.clear();
        m.receive(addr("[2a00:ff::2]:27015"), &check, ms(10), &mut out);
        assert!(out.is_empty() && m.take_probe_datagrams().is_empty());
        // A second socket on every address sends from the master's own: none named.
        m.set_probe_addr(addr("[::]:27951"));
        m.receive(server, &check, ms(20), &mut out);
        let Some(Reach::Sent { probe_ip, .. }) = Reach::parse(&out[0].1) else { panic!("{out:?}") };
        assert_eq!(probe_ip, None);
    }
}
