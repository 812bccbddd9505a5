//! One allocation on one TURN server as pure state (RFC 8656): the
//! Allocate with its 401 and stale-nonce retries, the transactions and
//! their retransmissions, refreshes of the allocation, permissions and
//! channels, and what the relay forwards from the peers it was told to
//! admit. No socket and no clock: the caller feeds datagrams and the time.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::channel_data::{self, CHANNELS, TurnDatagram, classify};
use crate::credentials::{Credentials, long_term_key};
use crate::message::{Builder, Class, MAX_DATAGRAM, Message, TRANSPORT_UDP, TransactionId, attr, method};

/// RFC 8489 §6.2.1: the first retransmission timeout, the number of sends
/// and the wait after the last one in RTOs (39.5 s in all).
const RTO: Duration = Duration::from_millis(500);
const SENDS: u32 = 7;
const LAST_WAIT_RTOS: u32 = 16;
/// Retries of one request after 401 or 438 (new realm or nonce).
const AUTH_RETRIES: u8 = 3;
/// A permission lasts 300 s (RFC 8656 §9); refreshed after this.
const PERMISSION_REFRESH: Duration = Duration::from_secs(240);
/// A channel binding lasts 600 s (RFC 8656 §12); refreshed after this.
const CHANNEL_REFRESH: Duration = Duration::from_secs(540);
/// The allocation's lifetime when the answer has none (RFC 8656 §3.2).
const DEFAULT_LIFETIME_S: u32 = 600;
/// Peers (IP addresses) and channels one relay keeps.
pub const MAX_PERMISSIONS: usize = 32;
pub const MAX_CHANNELS: usize = 32;

