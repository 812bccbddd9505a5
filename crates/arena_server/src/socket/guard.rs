//! The server's datagram guard: the bookkeeping that stands between the
//! socket and netcode. Every datagram is judged here before renetcode sees
//! it; every authenticated payload before renet sees it. Everything it keeps
//! is bounded: per-source rate limits, a pending table whose entries expire in
//! seconds, a table of issued client ids, and per-client tallies. Drops are
//! counted by reason, and summarised in one log line per period.
//!
//! Connection requests are opened here with the server's key (derived from
//! the password, or the open key), and sealed again for netcode with the
//! terms the server decides, whatever the token claimed: the client id, a
//! 10 s timeout, and an expiry a few seconds away.
//!
//! Server queries (A2S, see `arena_protocol::query`) are judged here too:
//! rate-limited per address and in all, and answered in full only with a
//! challenge the server handed to that address lately. Without one, the
//! reply is a 9-byte challenge, never longer than the request: a forged
//! source address cannot make the server an amplifier. Challenges are a keyed
//! hash of the address and the time, so they cost no memory.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arena_master::wire;
use arena_udp::limit_key;

use super::drops::{DropReason, GuardCounters};
use super::rate_limits::{Bucket, IpLimits};
use arena_protocol::datagram::{
    self, Checked, Direction, PacketKind, Refusal, Reject, ServerTerms, TokenError, reseal_connection_request,
};
use arena_protocol::key::{NetcodeKey, OPEN_KEY};
use arena_protocol::payload_guard::PayloadGuard;
use arena_protocol::query::{self, QueryKind, Reply, Request};

/// Silence after which a connected client is dropped, whatever its token said.
pub const SILENT_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// The timeout written into every token netcode sees, seconds.
const TOKEN_TIMEOUT_S: i32 = 10;
/// How long a connection may stay pending (request sent, handshake not
/// finished), seconds.
pub(crate) const PENDING_S: u64 = 5;
/// Most connections pending at once; requests beyond are dropped.
pub(crate) const MAX_PENDING: usize = 1024;
/// New pending connections one address may open with tokens that open
/// (the valid budget), per second, and in a burst. Players behind one
/// address (carrier-grade NAT, a LAN party) share it; garbage never
/// draws from it.
const NEW_PENDING_PER_IP_PER_S: f32 = 8.0;
const NEW_PENDING_BURST: f32 = 16.0;
/// Connections pending at once from one address, at most.
pub(crate) const MAX_PENDING_PER_IP: usize = 32;
/// Connection requests of the right shape one address may have the guard
/// try to open (an AEAD over 1 KB, about a microsecond), per second and in
/// a burst: far above what players behind one address send (one request
/// each per 100 ms while they connect), so that a little garbage from a
/// shared address costs its real players nothing.
const OPENS_PER_IP_PER_S: f32 = 256.0;
const OPENS_BURST: f32 = 512.0;
/// Token openings in all, per second and in a burst: the CPU a flood from
/// forged addresses can take (about 2% of a core).
const OPENS_PER_S: f32 = 20_000.0;
const OPENS_TOTAL_BURST: f32 = 20_000.0;
/// Connectionless replies (refusals) to one IP address, per second and burst.
const REPLIES_PER_IP_PER_S: f32 = 2.0;
const REPLIES_BURST: f32 = 4.0;
/// Datagrams a connected client may send per second, and in a burst: far
/// above the one command packet per tick (plus acks) a client sends.
const CLIENT_PACKETS_PER_S: f32 = 512.0;
const CLIENT_PACKETS_BURST: f32 = 256.0;
/// Bad messages within [`BAD_WINDOW`] that get a client disconnected.
pub(crate) const BAD_MESSAGES_TO_DISCONNECT: u32 = 20;
const BAD_WINDOW: Duration = Duration::from_secs(10);
/// Client ids issued to tokens remembered (a token sent again gets its id
/// again; a token replayed from another address is refused).
const MAX_ISSUED: usize = 4096;
/// Server queries one IP address may send per second, and in a burst (a
/// browser's refresh is six: each of info, players and rules twice).
const QUERIES_PER_IP_PER_S: f32 = 8.0;
const QUERIES_BURST: f32 = 24.0;
/// Query replies the server sends per second in all, and in a burst: what a
/// flood from forged addresses can get out of it.
const QUERY_REPLIES_PER_S: f32 = 500.0;
const QUERY_REPLIES_BURST: f32 = 500.0;
/// A challenge is good for this long (and the one before it as long again).
pub(crate) const CHALLENGE_PERIOD: Duration = Duration::from_secs(30);
/// How often the summary line may be written.
pub(crate) const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy)]
struct Issued {
    client_id: u64,
    addr: SocketAddr,
    /// Unix time (netcode's clock) the resealed token expires.
    expire_timestamp: u64,
}

/// What the guard keeps of one connected client.
#[derive(Debug)]
struct Client {
    payloads: PayloadGuard,
    packets: Bucket,
    /// Times of recent bad messages (bounded by the disconnect threshold).
    bad: Vec<Duration>,
}

