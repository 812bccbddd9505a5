//! The client's UDP transport: netcode.io packets over a socket, feeding
//! renet's transport-agnostic `RenetClient`, with the link conditioner
//! between netcode and the socket in both directions.
//!
//! renet_netcode's own client transport hides the socket; this one keeps the
//! datagrams in view so that they can be delayed and dropped on their way,
//! and checks each one from the server before renetcode and renet parse it
//! (a server can be hostile too, or its address forged): the same datagram
//! guard as the server's, and the payload guard before renet.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::collections::BTreeMap;

use arena_protocol::PROTOCOL_ID;
use arena_protocol::bundle::{bundle, unbundle};
use arena_protocol::datagram::{self, Direction, MAX_DATAGRAM_BYTES, Refusal};
use arena_protocol::key::{Password, PasswordError};
use arena_protocol::names::name_to_user_data;
use arena_protocol::payload_guard::PayloadGuard;
use bevy::prelude::*;
use renet::RenetClient;
use renetcode::{ClientAuthentication, ConnectToken, DisconnectReason, NetcodeClient};

use crate::conditioner::{LinkConditioner, LinkConditions};
use crate::hole_punch::Introduction;

/// Silence after which netcode gives up on a connection, seconds.
pub const CONNECTION_TIMEOUT_S: i32 = 10;

/// Longest the client goes without a datagram while connected (acks and
/// reliable messages go out then even with no command to send).
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// How often the summary of dropped datagrams may be logged.
const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

