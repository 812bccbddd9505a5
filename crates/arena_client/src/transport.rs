//! The client's UDP transport: netcode.io packets over the link (the socket,
//! its I/O thread and the conditioner, `link.rs`), feeding renet's
//! transport-agnostic `RenetClient`.
//!
//! renet_netcode's own client transport hides the socket; this one keeps the
//! datagrams in view so that they can be delayed and dropped on their way,
//! and checks each one from the server before renetcode and renet parse it
//! (a server can be hostile too, or its address forged): the same datagram
//! guard as the server's, and the payload guard before renet.
//!
//! Each datagram is handed to renet at its arrival time (renet's clock is
//! moved to it first, so its round trip carries no frame time), and the
//! messages it completes come out with that time: the clock sync, the
//! interpolation delay and the round trip read when a snapshot came, not
//! when the frame that read it began.

use std::collections::{BTreeMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use arena_protocol::PROTOCOL_ID;
use arena_protocol::ack_pace::{self, AckPace};
use arena_protocol::bundle::{bundle, fits_raw, raw_entry, raw_message, unbundle};
use arena_protocol::datagram::{self, Direction, MAX_DATAGRAM_BYTES, Refusal};
use arena_protocol::key::{Password, PasswordError};
use arena_protocol::names::join_user_data;
use arena_protocol::payload_guard::PayloadGuard;
use arena_protocol::wire_anatomy::Anatomy;
use bevy::prelude::*;
use renet::RenetClient;
use renetcode::{ClientAuthentication, ConnectToken, DisconnectReason, NetcodeClient};
// std's clock panics in a browser; web-time's is std's natively.
use web_time::{Instant, SystemTime, UNIX_EPOCH};

use crate::conditioner::LinkConditions;
use crate::hole_punch::Introduction;
use crate::link::{Departure, IoMode, Link, LinkCounters};
use crate::relay::{RelayNews, RelayedPath};

/// Silence after which netcode gives up on a connection, seconds.
pub const CONNECTION_TIMEOUT_S: i32 = 10;

/// Longest the client goes without a datagram while connected (acks and
/// reliable messages go out then even with no command to send).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// How often the summary of dropped datagrams may be logged.
const SUMMARY_PERIOD: Duration = Duration::from_secs(10);
/// Most messages waiting for the game's systems; beyond it the oldest go.
pub const MAX_INBOX: usize = 4096;

/// A message from the server, and when the datagram that completed it came.
#[derive(Debug, Clone)]
pub struct Received {
    pub channel: u8,
    pub bytes: renet::Bytes,
    /// Arrival time on the app's real clock.
    pub at: Duration,
}

/// The client's link, netcode state and the messages that came.
#[derive(Resource)]
pub struct UdpTransport {
    link: Link,
    netcode: NetcodeClient,
    payloads: PayloadGuard,
    /// Where the bytes of the datagrams with a payload went, each way.
    anatomy: (Anatomy, Anatomy),
    /// Whether the player gave a password (for explaining a refusal).
    gave_password: bool,
    /// Why the server refused us before netcode got going, if it did.
    refusal: Option<Refusal>,
    /// The app's real clock at the last receive, and at the first (when
    /// connecting began).
    clock: Duration,
    started: Option<Duration>,
    /// When the last datagram from the server came through, if one has.
    last_heard: Option<Duration>,
    /// The time renet's clock was last moved to (renet counts from zero).
    renet_at: Option<Duration>,
    /// Messages renet gave up, with their arrival times, oldest first.
    inbox: VecDeque<Received>,
    /// What the guard dropped, by reason, since connecting.
    pub dropped: BTreeMap<&'static str, u64>,
    summarised: u64,
    last_summary: Duration,
    /// When a datagram last went to the server.
    last_sent: Option<Duration>,
    /// When renet's packets go with one (see `arena_protocol::ack_pace`).
    ack_pace: AckPace,
    /// Hole punching through masters, if any are known.
    introduction: Option<Introduction>,
    /// The relay, when punching could not get through.
    relay: Option<RelayedPath>,
    /// Why the relay that carried the connection was lost, if it was.
    relay_lost: Option<String>,
}

/// The way through a relay, for the netcode panel and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViaRelay {
    pub turn: SocketAddr,
    /// The round trip to the relay (what it adds, about).
    pub round_trip: Option<Duration>,
}