/// What to do with a datagram the guard let through.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to netcode (a resealed connection request, or anything from a
    /// pending or connected address of the right kind).
    Netcode(PacketKind),
    /// Drop it, and send this connectionless reply.
    Reply(Vec<u8>),
    /// A server query with a good challenge: send the server's answer.
    Answer(QueryKind),
    /// A master's (or a Quake tool's) `getinfo`: send an `infoResponse`
    /// carrying `challenge`, if the sender is a master or the answer is no
    /// larger than the `request_bytes` it sent (see [`Guard::answered_getinfo`]).
    GetInfo { challenge: Option<String>, from_master: bool, request_bytes: usize },
    /// Arena's master extension: an introduction or the word that a probe
    /// went from a master's exact address and port; a reachability probe or
    /// `youAre` from anyone with the check's nonce (they come from the
    /// master's second socket, which may be on a second address): checked
    /// further by whoever expects it.
    Reach(arena_master::reach::Reach),
    /// Drop it.
    Drop,
}

/// How long after a heartbeat a master's `getinfo` is answered in full,
/// and how many times: a master answers a heartbeat at once, once. Each
/// heartbeat carries a fresh nonce that Arena's master echoes in its
/// `getinfo`: only the master that got the heartbeat can, so a `getinfo`
/// forged from a master's (well-known) address cannot spend the window, and
/// only an echoed nonce confirms that the master has the server's answer
/// (the report's "listed"). Plain dpmaster masters echo nothing: their
/// window is the old one (two answers in 5 s, first come first served)
/// until a master has once echoed a nonce, and their answers are never
/// counted as confirmed. A `getinfo` outside those is a stranger's:
/// answered only if as large as the answer, and from the query budget.
pub(crate) const MASTER_WINDOW: Duration = Duration::from_secs(5);
const MASTER_ANSWERS_PER_HEARTBEAT: u8 = 2;

/// A master's window to ask, and what it got.
#[derive(Debug, Clone, Default)]
struct MasterWindow {
    until: Duration,
    /// The last heartbeat's nonce.
    nonce: String,
    /// Answers left to `getinfo`s with that nonce, and to ones without.
    nonce_answers_left: u8,
    answers_left: u8,
    /// Whether this master has echoed a nonce (then a `getinfo` without
    /// one from its address is a stranger's).
    echoes_nonces: bool,
    /// `getinfo` answered in full, since the server started, and of those
    /// the ones with the heartbeat's nonce.
    answered: u64,
    confirmed: u64,
}

/// Nonce-gated extension messages (the reachability probe, `youAre`) let
/// through per check, at most: a master sends one of each.
const REACH_MESSAGES_PER_CHECK: u8 = 8;

/// Most addresses banned in a session.
pub(crate) const MAX_BANNED: usize = 1024;

/// An IPv4 address as itself, also when it came mapped into IPv6.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The server's guard.
#[derive(Debug)]
pub struct Guard {
    key: NetcodeKey,
    has_password: bool,
    protocol_id: u64,
    new_pending: IpLimits,
    opens: IpLimits,
    opens_total: Bucket,
    replies: IpLimits,
    queries: IpLimits,
    query_replies: Bucket,
    /// The key of the challenge hash (SipHash, keyed at random at start).
    challenge_key: RandomState,
    /// Pending addresses and when (on the guard's clock) they expire.
    pending: HashMap<SocketAddr, Duration>,
    /// Pending connections per address (by [`limit_key`]).
    pending_per_ip: HashMap<IpAddr, usize>,
    /// The masters the server heartbeats to (canonical addresses), each
    /// with the window after its last heartbeat in which its `getinfo` is
    /// answered whatever its size (see [`MasterWindow`]).
    masters: HashMap<SocketAddr, MasterWindow>,
    /// The reachability check's nonce in progress, and how many messages
    /// carrying it were let through.
    reach_nonce: Option<String>,
    reach_let_through: u8,
    issued: HashMap<[u8; 16], Issued>,
    next_client_id: u64,
    clients: HashMap<u64, Client>,
    addrs: HashMap<SocketAddr, u64>,
    /// Addresses the console banned for the session (`ban`): their
    /// connection requests are dropped.
    banned: std::collections::HashSet<IpAddr>,
    pub counters: GuardCounters,
    summarised: GuardCounters,
    last_summary: Duration,
}

impl Guard {
    pub fn new(key: NetcodeKey, protocol_id: u64) -> Self {
        Self {
            key,
            has_password: key != OPEN_KEY,
            protocol_id,
            new_pending: IpLimits::default(),
            opens: IpLimits::default(),
            opens_total: Bucket::full(OPENS_TOTAL_BURST, Duration::ZERO),
            replies: IpLimits::default(),
            queries: IpLimits::default(),
            query_replies: Bucket::full(QUERY_REPLIES_BURST, Duration::ZERO),
            challenge_key: RandomState::new(),
            pending: HashMap::new(),
            pending_per_ip: HashMap::new(),
            masters: HashMap::new(),
            reach_nonce: None,
            reach_let_through: 0,
            issued: HashMap::new(),
            // Ids start from a random point so they say nothing about how
            // many have joined; any unused value would do.
            next_client_id: u64::from(rand_u32()) << 16,
            clients: HashMap::new(),
            addrs: HashMap::new(),
            banned: std::collections::HashSet::new(),
            counters: GuardCounters::default(),
            summarised: GuardCounters::default(),
            last_summary: Duration::ZERO,
        }
    }

    pub fn has_password(&self) -> bool {
        self.has_password
    }

