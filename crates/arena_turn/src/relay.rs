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
use crate::events::{Event, TurnError};
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Request {
    Allocate,
    /// `Some(0)` deletes the allocation.
    Refresh {
        lifetime: Option<u32>,
    },
    CreatePermission {
        ip: IpAddr,
    },
    ChannelBind {
        channel: u16,
        peer: SocketAddr,
    },
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
    Granted {
        refresh_at: Duration,
    },
    Refused,
}

impl Grant {
    /// Whether a request for it is due at `now`: wanted, or granted and
    /// about to run out.
    fn due(self, now: Duration) -> bool {
        match self {
            Grant::Wanted => true,
            Grant::Granted { refresh_at } => refresh_at <= now,
            Grant::Refused => false,
        }
    }
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
        self.transactions.push(Transaction {
            id,
            request,
            bytes,
            key,
            started: now,
            next_at: now,
            sends: 0,
            auth_retries,
        });
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
            if t.sends == 0 {
                // The round trip counts from when it left, not from when
                // it was asked for (a frame or more before, in a game).
                t.started = now;
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
                // A failed relay sends nothing more, not even this poll's
                // retransmissions of other requests.
                self.fail(TurnError::TimedOut { request: request.name() });
                out.clear();
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
        let permissions =
            self.permissions.iter().filter(|p| p.grant.due(now)).map(|p| Request::CreatePermission { ip: p.ip });
        let channels = self
            .channels
            .iter()
            .filter(|c| c.grant.due(now))
            .map(|c| Request::ChannelBind { channel: c.number, peer: c.peer });
        let due: Vec<Request> = permissions.chain(channels).collect();
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
            Request::Refresh { .. } | Request::CreatePermission { .. } | Request::ChannelBind { .. } if code == 437 => {
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
                if code == 403
                    && let Some(p) = self.permissions.iter_mut().find(|p| p.ip == peer.ip())
                {
                    p.grant = Grant::Refused;
                }
                // Either way the caller hears of it: a peer without its
                // channel is one a caller that speaks ChannelData only
                // cannot reach.
                vec![Event::PermissionRefused { peer_ip: peer.ip(), code }]
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
        self.channels.iter().find(|c| c.peer == peer && matches!(c.grant, Grant::Granted { .. })).map(|c| c.number)
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

    /// Asks the relay for a sign of life now (a Refresh, unless one is under
    /// way): [`Relay::last_heard`] moves if it answers. For a caller that
    /// suspects the relay of having died.
    pub fn refresh_now(&mut self, now: Duration) {
        let refresh = Request::Refresh { lifetime: None };
        if self.phase == Phase::Allocated && !self.pending(refresh) {
            self.start(refresh, now, 0);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = "11.0.0.5:3478";
    const RELAYED: &str = "11.0.0.5:50001";
    const MAPPED: &str = "11.0.0.9:40000";
    const PEER: &str = "11.0.0.6:9000";
    const REALM: &[u8] = b"arena.test";

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn credentials() -> Credentials {
        Credentials { username: "1700000000:player".into(), password: "pw".into() }
    }

    /// A relay played by hand: reads requests, answers them signed with
    /// the key of its realm and current nonce.
    struct Server {
        nonce: Vec<u8>,
        key: [u8; 16],
    }

    impl Server {
        fn new() -> Self {
            Self { nonce: b"nonce-1".to_vec(), key: long_term_key(&credentials().username, REALM, "pw") }
        }

        fn answer(&self, request: &[u8], class: Class, add: impl FnOnce(&mut Builder)) -> Vec<u8> {
            let m = Message::parse(request).expect("a request");
            let mut b = Builder::new(m.method, class, &m.transaction);
            add(&mut b);
            b.finish_with_integrity(&self.key)
        }

        fn challenge(&self, request: &[u8], code: u16) -> Vec<u8> {
            let m = Message::parse(request).expect("a request");
            let mut b = Builder::new(m.method, Class::Error, &m.transaction);
            b.attribute(attr::ERROR_CODE, &error_value(code))
                .attribute(attr::REALM, REALM)
                .attribute(attr::NONCE, &self.nonce);
            b.finish()
        }

        fn error(&self, request: &[u8], code: u16) -> Vec<u8> {
            self.answer(request, Class::Error, |b| {
                b.attribute(attr::ERROR_CODE, &error_value(code));
            })
        }

        fn allocated(&self, request: &[u8], relayed: &str) -> Vec<u8> {
            self.answer(request, Class::Success, |b| {
                b.xor_address(attr::XOR_RELAYED_ADDRESS, relayed.parse().expect("addr"))
                    .xor_address(attr::XOR_MAPPED_ADDRESS, MAPPED.parse().expect("addr"))
                    .u32(attr::LIFETIME, 600);
            })
        }

        fn ok(&self, request: &[u8]) -> Vec<u8> {
            self.answer(request, Class::Success, |_| {})
        }
    }

    fn error_value(code: u16) -> Vec<u8> {
        let mut v = vec![0, 0, (code / 100) as u8, (code % 100) as u8];
        v.extend_from_slice(b"Reason");
        v
    }

    fn data_indication(peer: &str, payload: &[u8]) -> Vec<u8> {
        let mut b = Builder::new(method::DATA, Class::Indication, &[7; 12]);
        b.xor_address(attr::XOR_PEER_ADDRESS, peer.parse().expect("addr")).attribute(attr::DATA, payload);
        b.finish()
    }

    fn one(datagrams: Vec<Vec<u8>>) -> Vec<u8> {
        assert_eq!(datagrams.len(), 1, "one datagram expected");
        datagrams.into_iter().next().expect("one")
    }

    /// A relay taken through 401 to an allocation at t = 0.
    fn allocated() -> (Relay, Server) {
        let server = Server::new();
        let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
        let first = one(relay.poll(secs(0)));
        assert!(relay.receive(&server.challenge(&first, 401), secs(0)).is_empty());
        let signed = one(relay.poll(secs(0)));
        let events = relay.receive(&server.allocated(&signed, RELAYED), secs(0));
        assert_eq!(
            events,
            vec![Event::Allocated {
                relayed: RELAYED.parse().expect("addr"),
                mapped: Some(MAPPED.parse().expect("addr"))
            }]
        );
        (relay, server)
    }

    /// The relay with PEER's IP permitted and granted at t = 0.
    fn permitted() -> (Relay, Server) {
        let (mut relay, server) = allocated();
        relay.permit(PEER.parse::<SocketAddr>().expect("addr").ip());
        let request = one(relay.poll(secs(0)));
        let m = Message::parse(&request).expect("request");
        assert_eq!(m.method, method::CREATE_PERMISSION);
        assert_eq!(m.xor_peer.map(|a| a.ip()), Some(PEER.parse::<SocketAddr>().expect("addr").ip()));
        assert!(relay.receive(&server.ok(&request), secs(0)).is_empty());
        (relay, server)
    }

    #[test]
    fn allocate_is_retried_signed_after_401() {
        let server = Server::new();
        let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
        let first = one(relay.poll(secs(0)));
        let m = Message::parse(&first).expect("request");
        assert_eq!((m.method, m.class), (method::ALLOCATE, Class::Request));
        assert!(!m.has_integrity() && m.username.is_none());
        assert!(relay.receive(&server.challenge(&first, 401), Duration::from_millis(30)).is_empty());
        assert_eq!(relay.round_trip(), Some(Duration::from_millis(30)));
        let signed = one(relay.poll(Duration::from_millis(30)));
        let m = Message::parse(&signed).expect("request");
        assert_eq!(m.username, Some(credentials().username.as_bytes()));
        assert_eq!(m.realm, Some(REALM));
        assert_eq!(m.nonce, Some(&b"nonce-1"[..]));
        assert!(m.integrity_ok(&server.key), "signed with MD5(username:realm:password)");
        assert_ne!(m.transaction, Message::parse(&first).expect("request").transaction);
        assert_eq!(relay.relayed(), None);
        let events = relay.receive(&server.allocated(&signed, RELAYED), secs(1));
        assert!(matches!(events[..], [Event::Allocated { .. }]));
        assert_eq!(relay.relayed(), Some(RELAYED.parse().expect("addr")));
        assert_eq!(relay.last_heard(), Some(secs(1)));
        assert!(relay.poll(secs(1)).is_empty(), "nothing more to send");
    }

    #[test]
    fn forged_and_unsolicited_responses_are_ignored() {
        let server = Server::new();
        let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
        let first = one(relay.poll(secs(0)));
        relay.receive(&server.challenge(&first, 401), secs(0));
        let signed = one(relay.poll(secs(0)));
        // Unsigned, signed with another key, another transaction, another method.
        let m = Message::parse(&signed).expect("request");
        let mut unsigned = Builder::new(method::ALLOCATE, Class::Success, &m.transaction);
        unsigned.xor_address(attr::XOR_RELAYED_ADDRESS, RELAYED.parse().expect("addr"));
        let forger = Server { nonce: b"x".to_vec(), key: [1; 16] };
        let mut other = signed.clone();
        other[8] ^= 1;
        let mut wrong_method = Builder::new(method::REFRESH, Class::Success, &m.transaction);
        wrong_method.xor_address(attr::XOR_RELAYED_ADDRESS, RELAYED.parse().expect("addr"));
        for forged in [
            unsigned.finish(),
            forger.allocated(&signed, RELAYED),
            server.allocated(&other, RELAYED),
            wrong_method.finish_with_integrity(&server.key),
            server.challenge(&other, 401),
            vec![0; 2000],
        ] {
            assert!(relay.receive(&forged, secs(0)).is_empty());
        }
        assert_eq!(relay.relayed(), None);
        assert_eq!(relay.last_heard(), Some(secs(0)), "only the 401 was heard");
        assert!(matches!(relay.receive(&server.allocated(&signed, RELAYED), secs(0))[..], [Event::Allocated { .. }]));
        // The same answer again: its transaction is over.
        assert!(relay.receive(&server.allocated(&signed, RELAYED), secs(0)).is_empty());
    }

    #[test]
    fn wrong_credentials_fail_after_one_signed_try() {
        let server = Server::new();
        let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
        let first = one(relay.poll(secs(0)));
        relay.receive(&server.challenge(&first, 401), secs(0));
        let signed = one(relay.poll(secs(0)));
        let events = relay.receive(&server.challenge(&signed, 401), secs(0));
        assert!(matches!(&events[..], [Event::Failed(TurnError::Refused { code: 401, .. })]));
        assert!(relay.is_failed());
        assert!(relay.poll(secs(100)).is_empty());
    }

    #[test]
    fn quota_and_forbidden_fail_with_the_code_in_words() {
        for code in [486, 403] {
            let server = Server::new();
            let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
            let first = one(relay.poll(secs(0)));
            relay.receive(&server.challenge(&first, 401), secs(0));
            let signed = one(relay.poll(secs(0)));
            let events = relay.receive(&server.error(&signed, code), secs(0));
            let [Event::Failed(error)] = &events[..] else { panic!("{events:?}") };
            assert_eq!(error.code(), Some(code));
            assert!(error.to_string().contains(crate::events::code_in_words(code)), "{error}");
            assert_eq!(relay.failure(), Some(error));
        }
        assert_eq!(
            TurnError::Refused { request: "Allocate", code: 486, reason: "Allocation Quota Reached".into() }
                .to_string(),
            "the relay refused Allocate: 486 allocation quota reached (\"Allocation Quota Reached\")"
        );
    }

    #[test]
    fn retransmissions_follow_the_rfc_schedule_then_fail() {
        let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
        let mut sent = Vec::new();
        for ms in (0..45_000).step_by(100) {
            let now = Duration::from_millis(ms);
            for d in relay.poll(now) {
                sent.push((ms, d));
            }
        }
        let times: Vec<u64> = sent.iter().map(|(ms, _)| *ms).collect();
        assert_eq!(times, [0, 500, 1500, 3500, 7500, 15500, 31500]);
        assert!(sent.windows(2).all(|w| w[0].1 == w[1].1), "the same bytes each time");
        assert!(relay.is_failed());
        assert_eq!(relay.failure(), Some(&TurnError::TimedOut { request: "Allocate" }));
        assert_eq!(relay.round_trip(), None);
    }

    #[test]
    fn the_allocation_is_refreshed_before_its_lifetime_ends() {
        let (mut relay, server) = allocated();
        assert!(relay.poll(secs(539)).is_empty());
        let refresh = one(relay.poll(secs(540)));
        let m = Message::parse(&refresh).expect("request");
        assert_eq!(m.method, method::REFRESH);
        assert!(m.integrity_ok(&server.key));
        assert!(
            relay
                .receive(
                    &server.answer(&refresh, Class::Success, |b| {
                        b.u32(attr::LIFETIME, 600);
                    }),
                    secs(540)
                )
                .is_empty()
        );
        assert!(relay.poll(secs(1079)).is_empty());
        assert_eq!(Message::parse(&one(relay.poll(secs(1080)))).expect("request").method, method::REFRESH);
        assert!(!relay.is_failed());
    }

    #[test]
    fn a_stale_nonce_is_replaced_and_the_request_signed_again() {
        let (mut relay, mut server) = allocated();
        let refresh = one(relay.poll(secs(540)));
        server.nonce = b"nonce-2".to_vec();
        assert!(relay.receive(&server.challenge(&refresh, 438), secs(540)).is_empty());
        let again = one(relay.poll(secs(540)));
        let m = Message::parse(&again).expect("request");
        assert_eq!((m.method, m.nonce), (method::REFRESH, Some(&b"nonce-2"[..])));
        assert!(m.integrity_ok(&server.key));
        assert!(relay.receive(&server.ok(&again), secs(540)).is_empty());
        assert!(!relay.is_failed());
        // Stale again and again: bounded.
        let mut request = one(relay.poll(secs(1080)));
        let mut events = Vec::new();
        for n in 0..10 {
            server.nonce = format!("n{n}").into_bytes();
            events = relay.receive(&server.challenge(&request, 438), secs(1080));
            match relay.poll(secs(1080)).pop() {
                Some(next) => request = next,
                None => break,
            }
        }
        assert!(matches!(&events[..], [Event::Failed(TurnError::Refused { code: 438, .. })]));
    }

    #[test]
    fn allocation_mismatch_on_refresh_allocates_again() {
        let (mut relay, server) = permitted();
        let refresh = one(relay.poll(secs(540)).into_iter().filter(|d| d[1] == 0x04).collect());
        assert!(relay.receive(&server.error(&refresh, 437), secs(540)).is_empty());
        assert_eq!(relay.relayed(), None);
        let allocate = one(relay.poll(secs(540)));
        let m = Message::parse(&allocate).expect("request");
        assert_eq!(m.method, method::ALLOCATE);
        assert!(m.integrity_ok(&server.key), "signed at once with the nonce it has");
        let events = relay.receive(&server.allocated(&allocate, "11.0.0.5:50002"), secs(541));
        assert!(matches!(events[..], [Event::Allocated { relayed, .. }] if relayed.port() == 50002));
        // The permission is asked for again on the new allocation.
        let again = one(relay.poll(secs(541)));
        assert_eq!(Message::parse(&again).expect("request").method, method::CREATE_PERMISSION);
        assert!(!relay.is_permitted(PEER.parse::<SocketAddr>().expect("addr").ip()));
    }

    #[test]
    fn data_only_from_permitted_peers() {
        let (mut relay, _) = allocated();
        let peer_ip = PEER.parse::<SocketAddr>().expect("addr").ip();
        relay.permit(peer_ip);
        // Asked for, not yet granted: nothing is believed.
        assert!(relay.receive(&data_indication(PEER, b"early"), secs(0)).is_empty());
        let request = one(relay.poll(secs(0)));
        let server = Server::new();
        relay.receive(&server.ok(&request), secs(0));
        assert_eq!(
            relay.receive(&data_indication(PEER, b"hi"), secs(1)),
            vec![Event::Data { peer: PEER.parse().expect("addr"), payload: b"hi".to_vec() }]
        );
        assert!(relay.receive(&data_indication("11.0.0.7:9000", b"stranger"), secs(1)).is_empty());
        assert!(relay.receive(&data_indication("[::ffff:11.0.0.6]:9001", b"mapped"), secs(1)).len() == 1);
        // Permission refreshed every 240 s.
        assert!(relay.poll(secs(239)).is_empty());
        let refresh = one(relay.poll(secs(240)));
        assert_eq!(Message::parse(&refresh).expect("request").method, method::CREATE_PERMISSION);
    }

    #[test]
    fn a_refused_permission_is_reported_and_wrap_refuses_the_peer() {
        let (mut relay, server) = allocated();
        relay.permit("11.0.0.7".parse().expect("ip"));
        let request = one(relay.poll(secs(0)));
        let events = relay.receive(&server.error(&request, 403), secs(0));
        assert_eq!(events, vec![Event::PermissionRefused { peer_ip: "11.0.0.7".parse().expect("ip"), code: 403 }]);
        assert_eq!(relay.wrap("11.0.0.7:1".parse().expect("addr"), b"x", secs(0)), None);
        assert!(relay.poll(secs(300)).is_empty(), "not asked again");
        assert!(!relay.is_failed());
    }

    #[test]
    fn channel_bind_then_channel_data_both_ways() {
        let (mut relay, server) = permitted();
        let peer: SocketAddr = PEER.parse().expect("addr");
        // First use: a Send indication, and a ChannelBind started.
        let send = relay.wrap(peer, b"hello", secs(1)).expect("sent");
        let m = Message::parse(&send).expect("indication");
        assert_eq!(
            (m.method, m.class, m.xor_peer, m.data),
            (method::SEND, Class::Indication, Some(peer), Some(&b"hello"[..]))
        );
        let bind = one(relay.poll(secs(1)));
        let m = Message::parse(&bind).expect("request");
        assert_eq!((m.method, m.channel, m.xor_peer), (method::CHANNEL_BIND, Some(0x4000), Some(peer)));
        assert!(m.integrity_ok(&server.key));
        // Still a Send indication until the binding is confirmed.
        assert!(relay.wrap(peer, b"again", secs(1)).expect("sent").len() > 9);
        assert!(relay.poll(secs(1)).is_empty(), "one ChannelBind in flight");
        relay.receive(&server.ok(&bind), secs(1));
        let framed = relay.wrap(peer, b"hello", secs(2)).expect("sent");
        assert_eq!(framed, [&[0x40, 0x00, 0x00, 0x05][..], b"hello"].concat());
        assert_eq!(
            relay.receive(&framed, secs(2)),
            vec![Event::Data { peer, payload: b"hello".to_vec() }],
            "ChannelData from the relay on the bound channel"
        );
        assert!(relay.receive(&channel_data::encode(0x4001, b"nobody"), secs(2)).is_empty());
        // Refreshed every 540 s.
        let due: Vec<u16> = relay.poll(secs(541)).iter().map(|d| Message::parse(d).expect("request").method).collect();
        assert!(due.contains(&method::CHANNEL_BIND), "{due:?}");
        // Too big for one datagram.
        assert_eq!(relay.wrap(peer, &[0; MAX_DATAGRAM - 3], secs(3)), None);
        assert!(relay.wrap(peer, &[0; MAX_DATAGRAM - 4], secs(3)).is_some());
    }

    #[test]
    fn nothing_is_wrapped_before_the_allocation() {
        let mut relay = Relay::new(SERVER.parse().expect("addr"), credentials(), secs(0));
        assert_eq!(relay.wrap(PEER.parse().expect("addr"), b"x", secs(0)), None);
        assert!(relay.receive(&data_indication(PEER, b"x"), secs(0)).is_empty());
    }

    #[test]
    fn close_deletes_the_allocation() {
        let (mut relay, server) = allocated();
        let close = one(relay.close(secs(5)));
        let m = Message::parse(&close).expect("request");
        assert_eq!((m.method, m.lifetime), (method::REFRESH, Some(0)));
        assert!(m.integrity_ok(&server.key));
        assert_eq!(relay.relayed(), None);
        assert!(relay.receive(&server.ok(&close), secs(5)).is_empty());
        assert!(relay.poll(secs(1000)).is_empty());
        assert!(!relay.is_failed());
    }
}