impl std::fmt::Debug for UdpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpTransport").field("server", &self.netcode.server_addr()).finish()
    }
}

#[derive(Debug)]
pub enum TransportError {
    Io(io::Error),
    Netcode(String),
    Password(PasswordError),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::Io(e) => write!(f, "network error: {e}"),
            TransportError::Netcode(e) => write!(f, "connection error: {e}"),
            TransportError::Password(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TransportError {}

impl UdpTransport {
    /// Opens a socket and starts connecting to `server` as `name` with
    /// `password` (open: none), through a link conditioner with these
    /// conditions and random seed, its I/O once a frame (`IoMode::Frame`)
    /// or on a thread (see [`UdpTransport::start_clock`]).
    pub fn connect(
        server: SocketAddr,
        (name, spectate): (&str, bool),
        password: &Password,
        conditions: LinkConditions,
        seed: u64,
        mode: IoMode,
    ) -> Result<Self, TransportError> {
        let key = password.key().map_err(TransportError::Password)?;
        let link = Link::open(server, conditions, seed, mode).map_err(TransportError::Io)?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        // There is no matchmaking service to sign tokens: the client makes its
        // own, sealed with the game's key (the open key, or the one derived
        // from the password). The server opens it and decides the client id,
        // timeout and expiry itself; what the token says of them is ignored.
        let token = ConnectToken::generate(
            now,
            PROTOCOL_ID,
            300,
            random_u64(),
            CONNECTION_TIMEOUT_S,
            vec![server],
            Some(&join_user_data(name, spectate)),
            &key,
        )
        .map_err(|e| TransportError::Netcode(e.to_string()))?;
        let netcode = NetcodeClient::new(now, ClientAuthentication::Secure { connect_token: token })
            .map_err(|e| TransportError::Netcode(e.to_string()))?;
        Ok(Self {
            link,
            netcode,
            payloads: PayloadGuard::from_server(),
            anatomy: (Anatomy::default(), Anatomy::default()),
            gave_password: password.is_set(),
            refusal: None,
            clock: Duration::ZERO,
            started: None,
            last_heard: None,
            renet_at: None,
            inbox: VecDeque::new(),
            dropped: BTreeMap::new(),
            summarised: 0,
            last_summary: Duration::ZERO,
            last_sent: None,
            ack_pace: AckPace::default(),
            introduction: None,
            relay: None,
            relay_lost: None,
        })
    }

    pub fn server_addr(&self) -> SocketAddr {
        self.netcode.server_addr()
    }

    pub fn is_connected(&self) -> bool {
        self.netcode.is_connected()
    }

    /// Where the app's real clock starts (`Time<Real>::first_update`): the
    /// link's thread counts its times from it.
    pub fn start_clock(&self, epoch: Instant) {
        self.link.start_clock(epoch);
    }

    /// Where the socket is read and written (a thread, or each frame).
    pub fn io_mode(&self) -> IoMode {
        self.link.mode()
    }

    /// Moves the link's datagrams at `now` (the app's real clock), as its
    /// I/O thread would: for an app stepped by hand with [`IoMode::Pumped`].
    pub fn pump_io(&mut self, now: Duration) -> Result<(), TransportError> {
        self.link.pump(now).map_err(TransportError::Io)
    }

    /// What went through the socket since connecting.
    pub fn counters(&self) -> LinkCounters {
        self.link.counters()
    }

    /// Where the bytes of the datagrams with a payload went: down, up.
    pub fn anatomy(&self) -> (Anatomy, Anatomy) {
        self.anatomy
    }

    /// When the command for `tick` first left (see [`Link::departure_of`]).
    pub fn departure_of(&self, tick: u32) -> Option<Duration> {
        self.link.departure_of(tick)
    }

    /// The command datagrams' recent departures, oldest first.
    pub fn departures(&self) -> Vec<Departure> {
        self.link.departures()
    }

    /// The messages that came since the last call, oldest first.
    pub fn take_messages(&mut self) -> VecDeque<Received> {
        std::mem::take(&mut self.inbox)
    }

    pub fn disconnect_reason(&self) -> Option<DisconnectReason> {
        self.netcode.disconnect_reason()
    }

    /// Why the server refused this connection before it started, in words
    /// for the player, if it did.
    pub fn refusal(&self) -> Option<String> {
        self.refusal.map(|r| r.explain(self.gave_password))
    }

    /// Asks these masters for an introduction if the server stays silent
    /// (see `hole_punch.rs`).
    pub fn introduce_through(&mut self, masters: &[SocketAddr]) {
        let introduction = Introduction::new(self.netcode.server_addr(), masters);
        // Masters found later (a lookup by name) join an introduction under
        // way rather than restart it.
        match &mut self.introduction {
            Some(current) => current.add_masters(&introduction),
            None => self.introduction = introduction.has_masters().then_some(introduction),
        }
    }

    /// The relay carrying the connection, once it does.
    pub fn via_relay(&self) -> Option<ViaRelay> {
        let relay = self.relay.as_ref()?;
        relay.route().map(|_| ViaRelay { turn: relay.turn(), round_trip: relay.round_trip() })
    }

    /// Why the relay that carried the connection was lost, if it was.
    pub fn relay_lost(&self) -> Option<&str> {
        self.relay_lost.as_deref()
    }

    /// What the relay said, acted on.
    fn relay_news(&mut self, news: Vec<RelayNews>, at: Duration, client: &mut RenetClient) {
        for item in news {
            match item {
                RelayNews::Relayed(relayed) => {
                    let master = self.relay.as_ref().map(|r| r.master);
                    let reply = match (self.introduction.as_mut(), master) {
                        (Some(intro), Some(master)) => intro.relayed(relayed, master),
                        _ => None,
                    };
                    if let Some((to, datagram)) = reply {
                        self.link.send_direct(to, &datagram);
                    }
                }
                RelayNews::Probe => {
                    if let Some(intro) = self.introduction.as_mut() {
                        intro.probes = intro.probes.saturating_add(1);
                    }
                }
                RelayNews::FromServer(bytes) => {
                    if self.admit(&bytes) {
                        self.last_heard = Some(self.last_heard.map_or(at, |t| t.max(at)));
                        self.advance_renet(at, client);
                        self.deliver(bytes, client, at);
                    }
                }
                RelayNews::Route(route) => {
                    info!(
                        "the relay at {} carries the connection to {} (channel {:#06x})",
                        route.turn,
                        self.server_addr(),
                        route.channel
                    );
                    self.link.set_route(Some(route));
                }
                RelayNews::Failed(why) => {
                    warn!("relay: {why}");
                    if self.link.route().is_some() {
                        self.relay_lost = Some(why.clone());
                    }
                    if let Some(intro) = self.introduction.as_mut() {
                        intro.relay_failed(why);
                    }
                }
            }
        }
    }

    /// The introduction under way, if any.
    pub fn introduction(&self) -> Option<&Introduction> {
        self.introduction.as_ref()
    }

    /// When every way to the server has failed (nothing heard from it by
    /// `hole_punch::GIVE_UP_AFTER`, masters asked, or sooner when a master
    /// said the host's router defeats punching): why, and what the host can do.
    pub fn unreachable(&self) -> Option<String> {
        let intro = self.introduction.as_ref()?;
        let silent = self.last_heard.is_none() && !self.netcode.is_connected();
        let since_connecting = self.clock.saturating_sub(self.started.unwrap_or(self.clock));
        (silent && intro.gave_up(since_connecting)).then(|| intro.advice())
    }

    /// A datagram from a master of the introduction: read, and answered.
    fn read_master_message(&mut self, bytes: &[u8], from: SocketAddr) {
        let message = arena_master::reach::Reach::parse(bytes);
        let heard = self.last_heard.is_some() || self.netcode.is_connected();
        let reply = match (message, self.introduction.as_mut()) {
            (Some(message), Some(intro)) => intro.receive(from, message, heard),
            _ => {
                self.drop_datagram("not from the server");
                return;
            }
        };
        if let Some((to, datagram)) = reply {
            self.link.send_direct(to, &datagram);
        }
    }

    fn drop_datagram(&mut self, why: &'static str) {
        *self.dropped.entry(why).or_default() += 1;
    }

    /// Checks one datagram from the server's address before anything parses it.
    fn admit(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() > MAX_DATAGRAM_BYTES {
            self.drop_datagram("too large");
            return false;
        }
        if datagram::is_connectionless(bytes) {
            // The only connectionless datagram a client takes: a refusal,
            // while it is still asking to connect.
            match Refusal::decode(bytes) {
                Some(refusal) if !self.netcode.is_connected() => self.refusal = Some(refusal),
                _ => self.drop_datagram("connectionless"),
            }
            return false;
        }
        match datagram::check(bytes, Direction::ToClient, PROTOCOL_ID) {
            Ok(_) => true,
            Err(why) => {
                self.drop_datagram(why.label());
                false
            }
        }
    }

    /// How long the server has been silent, as of the last receive.
    pub fn server_silence(&self) -> Duration {
        self.clock.saturating_sub(self.last_heard.or(self.started).unwrap_or(self.clock))
    }

    pub fn conditions(&self) -> LinkConditions {
        self.link.conditions()
    }

    /// Changes the fake latency, jitter and loss from now on.
    pub fn set_conditions(&mut self, conditions: LinkConditions) {
        self.link.set_conditions(conditions);
    }

    /// Datagrams the conditioner has dropped: (outgoing, incoming).
    pub fn conditioner_drops(&self) -> (u64, u64) {
        self.link.conditioner_drops()
    }

    /// Takes the datagrams that came (through the conditioner) into
    /// `client`, each at its arrival time, and advances netcode's clock to
    /// `now`, the app's real clock (which sends connection and keep-alive
    /// packets as needed).
    pub fn receive(&mut self, now: Duration, client: &mut RenetClient) -> Result<(), TransportError> {
        let started = *self.started.get_or_insert(now);
        let dt = now.saturating_sub(self.clock.max(started));
        self.clock = self.clock.max(now);
        if self.netcode.is_disconnected() {
            client.disconnect_due_to_transport();
            return Ok(());
        }
        if self.netcode.is_connected() {
            client.set_connected();
        } else {
            client.set_connecting();
        }
        self.link.pump(now).map_err(TransportError::Io)?;
        let server = self.netcode.server_addr();
        for arrival in self.link.take_arrivals() {
            let bytes = arrival.bytes;
            if arrival.from == server {
                if let Some(intro) = self.introduction.as_mut()
                    && arena_master::reach::Reach::parse(&bytes) == Some(arena_master::reach::Reach::PunchProbe)
                {
                    // The server's router is open toward us now.
                    intro.probes = intro.probes.saturating_add(1);
                    continue;
                }
                if self.admit(&bytes) {
                    self.last_heard = Some(self.last_heard.map_or(arrival.at, |t| t.max(arrival.at)));
                    self.advance_renet(arrival.at, client);
                    self.deliver(bytes, client, arrival.at);
                }
            } else if let Some(relay) = self.relay.as_mut().filter(|r| r.turn() == arrival.from) {
                let news = relay.receive(&bytes, arrival.at);
                self.relay_news(news, arrival.at, client);
            } else if self.introduction.as_ref().is_some_and(|i| i.is_master(arrival.from)) {
                self.read_master_message(&bytes, arrival.from);
            } else {
                self.drop_datagram("not from the server");
            }
        }
        self.advance_renet(now, client);
        if let Some(intro) = self.introduction.as_mut() {
            let heard = self.last_heard.is_some() || self.netcode.is_connected();
            for (to, datagram) in intro.due(self.clock.saturating_sub(started), heard) {
                self.link.send_direct(to, &datagram);
            }
            if let Some(grant) = intro.take_grant() {
                info!("allocating on the relay at {} for {}", grant.turn, self.netcode.server_addr());
                self.relay = Some(RelayedPath::new(grant, self.netcode.server_addr(), now));
            }
        }
        let last_heard = self.last_heard;
        if let Some(relay) = self.relay.as_mut() {
            for datagram in relay.poll(now) {
                self.link.send_direct(relay.turn(), &datagram);
            }
            if let Some(why) = relay.lost(last_heard, now) {
                warn!("relay: {why}");
                self.relay_lost = Some(why);
            } else if let Some(why) = relay.stalled(now) {
                warn!("relay: {why}");
                if let Some(intro) = self.introduction.as_mut() {
                    intro.relay_failed(why);
                }
            }
        }
        self.summarise();
        if let Some((packet, _)) = self.netcode.update(dt) {
            self.link.send_at(now, packet.to_vec(), None);
        }
        self.link.pump(now).map_err(TransportError::Io)
    }

    /// Moves renet's clock forward to `at` (never back).
    fn advance_renet(&mut self, at: Duration, client: &mut RenetClient) {
        match self.renet_at {
            Some(last) if at > last => client.update(at - last),
            Some(_) => return,
            None => {}
        }
        self.renet_at = Some(at);
    }

    /// Hands a datagram that passed the guard to netcode, which authenticates
    /// and decrypts it, and its payload (after the payload guard) to renet;
    /// the messages it completes go to the inbox with its arrival time.
    fn deliver(&mut self, mut datagram: Vec<u8>, client: &mut RenetClient, at: Duration) {
        let datagram_bytes = datagram.len();
        let Some(payload) = self.netcode.process_packet(&mut datagram) else { return };
        self.anatomy.0.add(datagram_bytes, payload);
        let Ok(packets) = unbundle(payload) else {
            *self.dropped.entry("bad bundle").or_default() += 1;
            return;
        };
        for packet in packets {
            if let Some(message) = raw_message(packet) {
                // A snapshot or a tracer outside renet: straight to the inbox.
                if message.is_empty() || message.len() > arena_protocol::codec::MAX_MESSAGE_BYTES {
                    *self.dropped.entry("bad raw message").or_default() += 1;
                    continue;
                }
                if self.inbox.len() >= MAX_INBOX {
                    self.inbox.pop_front();
                    *self.dropped.entry("inbox full").or_default() += 1;
                }
                let channel = arena_protocol::channel::UNRELIABLE;
                self.inbox.push_back(Received { channel, bytes: renet::Bytes::copy_from_slice(message), at });
                continue;
            }
            match self.payloads.check(packet, self.clock) {
                Ok(()) => {
                    self.ack_pace.received(packet);
                    let before = ack_pace::held_by(client);
                    client.process_packet(packet);
                    self.ack_pace.taken_in(before, ack_pace::held_by(client));
                }
                Err(why) => *self.dropped.entry(why.label()).or_default() += 1,
            }
        }
        for channel in [arena_protocol::channel::RELIABLE, arena_protocol::channel::UNRELIABLE] {
            while let Some(bytes) = client.receive_message(channel) {
                if self.inbox.len() >= MAX_INBOX {
                    self.inbox.pop_front();
                    *self.dropped.entry("inbox full").or_default() += 1;
                }
                self.inbox.push_back(Received { channel, bytes, at });
            }
        }
    }

    /// A datagram from the server's address, taken straight through the
    /// guard, netcode and renet (no socket, no conditioner). The fuzz
    /// harness drives exactly this path.
    pub fn inject(&mut self, datagram: &[u8], client: &mut RenetClient) {
        if self.admit(datagram) {
            self.deliver(datagram.to_vec(), client, self.clock);
        }
    }

    /// Logs one line about what was dropped lately, at most every [`SUMMARY_PERIOD`].
    fn summarise(&mut self) {
        if self.clock.saturating_sub(self.last_summary) < SUMMARY_PERIOD {
            return;
        }
        self.last_summary = self.clock;
        let total: u64 = self.dropped.values().sum();
        if total > self.summarised {
            let reasons: Vec<String> = self.dropped.iter().map(|(why, n)| format!("{n} {why}")).collect();
            warn!(
                "dropped {} datagrams from the network lately ({} since connecting)",
                total - self.summarised,
                reasons.join(", ")
            );
            self.summarised = total;
        }
    }

    /// Queues what renet has to send and sends whatever is due, at `now`.
    /// With `due` (commands went out this frame), or after
    /// [`FLUSH_INTERVAL`] without sending: everything renet has queued, in one
    /// datagram. Otherwise nothing: no datagram on a frame with nothing to say.
    pub fn send(&mut self, now: Duration, client: &mut RenetClient, due: bool) -> Result<(), TransportError> {
        let waited = self.last_sent.is_none_or(|t| now.saturating_sub(t) >= FLUSH_INTERVAL);
        if self.netcode.is_connected() && (due || waited) {
            self.send_queued(now, client)?;
        }
        self.link.pump(now).map_err(TransportError::Io)
    }

    /// Everything renet has queued, leaving at `at`.
    pub fn send_queued(&mut self, at: Duration, client: &mut RenetClient) -> Result<(), TransportError> {
        self.send_with(at, client, None, &[])
    }

    /// A command message (whose newest command is the second) and other
    /// unreliable messages riding with it (voice frames), outside renet,
    /// and renet's packets when they are due (see `arena_protocol::ack_pace`;
    /// always in a datagram without a command), leaving at `at`.
    pub fn send_with(
        &mut self,
        at: Duration,
        client: &mut RenetClient,
        command: Option<(&[u8], u32)>,
        riders: &[Vec<u8>],
    ) -> Result<(), TransportError> {
        if !self.netcode.is_connected() {
            return Ok(());
        }
        let mut packets: Vec<Vec<u8>> = command.map(|(bytes, _)| raw_entry(bytes)).into_iter().collect();
        packets.extend(riders.iter().filter(|m| fits_raw(m.len())).map(|m| raw_entry(m)));
        if command.is_none() || self.ack_pace.due(at, ack_pace::held_by(client)) {
            packets.extend(client.get_packets_to_send());
            self.ack_pace.sent(at, ack_pace::held_by(client));
        }
        if !packets.is_empty() {
            self.last_sent = Some(self.last_sent.map_or(at, |t| t.max(at)));
        }
        let newest_command = command.map(|(_, newest)| newest);
        for payload in bundle(&packets) {
            let (_, packet) =
                self.netcode.generate_payload_packet(&payload).map_err(|e| TransportError::Netcode(e.to_string()))?;
            self.anatomy.1.add(packet.len(), &payload);
            self.link.send_at(at, packet.to_vec(), newest_command);
        }
        Ok(())
    }

    /// Deletes the allocation on the relay, if one is held (it would hold one
    /// of the player's few allocations until its lifetime ran out).
    pub fn close_relay(&mut self) {
        if let Some(mut relay) = self.relay.take() {
            for datagram in relay.close(self.clock) {
                self.link.send_direct(relay.turn(), &datagram);
            }
        }
    }

    /// Tells the server at once that we are leaving (bypassing the conditioner).
    pub fn disconnect(&mut self) {
        self.close_relay();
        if self.netcode.is_disconnected() {
            return;
        }
        // One packet, as renet_netcode does: the server drops (and logs) any
        // copy after the first. If it is lost, the server times us out.
        if let Ok((to, packet)) = self.netcode.disconnect() {
            self.link.send_direct(to, packet);
        }
    }
}

/// A random number: std's hasher seeds itself from the OS's randomness.
#[cfg(not(target_arch = "wasm32"))]
pub fn random_u64() -> u64 {
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// A random number: in a browser std's hasher has no randomness to seed from
/// (it takes allocation addresses), so the page's crypto.getRandomValues.
#[cfg(target_arch = "wasm32")]
pub fn random_u64() -> u64 {
    getrandom::u64().unwrap_or_else(|_| std::collections::hash_map::RandomState::new().build_hasher().finish())
}