    /// From now on, connection tokens open with `key` (the console's
    /// `sv_password`); connected clients stay.
    pub fn set_key(&mut self, key: NetcodeKey) {
        self.key = key;
        self.has_password = key != OPEN_KEY;
    }

    /// Refuses `ip`'s connections (an IPv6 address's /64's) for the rest of
    /// the session; at most [`MAX_BANNED`] addresses (false when full).
    pub fn ban(&mut self, ip: IpAddr) -> bool {
        // By the rate limits' key: an IPv6 sender has its whole /64.
        let key = limit_key(canonical_ip(ip));
        if self.banned.len() >= MAX_BANNED && !self.banned.contains(&key) {
            return false;
        }
        self.banned.insert(key);
        true
    }

    /// Counts a payload netcode could not authenticate.
    pub fn unauthenticated(&mut self) {
        self.drop(DropReason::Unauthenticated);
    }

    fn drop(&mut self, why: DropReason) -> Verdict {
        *self.counters.dropped.entry(why).or_default() += 1;
        Verdict::Drop
    }

    /// Judges one datagram from `from` at guard time `now`; `unix_now_s` is
    /// netcode's clock, for token expiry. A connection request is resealed
    /// in place.
    pub fn judge(&mut self, from: SocketAddr, datagram: &mut [u8], now: Duration, unix_now_s: u64) -> Verdict {
        self.counters.datagrams += 1;
        if datagram::is_connectionless(datagram) {
            if let Ok(request) = Request::parse(datagram) {
                return self.query(from, request, now);
            }
            if let Some(message) = arena_master::reach::Reach::parse(datagram) {
                return self.reach(from, message);
            }
            return match wire::parse_getinfo(datagram) {
                Ok(getinfo) => self.getinfo(from, getinfo.challenge, getinfo.nonce, datagram.len(), now),
                Err(_) => self.drop(DropReason::Connectionless),
            };
        }
        let checked = match datagram::check(datagram, Direction::ToServer, self.protocol_id) {
            Ok(checked) => checked,
            Err(Reject::WrongProtocol) => {
                self.drop(DropReason::Shape(Reject::WrongProtocol));
                return self.reply(from.ip(), now, Refusal::WrongVersion);
            }
            Err(why) => return self.drop(DropReason::Shape(why)),
        };
        if let Some(&client_id) = self.addrs.get(&from) {
            return self.judge_connected(client_id, checked, now);
        }
        if checked.kind != PacketKind::ConnectionRequest {
            return if self.pending.contains_key(&from) {
                match checked.kind {
                    PacketKind::Response => Verdict::Netcode(PacketKind::Response),
                    _ => self.drop(DropReason::Unexpected),
                }
            } else {
                self.drop(DropReason::UnknownSender)
            };
        }
        self.connection_request(from, datagram, now, unix_now_s)
    }

    fn judge_connected(&mut self, client_id: u64, checked: Checked, now: Duration) -> Verdict {
        let Some(client) = self.clients.get_mut(&client_id) else { return self.drop(DropReason::UnknownSender) };
        if !client.packets.take(now, CLIENT_PACKETS_PER_S, CLIENT_PACKETS_BURST) {
            return self.drop(DropReason::Flood);
        }
        match checked.kind {
            kind @ (PacketKind::KeepAlive | PacketKind::Payload | PacketKind::Disconnect) => Verdict::Netcode(kind),
            _ => self.drop(DropReason::Unexpected),
        }
    }

    /// A connection request of the right shape. Two budgets per address:
    /// opening tokens (which garbage spends, generous), and new pending
    /// connections (which only tokens that open spend): a few bad requests
    /// a second from a shared address leave its real players their budget.
    fn connection_request(&mut self, from: SocketAddr, request: &mut [u8], now: Duration, unix_now_s: u64) -> Verdict {
        if self.banned.contains(&limit_key(canonical_ip(from.ip()))) {
            return self.drop(DropReason::Banned);
        }
        let retry = self.pending.contains_key(&from);
        if !retry {
            if self.pending.len() >= MAX_PENDING {
                return self.drop(DropReason::PendingFull);
            }
            if self.pending_per_ip.get(&limit_key(from.ip())).copied().unwrap_or(0) >= MAX_PENDING_PER_IP {
                return self.drop(DropReason::PendingPerAddress);
            }
        }
        // A pending address's requests are opened too (it may send other
        // tokens): within the same budget.
        if !self.opens.take(from.ip(), now, OPENS_PER_IP_PER_S, OPENS_BURST)
            || !self.opens_total.take(now, OPENS_PER_S, OPENS_TOTAL_BURST)
        {
            return self.drop(DropReason::OpensLimited);
        }
        // Open it with a throwaway id first, to read the token's MAC: the
        // same token sent again keeps the id it was given.
        let mut probe = request.to_vec();
        let placeholder = ServerTerms { client_id: 0, timeout_s: TOKEN_TIMEOUT_S, expire_timestamp: 0 };
        let claims = match reseal_connection_request(&mut probe, &self.key, &OPEN_KEY, self.protocol_id, placeholder) {
            Ok(claims) => claims,
            Err(TokenError::WrongKey | TokenError::NotARequest) => {
                self.drop(DropReason::WrongKey);
                return self.reply(
                    from.ip(),
                    now,
                    Refusal::PasswordMismatch { server_has_password: self.has_password },
                );
            }
        };
        if !retry && !self.new_pending.take(from.ip(), now, NEW_PENDING_PER_IP_PER_S, NEW_PENDING_BURST) {
            return self.drop(DropReason::RateLimited);
        }
        let issued = match self.issued.get(&claims.mac).copied() {
            Some(issued) if issued.addr != from => return self.drop(DropReason::TokenReplayed),
            Some(issued) if issued.expire_timestamp > unix_now_s => issued,
            existing => {
                if existing.is_none() && self.issued.len() >= MAX_ISSUED {
                    self.issued.retain(|_, i| i.expire_timestamp > unix_now_s);
                    if self.issued.len() >= MAX_ISSUED {
                        return self.drop(DropReason::PendingFull);
                    }
                }
                let client_id = existing.map(|i| i.client_id).unwrap_or_else(|| {
                    self.next_client_id = self.next_client_id.wrapping_add(1);
                    self.next_client_id
                });
                let issued = Issued { client_id, addr: from, expire_timestamp: unix_now_s + PENDING_S };
                self.issued.insert(claims.mac, issued);
                issued
            }
        };
        let terms = ServerTerms {
            client_id: issued.client_id,
            timeout_s: TOKEN_TIMEOUT_S,
            expire_timestamp: issued.expire_timestamp,
        };
        if reseal_connection_request(request, &self.key, &OPEN_KEY, self.protocol_id, terms).is_err() {
            return self.drop(DropReason::WrongKey);
        }
        if !retry {
            self.pending.insert(from, now + Duration::from_secs(PENDING_S));
            *self.pending_per_ip.entry(limit_key(from.ip())).or_default() += 1;
        }
        Verdict::Netcode(PacketKind::ConnectionRequest)
    }