/// The client's socket, netcode state and link conditioner.
#[derive(Resource)]
pub struct UdpTransport {
    socket: UdpSocket,
    netcode: NetcodeClient,
    payloads: PayloadGuard,
    /// Whether the player gave a password (for explaining a refusal).
    gave_password: bool,
    /// Why the server refused us before netcode got going, if it did.
    refusal: Option<Refusal>,
    buffer: Box<[u8; 2048]>,
    conditioner: LinkConditioner,
    /// The transport's clock: the sum of the frame times it was given.
    clock: Duration,
    /// When (on that clock) the last datagram from the server came through.
    last_heard: Duration,
    /// UDP payload bytes through the socket, both ways, since connecting.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// UDP datagrams through the socket, both ways, since connecting.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// What the guard dropped, by reason, since connecting.
    pub dropped: BTreeMap<&'static str, u64>,
    summarised: u64,
    last_summary: Duration,
    /// When a datagram last went to the server (on the transport's clock).
    last_sent: Option<Duration>,
    /// Hole punching through masters, if any are known.
    introduction: Option<Introduction>,
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
    /// conditions and random seed.
    pub fn connect(
        server: SocketAddr,
        name: &str,
        password: &Password,
        conditions: LinkConditions,
        seed: u64,
    ) -> Result<Self, TransportError> {
        let key = password.key().map_err(TransportError::Password)?;
        let any: SocketAddr = if server.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(any).map_err(TransportError::Io)?;
        socket.set_nonblocking(true).map_err(TransportError::Io)?;
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
            Some(&name_to_user_data(name)),
            &key,
        )
        .map_err(|e| TransportError::Netcode(e.to_string()))?;
        let netcode = NetcodeClient::new(now, ClientAuthentication::Secure { connect_token: token })
            .map_err(|e| TransportError::Netcode(e.to_string()))?;
        Ok(Self {
            socket,
            netcode,
            payloads: PayloadGuard::from_server(),
            gave_password: password.is_set(),
            refusal: None,
            buffer: Box::new([0; 2048]),
            conditioner: LinkConditioner::new(conditions, seed),
            clock: Duration::ZERO,
            last_heard: Duration::ZERO,
            bytes_sent: 0,
            bytes_received: 0,
            datagrams_sent: 0,
            datagrams_received: 0,
            dropped: BTreeMap::new(),
            summarised: 0,
            last_summary: Duration::ZERO,
            last_sent: None,
            introduction: None,
        })
    }

    pub fn server_addr(&self) -> SocketAddr {
        self.netcode.server_addr()
    }

    pub fn is_connected(&self) -> bool {
        self.netcode.is_connected()
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

    /// The introduction under way, if any.
    pub fn introduction(&self) -> Option<&Introduction> {
        self.introduction.as_ref()
    }

    /// When every way to the server has failed (nothing heard from it by
    /// `hole_punch::GIVE_UP_AFTER`, masters asked, or sooner when a master
    /// said the host's router defeats punching): why, and what the host can do.
    pub fn unreachable(&self) -> Option<String> {
        let intro = self.introduction.as_ref()?;
        let silent = self.last_heard == Duration::ZERO && !self.netcode.is_connected();
        (silent && intro.gave_up(self.clock)).then(|| intro.advice())
    }

    /// A datagram from a master of the introduction: read, and answered.
    fn read_master_message(&mut self, len: usize, from: SocketAddr) {
        let message = arena_master::reach::Reach::parse(&self.buffer[..len]);
        let heard = self.last_heard > Duration::ZERO || self.netcode.is_connected();
        let reply = match (message, self.introduction.as_mut()) {
            (Some(message), Some(intro)) => intro.receive(from, message, heard),
            _ => {
                self.drop_datagram("not from the server");
                return;
            }
        };
        if let Some((to, datagram)) = reply {
            let _ = self.socket.send_to(&datagram, to);
        }
    }

    fn drop_datagram(&mut self, why: &'static str) {
        *self.dropped.entry(why).or_default() += 1;
    }

    /// Checks one datagram from the server's address before anything parses it.
    fn admit(&mut self, len: usize) -> bool {
        let bytes = &self.buffer[..len];
        if len > MAX_DATAGRAM_BYTES {
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
        self.clock.saturating_sub(self.last_heard)
    }

    pub fn conditions(&self) -> LinkConditions {
        self.conditioner.conditions
    }

    /// Changes the fake latency, jitter and loss from now on.
    pub fn set_conditions(&mut self, conditions: LinkConditions) {
        self.conditioner.conditions = conditions.clamped();
    }

    /// Datagrams the conditioner has dropped: (outgoing, incoming).
    pub fn conditioner_drops(&self) -> (u64, u64) {
        (self.conditioner.outgoing.dropped, self.conditioner.incoming.dropped)
    }

    /// Receives every waiting datagram, lets through those whose (conditioned)
    /// time has come into `client`, and advances netcode's clock (which sends
    /// connection and keep-alive packets as needed).
    pub fn receive(&mut self, dt: Duration, client: &mut RenetClient) -> Result<(), TransportError> {
        self.clock += dt;
        if self.netcode.is_disconnected() {
            client.disconnect_due_to_transport();
            return Ok(());
        }
        if self.netcode.is_connected() {
            client.set_connected();
        } else {
            client.set_connecting();
        }
        let server = self.netcode.server_addr();
        loop {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((len, from)) if from == server => {
                    self.bytes_received += len as u64;
                    self.datagrams_received += 1;
                    if let Some(intro) = self.introduction.as_mut()
                        && arena_master::reach::Reach::parse(&self.buffer[..len])
                            == Some(arena_master::reach::Reach::PunchProbe)
                    {
                        // The server's router is open toward us now.
                        intro.probes = intro.probes.saturating_add(1);
                        continue;
                    }
                    if self.admit(len) {
                        self.conditioner.receive(self.clock, self.buffer[..len].to_vec());
                    }
                }
                Ok((len, from)) if self.introduction.as_ref().is_some_and(|i| i.is_master(from)) => {
                    self.read_master_message(len, from);
                }
                Ok(_) => self.drop_datagram("not from the server"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::ConnectionReset) => {}
                Err(e) => return Err(TransportError::Io(e)),
            }
        }
        while let Some(mut datagram) = self.conditioner.incoming.pop_due(self.clock) {
            self.last_heard = self.clock;
            self.deliver(&mut datagram, client);
        }
        if let Some(intro) = self.introduction.as_mut() {
            let heard = self.last_heard > Duration::ZERO || self.netcode.is_connected();
            for (to, datagram) in intro.due(self.clock, heard) {
                let _ = self.socket.send_to(&datagram, to);
            }
        }
        self.summarise();
        if let Some((packet, _)) = self.netcode.update(dt) {
            self.conditioner.send(self.clock, packet.to_vec());
        }
        self.flush()
    }

    /// Hands a datagram that passed the guard to netcode, which authenticates
    /// and decrypts it, and its payload (after the payload guard) to renet.
    fn deliver(&mut self, datagram: &mut [u8], client: &mut RenetClient) {
        let Some(payload) = self.netcode.process_packet(datagram) else { return };
        let Ok(packets) = unbundle(payload) else {
            *self.dropped.entry("bad bundle").or_default() += 1;
            return;
        };
        for packet in packets {
            match self.payloads.check(packet, self.clock) {
                Ok(()) => client.process_packet(packet),
                Err(why) => *self.dropped.entry(why.label()).or_default() += 1,
            }
        }
    }

    /// A datagram from the server's address, taken straight through the
    /// guard, netcode and renet (no socket, no conditioner). The fuzz
    /// harness drives exactly this path.
    pub fn inject(&mut self, datagram: &[u8], client: &mut RenetClient) {
        let len = datagram.len().min(self.buffer.len());
        self.buffer[..len].copy_from_slice(&datagram[..len]);
        if self.admit(len) {
            let mut datagram = self.buffer[..len].to_vec();
            self.deliver(&mut datagram, client);
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

    /// Queues what renet has to send and sends whatever is due.
    /// With `due` (a command was made this frame), or after
    /// [`FLUSH_INTERVAL`] without sending: everything renet has queued, in one
    /// datagram. Otherwise nothing: no datagram on a frame with nothing to say.
    pub fn send(&mut self, client: &mut RenetClient, due: bool) -> Result<(), TransportError> {
        let waited = self.last_sent.is_none_or(|t| self.clock.saturating_sub(t) >= FLUSH_INTERVAL);
        if self.netcode.is_connected() && (due || waited) {
            let packets = client.get_packets_to_send();
            if !packets.is_empty() {
                self.last_sent = Some(self.clock);
            }
            for payload in bundle(&packets) {
                let (_, packet) = self
                    .netcode
                    .generate_payload_packet(&payload)
                    .map_err(|e| TransportError::Netcode(e.to_string()))?;
                self.conditioner.send(self.clock, packet.to_vec());
            }
        }
        self.flush()
    }

    /// Writes the outgoing datagrams whose time has come to the socket.
    fn flush(&mut self) -> Result<(), TransportError> {
        let server = self.netcode.server_addr();
        while let Some(datagram) = self.conditioner.outgoing.pop_due(self.clock) {
            self.bytes_sent += datagram.len() as u64;
            self.datagrams_sent += 1;
            match self.socket.send_to(&datagram, server) {
                Ok(_) => {}
                // A full socket buffer loses the datagram, as the network would.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(TransportError::Io(e)),
            }
        }
        Ok(())
    }

    /// Tells the server at once that we are leaving (bypassing the conditioner).
    pub fn disconnect(&mut self) {
        if self.netcode.is_disconnected() {
            return;
        }
        // One packet, as renet_netcode does: the server drops (and logs) any
        // copy after the first. If it is lost, the server times us out.
        if let Ok((to, packet)) = self.netcode.disconnect() {
            let _ = self.socket.send_to(packet, to);
        }
    }
}

/// A random number: std's hasher seeds itself from the OS's randomness.
pub fn random_u64() -> u64 {
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}