/// Why a relay stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnError {
    /// No answer to a request through its whole retransmission schedule.
    TimedOut { request: &'static str },
    /// An error response: its code and the relay's reason phrase (cleaned,
    /// bounded).
    Refused { request: &'static str, code: u16, reason: String },
    /// A success response missing what it must carry.
    BadAnswer { request: &'static str },
}

impl TurnError {
    /// The STUN error code, if the relay answered with one.
    pub fn code(&self) -> Option<u16> {
        match self {
            TurnError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// An error code in words (RFC 8489 §14.8, RFC 8656 §18).
pub fn code_in_words(code: u16) -> &'static str {
    match code {
        300 => "try alternate server",
        400 => "bad request",
        401 => "unauthorized (credentials refused or expired)",
        403 => "forbidden (the relay denies that peer)",
        420 => "unknown attribute",
        437 => "allocation mismatch (the relay has no such allocation)",
        438 => "stale nonce",
        440 => "address family not supported",
        441 => "wrong credentials",
        442 => "unsupported transport protocol",
        443 => "peer address family mismatch",
        486 => "allocation quota reached",
        500 => "server error",
        508 => "insufficient capacity",
        _ => "error",
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnError::TimedOut { request } => write!(f, "the relay did not answer {request}"),
            TurnError::Refused { request, code, reason } => {
                write!(f, "the relay refused {request}: {code} {}", code_in_words(*code))?;
                if !reason.is_empty() {
                    write!(f, " (\"{reason}\")")?;
                }
                Ok(())
            }
            TurnError::BadAnswer { request } => write!(f, "the relay's answer to {request} is incomplete"),
        }
    }
}

impl std::error::Error for TurnError {}

/// What a datagram from the relay meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An allocation exists (again, after a 437: the address may differ).
    Allocated { relayed: SocketAddr, mapped: Option<SocketAddr> },
    /// A datagram from a permitted peer, relayed.
    Data { peer: SocketAddr, payload: Vec<u8> },
    /// The relay refused a permission (or a channel) for this peer.
    PermissionRefused { peer_ip: IpAddr, code: u16 },
    /// The relay is lost (see [`TurnError`]); nothing more will happen.
    Failed(TurnError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    Allocate,
    /// `Some(0)` deletes the allocation.
    Refresh { lifetime: Option<u32> },
    CreatePermission { ip: IpAddr },
    ChannelBind { channel: u16, peer: SocketAddr },
}

impl Request {
    fn method(self) -> u16 {
        match self {
            Request::Allocate => method::ALLOCATE,
            Request::Refresh { .. } => method::REFRESH,
            Request::CreatePermission { .. } => method::CREATE_PERMISSION,
            Request::ChannelBind { .. } => method::CHANNEL_BIND,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Request::Allocate => "Allocate",
            Request::Refresh { .. } => "Refresh",
            Request::CreatePermission { .. } => "CreatePermission",
            Request::ChannelBind { .. } => "ChannelBind",
        }
    }
}

struct Transaction {
    id: TransactionId,
    request: Request,
    bytes: Vec<u8>,
    /// The key it was signed with, if any: a response must then carry a
    /// MESSAGE-INTEGRITY that checks out under it.
    key: Option<[u8; 16]>,
    started: Duration,
    next_at: Duration,
    sends: u32,
    auth_retries: u8,
}

/// The realm, nonce and long-term key the relay's 401 gave.
struct Auth {
    realm: Vec<u8>,
    nonce: Vec<u8>,
    key: [u8; 16],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Allocating,
    Allocated,
    Closing,
    Closed,
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grant {
    /// Asked for (or to be asked for); the relay has not granted it yet.
    Wanted,
    Granted { refresh_at: Duration },
    Refused,
}

struct Permission {
    ip: IpAddr,
    grant: Grant,
}

struct Channel {
    number: u16,
    peer: SocketAddr,
    grant: Grant,
}

/// One allocation on one TURN server, sans-IO. Call [`Relay::poll`] often
/// (every frame, or at least every RTO) and after each
/// [`Relay::receive`]; send what it returns to the relay.
pub struct Relay {
    server: SocketAddr,
    credentials: Credentials,
    ids: RandomState,
    next_id: u64,
    auth: Option<Auth>,
    phase: Phase,
    failure: Option<TurnError>,
    relayed: Option<SocketAddr>,
    refresh_at: Option<Duration>,
    permissions: Vec<Permission>,
    channels: Vec<Channel>,
    /// Channel numbers handed out so far (never reused for another peer).
    next_channel: u16,
    transactions: Vec<Transaction>,
    round_trip: Option<Duration>,
    last_heard: Option<Duration>,
}

impl fmt::Debug for Relay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relay")
            .field("server", &self.server)
            .field("phase", &self.phase)
            .field("relayed", &self.relayed)
            .field("permissions", &self.permissions.len())
            .field("channels", &self.channels.len())
            .field("transactions", &self.transactions.len())
            .finish()
    }
}

fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

fn canonical_addr(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(canonical(addr.ip()), addr.port())
}

impl Relay {
    /// Starts allocating on `turn_server`: the first [`Relay::poll`] sends
    /// the Allocate.
    pub fn new(turn_server: SocketAddr, credentials: Credentials, now: Duration) -> Self {
        let mut relay = Self {
            server: turn_server,
            credentials,
            ids: RandomState::new(),
            next_id: 0,
            auth: None,
            phase: Phase::Allocating,
            failure: None,
            relayed: None,
            refresh_at: None,
            permissions: Vec::new(),
            channels: Vec::new(),
            next_channel: *CHANNELS.start(),
            transactions: Vec::new(),
            round_trip: None,
            last_heard: None,
        };
        relay.start(Request::Allocate, now, 0);
        relay
    }

    /// The relay's address (the caller sends there and only believes
    /// datagrams from there).
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// The relayed address peers send to, once allocated.
    pub fn relayed(&self) -> Option<SocketAddr> {
        self.relayed.filter(|_| self.phase == Phase::Allocated)
    }

    /// The smoothed round trip of transactions answered at the first send.
    pub fn round_trip(&self) -> Option<Duration> {
        self.round_trip
    }

    /// When the last authentic datagram from the relay came.
    pub fn last_heard(&self) -> Option<Duration> {
        self.last_heard
    }

    pub fn is_failed(&self) -> bool {
        self.phase == Phase::Failed
    }

    /// Why the relay failed (a timeout is found by [`Relay::poll`], which
    /// returns datagrams only: check here after it).
    pub fn failure(&self) -> Option<&TurnError> {
        self.failure.as_ref()
    }

    /// Whether datagrams and ChannelData from `peer_ip` are believed (the
    /// relay granted its permission).
    pub fn is_permitted(&self, peer_ip: IpAddr) -> bool {
        let ip = canonical(peer_ip);
        self.permissions.iter().any(|p| p.ip == ip && matches!(p.grant, Grant::Granted { .. }))
    }

    /// Asks the relay to admit datagrams from `peer_ip` (any port), and
    /// keeps the permission refreshed. At most [`MAX_PERMISSIONS`] peers;
    /// a refused peer stays refused.
    pub fn permit(&mut self, peer_ip: IpAddr) {
        let ip = canonical(peer_ip);
        if self.permissions.len() < MAX_PERMISSIONS && !self.permissions.iter().any(|p| p.ip == ip) {
            self.permissions.push(Permission { ip, grant: Grant::Wanted });
        }
    }

    fn new_id(&mut self) -> TransactionId {
        self.next_id = self.next_id.wrapping_add(1);
        let a = self.ids.hash_one((self.next_id, 0u8)).to_be_bytes();
        let b = self.ids.hash_one((self.next_id, 1u8)).to_be_bytes();
        let mut id = [0; 12];
        id[..8].copy_from_slice(&a);
        id[8..].copy_from_slice(&b[..4]);
        id
    }

    fn encode(&self, request: Request, id: &TransactionId) -> (Vec<u8>, Option<[u8; 16]>) {
        let mut b = Builder::new(request.method(), Class::Request, id);
        match request {
            Request::Allocate => {
                b.attribute(attr::REQUESTED_TRANSPORT, &[TRANSPORT_UDP, 0, 0, 0]);
            }
            Request::Refresh { lifetime } => {
                if let Some(lifetime) = lifetime {
                    b.u32(attr::LIFETIME, lifetime);
                }
            }
            Request::CreatePermission { ip } => {
                b.xor_address(attr::XOR_PEER_ADDRESS, SocketAddr::new(ip, 0));
            }
            Request::ChannelBind { channel, peer } => {
                b.u32(attr::CHANNEL_NUMBER, u32::from(channel) << 16).xor_address(attr::XOR_PEER_ADDRESS, peer);
            }
        }
        match &self.auth {
            Some(auth) => {
                b.attribute(attr::USERNAME, self.credentials.username.as_bytes())
                    .attribute(attr::REALM, &auth.realm)
                    .attribute(attr::NONCE, &auth.nonce);
                (b.finish_with_integrity(&auth.key), Some(auth.key))
            }
            None => (b.finish(), None),
        }
    }

    /// Starts a transaction; the next poll sends it.
    fn start(&mut self, request: Request, now: Duration, auth_retries: u8) {
        self.transactions.retain(|t| t.request != request);
        let id = self.new_id();
        let (bytes, key) = self.encode(request, &id);
        self.transactions.push(Transaction { id, request, bytes, key, started: now, next_at: now, sends: 0, auth_retries });
    }

    fn pending(&self, request: Request) -> bool {
        self.transactions.iter().any(|t| t.request == request)
    }

    fn fail(&mut self, error: TurnError) -> Event {
        self.phase = Phase::Failed;
        self.transactions.clear();
        self.relayed = None;
        self.failure = Some(error.clone());
        Event::Failed(error)
    }

    /// The datagrams to send to the relay now: new requests (the Allocate,
    /// refreshes before the allocation, a permission or a channel runs
    /// out, permissions and channel bindings asked for) and
    /// retransmissions. A request unanswered after its last
    /// retransmission fails the relay ([`Relay::failure`]).
    pub fn poll(&mut self, now: Duration) -> Vec<Vec<u8>> {
        if self.phase == Phase::Allocated {
            self.schedule(now);
        }
        let mut out = Vec::new();
        let mut timed_out = None;
        for t in &mut self.transactions {
            if now < t.next_at {
                continue;
            }
            if t.sends >= SENDS {
                timed_out = Some(t.request);
                continue;
            }
            out.push(t.bytes.clone());
            t.sends += 1;
            let wait = if t.sends == SENDS { RTO * LAST_WAIT_RTOS } else { RTO * (1 << (t.sends - 1)) };
            t.next_at = now + wait;
        }
        if let Some(request) = timed_out {
            if self.phase == Phase::Closing {
                self.phase = Phase::Closed;
                self.transactions.clear();
            } else {
                self.fail(TurnError::TimedOut { request: request.name() });
            }
        }
        out
    }

    /// Starts the refreshes and grants that are due.
    fn schedule(&mut self, now: Duration) {
        let refresh = Request::Refresh { lifetime: None };
        if self.refresh_at.is_some_and(|at| at <= now) && !self.pending(refresh) {
            self.start(refresh, now, 0);
        }
        let mut due = Vec::new();
        for p in &self.permissions {
            let wanted = match p.grant {
                Grant::Wanted => true,
                Grant::Granted { refresh_at } => refresh_at <= now,
                Grant::Refused => false,
            };
            if wanted {
                due.push(Request::CreatePermission { ip: p.ip });
            }
        }
        for c in &self.channels {
            let wanted = match c.grant {
                Grant::Wanted => true,
                Grant::Granted { refresh_at } => refresh_at <= now,
                Grant::Refused => false,
            };
            if wanted {
                due.push(Request::ChannelBind { channel: c.number, peer: c.peer });
            }
        }
        for request in due {
            if !self.pending(request) {
                self.start(request, now, 0);
            }
        }
    }

    /// Reads a datagram from the relay (the caller checked that it came
    /// from [`Relay::server`]). Responses count only when they answer a
    /// request in flight, with the same method, and (for signed requests)
    /// carry a MESSAGE-INTEGRITY that checks out; data counts only from
    /// peers whose permission the relay granted. Everything else is
    /// ignored. Call [`Relay::poll`] afterwards: an answer may start a
    /// request (a retry with a new nonce, a reallocation).
    pub fn receive(&mut self, datagram: &[u8], now: Duration) -> Vec<Event> {
        if datagram.len() > MAX_DATAGRAM || matches!(self.phase, Phase::Closed | Phase::Failed) {
            return Vec::new();
        }
        match classify(datagram) {
            Some(TurnDatagram::ChannelData) => self.channel_data(datagram, now).into_iter().collect(),
            Some(TurnDatagram::Stun) => match Message::parse(datagram) {
                Some(m) if m.class == Class::Indication => self.indication(&m, now).into_iter().collect(),
                Some(m) if matches!(m.class, Class::Success | Class::Error) => self.response(&m, now),
                _ => Vec::new(),
            },
            None => Vec::new(),
        }
    }

    fn channel_data(&mut self, datagram: &[u8], now: Duration) -> Option<Event> {
        if self.phase != Phase::Allocated {
            return None;
        }
        let (number, data) = channel_data::parse(datagram)?;
        let channel = self.channels.iter().find(|c| c.number == number && c.grant != Grant::Refused)?;
        let peer = channel.peer;
        if !self.is_permitted(peer.ip()) {
            return None;
        }
        self.last_heard = Some(now);
        Some(Event::Data { peer, payload: data.to_vec() })
    }

    fn indication(&mut self, m: &Message<'_>, now: Duration) -> Option<Event> {
        if self.phase != Phase::Allocated || m.method != method::DATA {
            return None;
        }
        let peer = canonical_addr(m.xor_peer?);
        let data = m.data?;
        if !self.is_permitted(peer.ip()) {
            return None;
        }
        self.last_heard = Some(now);
        Some(Event::Data { peer, payload: data.to_vec() })
    }

    fn response(&mut self, m: &Message<'_>, now: Duration) -> Vec<Event> {
        let Some(index) = self.transactions.iter().position(|t| t.id == m.transaction) else { return Vec::new() };
        let t = &self.transactions[index];
        if t.request.method() != m.method || m.unknown_required {
            return Vec::new();
        }
        if let Some(key) = t.key {
            let signed_ok = m.integrity_ok(&key);
            if (m.class == Class::Success || m.has_integrity()) && !signed_ok {
                return Vec::new();
            }
        }
        let t = self.transactions.swap_remove(index);
        self.last_heard = Some(now);
        if t.sends == 1 {
            let sample = now.saturating_sub(t.started);
            self.round_trip = Some(match self.round_trip {
                Some(rtt) => (rtt * 7 + sample) / 8,
                None => sample,
            });
        }
        match m.class {
            Class::Success => self.success(&t, m, now),
            _ => self.error(&t, m, now),
        }
    }

    fn success(&mut self, t: &Transaction, m: &Message<'_>, now: Duration) -> Vec<Event> {
        match t.request {
            Request::Allocate => {
                let Some(relayed) = m.xor_relayed else {
                    return vec![self.fail(TurnError::BadAnswer { request: t.request.name() })];
                };
                self.phase = Phase::Allocated;
                self.relayed = Some(relayed);
                self.refresh_at = Some(t.started + refresh_after(m.lifetime.unwrap_or(DEFAULT_LIFETIME_S)));
                self.schedule(now);
                vec![Event::Allocated { relayed, mapped: m.xor_mapped }]
            }
            Request::Refresh { lifetime: Some(0) } => {
                self.phase = Phase::Closed;
                self.transactions.clear();
                Vec::new()
            }
            Request::Refresh { .. } => {
                if self.phase == Phase::Allocated {
                    self.refresh_at = Some(t.started + refresh_after(m.lifetime.unwrap_or(DEFAULT_LIFETIME_S)));
                }
                Vec::new()
            }
            Request::CreatePermission { ip } => {
                self.grant_permission(ip, t.started + PERMISSION_REFRESH);
                Vec::new()
            }
            Request::ChannelBind { channel, peer } => {
                if let Some(c) = self.channels.iter_mut().find(|c| c.number == channel && c.peer == peer) {
                    c.grant = Grant::Granted { refresh_at: t.started + CHANNEL_REFRESH };
                }
                // A binding installs (or refreshes) the peer's permission.
                if !self.is_permitted(peer.ip()) {
                    self.grant_permission(peer.ip(), t.started + PERMISSION_REFRESH);
                }
                Vec::new()
            }
        }
    }

    fn grant_permission(&mut self, ip: IpAddr, refresh_at: Duration) {
        if let Some(p) = self.permissions.iter_mut().find(|p| p.ip == ip && p.grant != Grant::Refused) {
            p.grant = Grant::Granted { refresh_at };
        }
    }

    fn error(&mut self, t: &Transaction, m: &Message<'_>, now: Duration) -> Vec<Event> {
        let (code, reason) = match &m.error {
            Some(e) => (e.code, e.reason.clone()),
            None => (400, String::new()),
        };
        let refused = TurnError::Refused { request: t.request.name(), code, reason };
        // A new realm or nonce: sign again and retry, a bounded number of times.
        if (code == 401 || code == 438) && t.auth_retries < AUTH_RETRIES {
            let realm = m.realm.map(<[u8]>::to_vec).or_else(|| self.auth.as_ref().map(|a| a.realm.clone()));
            if let (Some(realm), Some(nonce)) = (realm, m.nonce) {
                // A 401 to a request that was already signed with this very
                // nonce means the credentials themselves are refused.
                let same = self.auth.as_ref().is_some_and(|a| a.nonce == nonce && a.realm == realm);
                if !(code == 401 && t.key.is_some() && same) {
                    let key = long_term_key(&self.credentials.username, &realm, &self.credentials.password);
                    self.auth = Some(Auth { realm, nonce: nonce.to_vec(), key });
                    self.start(t.request, now, t.auth_retries + 1);
                    return Vec::new();
                }
            }
        }
        match t.request {
            Request::Refresh { lifetime: Some(0) } => {
                self.phase = Phase::Closed;
                self.transactions.clear();
                Vec::new()
            }
            Request::Allocate => vec![self.fail(refused)],
            Request::Refresh { .. } | Request::CreatePermission { .. } | Request::ChannelBind { .. }
                if code == 437 =>
            {
                self.reallocate(now);
                Vec::new()
            }
            Request::Refresh { .. } => vec![self.fail(refused)],
            Request::CreatePermission { ip } => {
                if let Some(p) = self.permissions.iter_mut().find(|p| p.ip == ip) {
                    p.grant = Grant::Refused;
                }
                vec![Event::PermissionRefused { peer_ip: ip, code }]
            }
            Request::ChannelBind { channel, peer } => {
                if let Some(c) = self.channels.iter_mut().find(|c| c.number == channel) {
                    c.grant = Grant::Refused;
                }
                if code == 403 {
                    if let Some(p) = self.permissions.iter_mut().find(|p| p.ip == peer.ip()) {
                        p.grant = Grant::Refused;
                    }
                    vec![Event::PermissionRefused { peer_ip: peer.ip(), code }]
                } else {
                    // The peer stays reachable through Send indications.
                    Vec::new()
                }
            }
        }
    }

    /// The relay lost the allocation (437, a restart): allocate again;
    /// permissions and channels are asked for again once it exists.
    fn reallocate(&mut self, now: Duration) {
        self.phase = Phase::Allocating;
        self.relayed = None;
        self.refresh_at = None;
        self.transactions.clear();
        for p in &mut self.permissions {
            if matches!(p.grant, Grant::Granted { .. }) {
                p.grant = Grant::Wanted;
            }
        }
        for c in &mut self.channels {
            if matches!(c.grant, Grant::Granted { .. }) {
                c.grant = Grant::Wanted;
            }
        }
        self.start(Request::Allocate, now, 0);
    }

    /// The channel bound to `peer`, once the relay granted it: datagrams
    /// to `peer` may go as ChannelData on it (see [`crate::frame_channel_data`]).
    pub fn bound_channel(&self, peer: SocketAddr) -> Option<u16> {
        let peer = canonical_addr(peer);
        self.channels
            .iter()
            .find(|c| c.peer == peer && matches!(c.grant, Grant::Granted { .. }))
            .map(|c| c.number)
    }

    /// `payload` for `peer` through the relay: ChannelData (4 bytes more)
    /// if a channel to `peer` is bound, else a Send indication. The first
    /// use of a peer asks for its permission and a channel. `None` before
    /// the allocation exists, for a refused peer, when the peer table is
    /// full, or when the result would exceed [`MAX_DATAGRAM`].
    pub fn wrap(&mut self, peer: SocketAddr, payload: &[u8], now: Duration) -> Option<Vec<u8>> {
        if self.phase != Phase::Allocated {
            return None;
        }
        let peer = canonical_addr(peer);
        self.permit(peer.ip());
        let permission = self.permissions.iter().find(|p| p.ip == peer.ip())?;
        if permission.grant == Grant::Refused {
            return None;
        }
        match self.channels.iter().find(|c| c.peer == peer) {
            Some(c) if matches!(c.grant, Grant::Granted { .. }) => {
                return (payload.len() + channel_data::HEADER_LEN <= MAX_DATAGRAM)
                    .then(|| channel_data::encode(c.number, payload));
            }
            Some(_) => {}
            None => {
                if self.channels.len() < MAX_CHANNELS && CHANNELS.contains(&self.next_channel) {
                    let number = self.next_channel;
                    self.next_channel += 1;
                    self.channels.push(Channel { number, peer, grant: Grant::Wanted });
                    self.start(Request::ChannelBind { channel: number, peer }, now, 0);
                }
            }
        }
        // Send indication: header, XOR-PEER-ADDRESS, DATA (padded).
        let address_len = if peer.is_ipv4() { 12 } else { 24 };
        if 20 + address_len + 4 + payload.len().div_ceil(4) * 4 > MAX_DATAGRAM {
            return None;
        }
        let id = self.new_id();
        let mut b = Builder::new(method::SEND, Class::Indication, &id);
        b.xor_address(attr::XOR_PEER_ADDRESS, peer).attribute(attr::DATA, payload);
        Some(b.finish())
    }

    /// Deletes the allocation (Refresh with lifetime 0); keep polling for
    /// its retransmissions if the relay should learn it at once, else let
    /// it lapse.
    pub fn close(&mut self, now: Duration) -> Vec<Vec<u8>> {
        match self.phase {
            Phase::Allocated => {
                self.transactions.clear();
                self.phase = Phase::Closing;
                self.relayed = None;
                self.start(Request::Refresh { lifetime: Some(0) }, now, 0);
                self.poll(now)
            }
            Phase::Allocating => {
                self.transactions.clear();
                self.phase = Phase::Closed;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

/// When to refresh an allocation granted for `lifetime_s`: a minute early,
/// or half way for short ones.
fn refresh_after(lifetime_s: u32) -> Duration {
    let lifetime = Duration::from_secs(u64::from(lifetime_s.max(2)));
    if lifetime >= Duration::from_secs(120) { lifetime - Duration::from_secs(60) } else { lifetime / 2 }
}