    /// Forgets a pending connection (connected, or expired).
    fn unpend(&mut self, addr: SocketAddr) {
        if self.pending.remove(&addr).is_some() {
            let key = limit_key(addr.ip());
            if let Some(n) = self.pending_per_ip.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.pending_per_ip.remove(&key);
                }
            }
        }
    }

    /// The masters this server heartbeats to (those kept keep what they got).
    pub fn set_masters(&mut self, masters: Vec<SocketAddr>) {
        let mut old = std::mem::take(&mut self.masters);
        for master in masters.into_iter().map(arena_udp::canonical) {
            self.masters.insert(master, old.remove(&master).unwrap_or_default());
        }
    }

    /// A heartbeat carrying `nonce` went to `master` at `now`: its
    /// `getinfo` is answered in full for [`MASTER_WINDOW`], twice at most.
    pub fn heartbeat_sent(&mut self, master: SocketAddr, nonce: &str, now: Duration) {
        if let Some(window) = self.masters.get_mut(&arena_udp::canonical(master)) {
            window.until = now + MASTER_WINDOW;
            window.nonce = nonce.to_owned();
            window.nonce_answers_left = MASTER_ANSWERS_PER_HEARTBEAT;
            window.answers_left = MASTER_ANSWERS_PER_HEARTBEAT;
        }
    }

    /// `getinfo` from `master` answered in full since the server started
    /// (0 for an address that is not a master).
    pub fn master_answers(&self, master: SocketAddr) -> u64 {
        self.masters.get(&arena_udp::canonical(master)).map_or(0, |w| w.answered)
    }

    /// Of those, the ones that echoed the heartbeat's nonce: the master has
    /// the answer (a plain dpmaster master's are never confirmed).
    pub fn master_confirmed(&self, master: SocketAddr) -> u64 {
        self.masters.get(&arena_udp::canonical(master)).map_or(0, |w| w.confirmed)
    }

    /// Whether `master` has echoed a heartbeat's nonce (Arena's master).
    pub fn master_echoes_nonces(&self, master: SocketAddr) -> bool {
        self.masters.get(&arena_udp::canonical(master)).is_some_and(|w| w.echoes_nonces)
    }

    /// The nonce of the reachability check in progress (none: nothing
    /// nonce-gated passes).
    pub fn expect_reach_nonce(&mut self, nonce: Option<String>) {
        self.reach_nonce = nonce;
        self.reach_let_through = 0;
    }

    fn reach(&mut self, from: SocketAddr, message: arena_master::reach::Reach) -> Verdict {
        use arena_master::reach::Reach;
        let from = arena_udp::canonical(from);
        let from_master = self.masters.contains_key(&from);
        let ours = |nonce: &str| self.reach_nonce.as_deref() == Some(nonce);
        let pass = match &message {
            Reach::PunchIntro { .. } | Reach::PunchIntroRelayed { .. } => from_master,
            Reach::Sent { nonce, .. } => from_master && ours(nonce),
            Reach::Probe { nonce } | Reach::YouAre { nonce, .. } => {
                ours(nonce) && self.reach_let_through < REACH_MESSAGES_PER_CHECK
            }
            _ => false,
        };
        if !pass {
            return self.drop(DropReason::Connectionless);
        }
        if matches!(message, Reach::Probe { .. } | Reach::YouAre { .. }) {
            self.reach_let_through += 1;
        }
        Verdict::Reach(message)
    }

    fn getinfo(
        &mut self,
        from: SocketAddr,
        challenge: Option<String>,
        nonce: Option<String>,
        request_bytes: usize,
        now: Duration,
    ) -> Verdict {
        // A master's, in the window after a heartbeat: its own budget.
        if let Some(window) = self.masters.get_mut(&from)
            && window.until > now
        {
            if nonce.is_some_and(|n| n == window.nonce) && window.nonce_answers_left > 0 {
                window.nonce_answers_left -= 1;
                window.echoes_nonces = true;
                window.answered += 1;
                window.confirmed += 1;
                return Verdict::GetInfo { challenge, from_master: true, request_bytes };
            }
            if !window.echoes_nonces && window.answers_left > 0 {
                window.answers_left -= 1;
                window.answered += 1;
                return Verdict::GetInfo { challenge, from_master: true, request_bytes };
            }
        }
        if !self.queries.take(from.ip(), now, QUERIES_PER_IP_PER_S, QUERIES_BURST)
            || !self.query_replies.take(now, QUERY_REPLIES_PER_S, QUERY_REPLIES_BURST)
        {
            return self.drop(DropReason::QueryLimited);
        }
        Verdict::GetInfo { challenge, from_master: false, request_bytes }
    }

    /// Whether an `infoResponse` of `answer_bytes` may go to the sender of
    /// `verdict` (a [`Verdict::GetInfo`]): to a master always, to anyone
    /// else only if no larger than what they sent. Counts either way.
    pub fn answered_getinfo(&mut self, from_master: bool, request_bytes: usize, answer_bytes: usize) -> bool {
        if from_master || answer_bytes <= request_bytes {
            self.counters.getinfo_answered += 1;
            true
        } else {
            self.drop(DropReason::WouldAmplify);
            false
        }
    }

    /// The challenge `addr` gets in challenge period `period`: never 0 or -1
    /// (which clients send to ask for one).
    fn challenge(&self, addr: SocketAddr, period: u64) -> i32 {
        let c = self.challenge_key.hash_one((addr, period)) as i32;
        if c == 0 || c == query::ASK_FOR_CHALLENGE { 1 } else { c }
    }

    fn query(&mut self, from: SocketAddr, request: Request, now: Duration) -> Verdict {
        if !self.queries.take(from.ip(), now, QUERIES_PER_IP_PER_S, QUERIES_BURST)
            || !self.query_replies.take(now, QUERY_REPLIES_PER_S, QUERY_REPLIES_BURST)
        {
            return self.drop(DropReason::QueryLimited);
        }
        let period = now.as_secs() / CHALLENGE_PERIOD.as_secs();
        let current = self.challenge(from, period);
        let good =
            request.challenge.is_some_and(|c| c == current || (period > 0 && c == self.challenge(from, period - 1)));
        if good {
            self.counters.queries_answered += 1;
            Verdict::Answer(request.kind)
        } else {
            self.counters.query_challenges += 1;
            Verdict::Reply(Reply::Challenge(current).datagrams(0).concat())
        }
    }

    fn reply(&mut self, ip: IpAddr, now: Duration, refusal: Refusal) -> Verdict {
        if self.replies.take(ip, now, REPLIES_PER_IP_PER_S, REPLIES_BURST) {
            self.counters.refusals_sent += 1;
            Verdict::Reply(refusal.encode().to_vec())
        } else {
            Verdict::Drop
        }
    }

    /// Checks an authenticated payload from a connected client before renet
    /// sees it. A rejected payload counts as a bad message.
    pub fn check_payload(&mut self, client_id: u64, payload: &[u8], now: Duration) -> bool {
        let Some(client) = self.clients.get_mut(&client_id) else { return false };
        match client.payloads.check(payload, now) {
            Ok(()) => true,
            Err(why) => {
                self.drop(DropReason::Payload(why));
                self.report_bad(client_id, now);
                false
            }
        }
    }

    /// Counts a payload that is not a well-formed bundle of renet packets.
    pub fn bad_bundle(&mut self, client_id: u64, now: Duration) {
        self.drop(DropReason::Bundle);
        self.report_bad(client_id, now);
    }

    /// Counts a bad message from a client (one that did not decode or
    /// validate, here or in the game).
    pub fn report_bad(&mut self, client_id: u64, now: Duration) {
        if let Some(client) = self.clients.get_mut(&client_id) {
            client.bad.retain(|t| now.saturating_sub(*t) < BAD_WINDOW);
            if client.bad.len() < BAD_MESSAGES_TO_DISCONNECT as usize {
                client.bad.push(now);
            }
        }
    }

    /// Clients that sent too many bad messages lately, to be disconnected.
    pub fn offenders(&self, now: Duration) -> Vec<u64> {
        self.clients
            .iter()
            .filter(|(_, c)| {
                c.bad.iter().filter(|t| now.saturating_sub(**t) < BAD_WINDOW).count()
                    >= BAD_MESSAGES_TO_DISCONNECT as usize
            })
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn connected(&mut self, client_id: u64, addr: SocketAddr, now: Duration) {
        self.unpend(addr);
        self.addrs.insert(addr, client_id);
        self.clients.insert(
            client_id,
            Client {
                payloads: PayloadGuard::from_client(),
                packets: Bucket::full(CLIENT_PACKETS_BURST, now),
                bad: Vec::new(),
            },
        );
    }

    pub fn disconnected(&mut self, client_id: u64) {
        self.clients.remove(&client_id);
        self.addrs.retain(|_, id| *id != client_id);
    }

    /// Forgets what has expired. Called once a frame.
    pub fn expire(&mut self, now: Duration, unix_now_s: u64) {
        self.queries.forget_idle(now, QUERIES_PER_IP_PER_S, QUERIES_BURST);
        let expired: Vec<SocketAddr> =
            self.pending.iter().filter(|(_, expires)| **expires <= now).map(|(addr, _)| *addr).collect();
        for addr in expired {
            self.unpend(addr);
        }
        self.opens.forget_idle(now, OPENS_PER_IP_PER_S, OPENS_BURST);
        self.issued.retain(|_, i| i.expire_timestamp.saturating_add(PENDING_S) > unix_now_s);
        self.new_pending.forget_idle(now, NEW_PENDING_PER_IP_PER_S, NEW_PENDING_BURST);
        self.replies.forget_idle(now, REPLIES_PER_IP_PER_S, REPLIES_BURST);
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// One line about what was dropped since the last one, at most once a
    /// [`SUMMARY_PERIOD`], and only if anything was.
    pub fn summary(&mut self, now: Duration) -> Option<String> {
        if now.saturating_sub(self.last_summary) < SUMMARY_PERIOD {
            return None;
        }
        let before = std::mem::replace(&mut self.summarised, self.counters.clone());
        let period = now.saturating_sub(self.last_summary).as_secs_f64();
        self.last_summary = now;
        let dropped: Vec<String> = self
            .counters
            .dropped
            .iter()
            .filter_map(|(why, n)| {
                let new = n - before.dropped.get(why).copied().unwrap_or(0);
                (new > 0).then(|| format!("{new} {}", why.label()))
            })
            .collect();
        let bad = self.counters.disconnected_for_bad_messages - before.disconnected_for_bad_messages;
        let refusals = self.counters.refusals_sent - before.refusals_sent;
        if dropped.is_empty() && bad == 0 && refusals == 0 {
            return None;
        }
        let total: u64 = self.counters.dropped_total() - before.dropped_total();
        Some(format!(
            "guard, last {period:.0} s: dropped {total} datagrams ({}); {refusals} refusals sent; \
             {bad} clients disconnected for bad messages; {} pending",
            if dropped.is_empty() { "none".to_string() } else { dropped.join(", ") },
            self.pending.len()
        ))
    }
}

/// A random number from the OS's randomness (through std's hasher seeding).
fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_from_strangers_are_dropped_and_counted() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let from: SocketAddr = "192.0.2.1:5000".parse().expect("address");
        assert_eq!(g.judge(from, &mut [0xF5; 40], Duration::ZERO, 0), Verdict::Drop);
        assert_eq!(g.judge(from, &mut [0x14; 8 + 16 + 2], Duration::ZERO, 0), Verdict::Drop);
        assert_eq!(g.counters.dropped(DropReason::Shape(Reject::BadSequenceLength)), 1);
        assert_eq!(g.counters.dropped(DropReason::UnknownSender), 1);
        assert!(g.summary(SUMMARY_PERIOD).is_some_and(|s| s.contains("dropped 2 datagrams")));
        assert_eq!(g.summary(SUMMARY_PERIOD * 3), None, "nothing new: no line");
    }

    #[test]
    fn queries_get_a_challenge_first_and_never_more_bytes_than_they_sent() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let from: SocketAddr = "192.0.2.1:5000".parse().expect("address");
        let other: SocketAddr = "192.0.2.2:5000".parse().expect("address");
        let t = Duration::from_secs(100);
        for kind in [QueryKind::Info, QueryKind::Players, QueryKind::Rules] {
            for challenge in [None, Some(0), Some(query::ASK_FOR_CHALLENGE), Some(12345)] {
                let mut request = Request { kind, challenge }.encode();
                let Verdict::Reply(reply) = g.judge(from, &mut request, t, 0) else { panic!("a challenge") };
                assert!(reply.len() <= request.len(), "{} bytes for a {}-byte request", reply.len(), request.len());
                let Ok(Reply::Challenge(c)) = Reply::parse(&reply) else { panic!("a challenge") };
                // With it: the answer. From another address: another challenge.
                let mut again = Request { kind, challenge: Some(c) }.encode();
                assert_eq!(g.judge(from, &mut again, t, 0), Verdict::Answer(kind));
                assert!(matches!(g.judge(other, &mut again, t, 0), Verdict::Reply(_)));
                // Still good a period later, not two.
                assert_eq!(g.judge(from, &mut again, t + CHALLENGE_PERIOD, 0), Verdict::Answer(kind));
                assert!(matches!(g.judge(from, &mut again, t + CHALLENGE_PERIOD * 3, 0), Verdict::Reply(_)));
            }
        }
    }

    #[test]
    fn a_query_flood_is_limited_per_address_and_in_all() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let t = Duration::from_secs(5);
        let mut request = Request { kind: QueryKind::Info, challenge: None }.encode();
        let from: SocketAddr = "192.0.2.1:5000".parse().expect("address");
        let answered = (0..1000).filter(|_| g.judge(from, &mut request, t, 0) != Verdict::Drop).count();
        assert_eq!(answered, QUERIES_BURST as usize, "one address gets its burst");
        // Forged addresses, each once: the server's own budget holds.
        let answered = (0..5000u32)
            .filter(|i| {
                let addr = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, *i as u8], 4000));
                g.judge(addr, &mut request, t, 0) != Verdict::Drop
            })
            .count();
        assert!(answered <= QUERY_REPLIES_BURST as usize, "{answered} replies to forged addresses");
        assert!(g.counters.dropped(DropReason::QueryLimited) > 4000);
        // Not a query at all: dropped.
        assert_eq!(g.judge(from, &mut [0xFF, 0xFF, 0xFF, 0xFF, 0x71, 1], Duration::from_secs(60), 0), Verdict::Drop);
    }

    /// A connection request with a self-made token sealed with `key`, as a
    /// client makes one.
    fn request(key: &NetcodeKey, unix_now: Duration) -> Vec<u8> {
        let server: SocketAddr = "192.0.2.100:27015".parse().expect("address");
        let token =
            renetcode::ConnectToken::generate(unix_now, 7, 300, u64::from(rand_u32()), 10, vec![server], None, key)
                .expect("a token");
        let mut client =
            renetcode::NetcodeClient::new(unix_now, renetcode::ClientAuthentication::Secure { connect_token: token })
                .expect("a client");
        client.update(Duration::ZERO).expect("a request").0.to_vec()
    }

    fn unix_now() -> Duration {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
    }

    #[test]
    fn garbage_from_a_shared_address_leaves_its_players_their_budget() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let unix = unix_now();
        let shared = |port: u16| SocketAddr::from(([192, 0, 2, 1], port));
        let real = request(&OPEN_KEY, unix);
        // 500 requests in a second whose tokens do not open, from one address.
        let t = Duration::from_secs(10);
        for i in 0..500u16 {
            let mut mangled = real.clone();
            let at = mangled.len() - 1 - usize::from(i) % 1024;
            mangled[at] ^= 0x55;
            g.judge(shared(1000 + i), &mut mangled, t + Duration::from_millis(u64::from(i) * 2), unix.as_secs());
        }
        assert_eq!(g.counters.dropped(DropReason::WrongKey), 500);
        // Then 16 players behind that address, each asking once: all through.
        let t = t + Duration::from_secs(1);
        for player in 0..16 {
            let mut asking = request(&OPEN_KEY, unix);
            let verdict = g.judge(shared(5000 + player), &mut asking, t, unix.as_secs());
            assert_eq!(verdict, Verdict::Netcode(PacketKind::ConnectionRequest), "player {player}");
        }
        // A flood beyond what the guard opens for one address is cut short.
        let mut junk = real.clone();
        let at = junk.len() - 1;
        junk[at] ^= 1;
        for _ in 0..5000 {
            g.judge(shared(9000), &mut junk.clone(), t, unix.as_secs());
        }
        assert!(g.counters.dropped(DropReason::OpensLimited) > 4000, "{:?}", g.counters);
    }

    #[test]
    fn one_address_has_a_bounded_number_of_connections_pending() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let unix = unix_now();
        let mut pending = 0;
        for i in 0..48u16 {
            let mut asking = request(&OPEN_KEY, unix);
            let t = Duration::from_secs(10) + Duration::from_millis(u64::from(i) * 100);
            let from = SocketAddr::from(([192, 0, 2, 1], 2000 + i));
            if g.judge(from, &mut asking, t, unix.as_secs()) == Verdict::Netcode(PacketKind::ConnectionRequest) {
                pending += 1;
            }
        }
        assert_eq!(pending, MAX_PENDING_PER_IP);
        assert_eq!(g.pending(), MAX_PENDING_PER_IP);
        assert!(g.counters.dropped(DropReason::PendingPerAddress) > 0);
        // They expire, and the count with them.
        g.expire(Duration::from_secs(30), unix.as_secs());
        assert_eq!(g.pending(), 0);
        assert!(g.pending_per_ip.is_empty());
    }

    #[test]
    fn masters_get_their_getinfo_answered_and_strangers_only_when_they_sent_as_much() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let master: SocketAddr = "[2001:db8::27]:27950".parse().expect("address");
        let stranger: SocketAddr = "192.0.2.9:4000".parse().expect("address");
        g.set_masters(vec![master]);
        let mut getinfo = wire::getinfo("abcdefgh");
        let t = Duration::from_secs(3);
        // Before any heartbeat: the master's address is a stranger's.
        let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut getinfo.clone(), t, 0) else {
            panic!("a getinfo")
        };
        assert!(!from_master, "no heartbeat went to it");
        g.heartbeat_sent(master, "heartbeat0000001", t);
        let verdict = g.judge(master, &mut getinfo.clone(), t, 0);
        let Verdict::GetInfo { challenge, from_master, request_bytes } = verdict else { panic!("{verdict:?}") };
        assert_eq!((challenge.as_deref(), from_master), (Some("abcdefgh"), true));
        assert!(g.answered_getinfo(from_master, request_bytes, 300));
        // Twice per heartbeat, within its window; then (forged from the
        // master's address, say) a stranger's again.
        let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut getinfo.clone(), t, 0) else {
            panic!("a getinfo")
        };
        assert!(from_master);
        let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut getinfo.clone(), t, 0) else {
            panic!("a getinfo")
        };
        assert!(!from_master, "a third answer to one heartbeat");
        assert_eq!(g.master_answers(master), 2);
        g.heartbeat_sent(master, "heartbeat0000001", t);
        let late = t + MASTER_WINDOW;
        let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut getinfo.clone(), late, 0) else {
            panic!("a getinfo")
        };
        assert!(!from_master, "after the window");
        let Verdict::GetInfo { from_master, request_bytes, .. } = g.judge(stranger, &mut getinfo, t, 0) else {
            panic!("a getinfo")
        };
        assert!(!from_master);
        assert!(!g.answered_getinfo(from_master, request_bytes, 300), "300 bytes for a small request");
        assert!(g.answered_getinfo(from_master, 400, 300), "a padded request gets its answer");
        assert_eq!(g.counters.dropped(DropReason::WouldAmplify), 1);
        // Mapped IPv4 masters are the same master.
        g.set_masters(vec!["[::ffff:192.0.2.9]:4000".parse().expect("address")]);
        g.heartbeat_sent("[::ffff:192.0.2.9]:4000".parse().expect("address"), "heartbeat0000001", t);
        let Verdict::GetInfo { from_master, .. } = g.judge(stranger, &mut wire::getinfo("abcdefgh"), t, 0) else {
            panic!("a getinfo")
        };
        assert!(from_master);
    }

    #[test]
    fn offenders_are_those_with_many_recent_bad_messages() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let addr: SocketAddr = "192.0.2.1:5000".parse().expect("address");
        g.connected(42, addr, Duration::ZERO);
        for i in 0..BAD_MESSAGES_TO_DISCONNECT - 1 {
            g.report_bad(42, Duration::from_millis(u64::from(i)));
        }
        assert!(g.offenders(Duration::from_secs(1)).is_empty());
        g.report_bad(42, Duration::from_secs(1));
        assert_eq!(g.offenders(Duration::from_secs(1)), vec![42]);
        assert!(g.offenders(Duration::from_secs(30)).is_empty(), "old offences lapse");
    }

    #[test]
    fn forged_getinfos_from_the_masters_address_cannot_spend_its_answers() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let master: SocketAddr = "11.0.0.1:27950".parse().expect("address");
        g.set_masters(vec![master]);
        let t = Duration::from_secs(3);
        g.heartbeat_sent(master, "heartbeat0000001", t);
        // Two 21-byte getinfos forged from the master's (public) address...
        for _ in 0..2 {
            let _ = g.judge(master, &mut wire::getinfo("forged12"), t, 0);
        }
        // ...then the master's own, with the heartbeat's nonce.
        let mut real = wire::getinfo_with_nonce("realchal1", "heartbeat0000001");
        let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut real, t, 0) else { panic!("a getinfo") };
        assert!(from_master, "the master's real getinfo fell to the stranger path");
        assert_eq!(g.master_confirmed(master), 1, "only the echoed nonce confirms");
        // Once the master echoed a nonce, forged ones without it are strangers'.
        g.heartbeat_sent(master, "heartbeat0000002", t);
        for _ in 0..200 {
            let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut wire::getinfo("forged12"), t, 0) else {
                continue;
            };
            assert!(!from_master);
        }
        let mut real = wire::getinfo_with_nonce("realchal2", "heartbeat0000002");
        let Verdict::GetInfo { from_master, .. } = g.judge(master, &mut real, t, 0) else { panic!("a getinfo") };
        assert!(from_master);
        // A wrong nonce confirms nothing.
        let mut wrong = wire::getinfo_with_nonce("realchal3", "heartbeat0000009");
        let _ = g.judge(master, &mut wrong, t, 0);
        assert_eq!(g.master_confirmed(master), 2);
    }

    #[test]
    fn extension_messages_from_other_ports_of_a_masters_address_are_dropped() {
        let mut g = Guard::new(OPEN_KEY, 7);
        let master: SocketAddr = "11.0.0.1:27950".parse().expect("address");
        g.set_masters(vec![master]);
        let t = Duration::from_secs(3);
        let intro = arena_master::reach::Reach::PunchIntro {
            client: "11.0.9.9:4000".parse().expect("address"),
            key: "abcdefgh12345678".into(),
        };
        let passed = (0..300u16)
            .filter(|i| {
                let from = SocketAddr::from(([11, 0, 0, 1], 30_000 + i));
                matches!(g.judge(from, &mut intro.encode(), t, 0), Verdict::Reach(_))
            })
            .count();
        assert_eq!(passed, 0, "{passed} of 300 from other ports of the master's address let through");
        assert!(matches!(g.judge(master, &mut intro.encode(), t, 0), Verdict::Reach(_)), "the master's own");
        // The probe and youAre pass from anyone with the check's nonce,
        // a few times; without it, from nobody.
        let probe = arena_master::reach::Reach::Probe { nonce: "checknonce123456".into() };
        let second = SocketAddr::from(([11, 0, 0, 100], 27951));
        assert_eq!(g.judge(second, &mut probe.encode(), t, 0), Verdict::Drop);
        g.expect_reach_nonce(Some("checknonce123456".into()));
        let passed =
            (0..100).filter(|_| matches!(g.judge(second, &mut probe.encode(), t, 0), Verdict::Reach(_))).count();
        assert_eq!(passed, REACH_MESSAGES_PER_CHECK as usize);
    }
}
