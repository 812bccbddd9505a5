//! The server's UDP socket and netcode layer: binding, the addresses clients
//! can use, and the datagram guard in front of netcode and renet.
//!
//! renet_netcode's server transport hands every datagram straight to
//! renetcode; this one passes each through the [`Guard`] first (see
//! `guard.rs`), and each authenticated payload through it again before renet.
//! It also drops clients that fall silent, and those that keep sending bad
//! messages.
//!
//! One socket takes both address families (bound to `[::]` by default, see
//! `arena_udp`): everything above it sees IPv4 peers as IPv4, and each
//! send maps the address back to the socket's family.
//!
//! What the socket answers on its own is encoded in `answers.rs`; its
//! traffic with masters (heartbeats, the extension's messages handed on) is
//! in `master_traffic.rs`, and its last word to them in `farewell.rs`.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

// std's clock panics in a browser (the in-page server); web-time's is std's natively.
use web_time::{SystemTime, UNIX_EPOCH};

use arena_master::wire::InfoString;
use arena_protocol::PROTOCOL_ID;
use arena_protocol::ack_pace::{self, AckPace};
use arena_protocol::bundle::{bundle, fits_raw, raw_entry, raw_message, unbundle};
use arena_protocol::datagram::{MAX_DATAGRAM_BYTES, PacketKind};
use arena_protocol::key::NetcodeKey;
use arena_protocol::names::USER_DATA_BYTES;
use arena_protocol::query::{PlayerEntry, ServerListing};
use arena_udp::UdpSocket;
use bevy::prelude::*;
use bevy_renet::renet::{self, ClientId};
use bevy_renet::{RenetReceive, RenetSend, RenetServer, RenetServerPlugin};
use renetcode::{NetcodeServer, ServerAuthentication, ServerConfig as NetcodeConfig, ServerResult};

use super::answers::Answers;
use super::drops::GuardCounters;
use super::guard::{Guard, SILENT_CLIENT_TIMEOUT, Verdict};
use crate::vocabulary::{DueClients, UnreliableOut};

/// Raw messages (commands outside renet) kept per client for intake: a
/// frame's worth many times over.
const MAX_RAW_WAITING: usize = 64;

/// Longest a client goes without a datagram while it is connected: acks and
/// reliable messages that no snapshot carried go out then.
pub(crate) const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        PreUpdate,
        receive
            .in_set(RenetReceive)
            .after(RenetServerPlugin::update_system)
            .before(RenetServerPlugin::emit_server_events_system),
    )
    .init_resource::<DueClients>()
    .init_resource::<UnreliableOut>()
    .add_systems(PostUpdate, send.in_set(RenetSend))
    .add_systems(Last, disconnect_on_exit);
}

/// Bytes and datagrams through the socket, each way (UDP payloads: netcode
/// and renet headers included, IP and UDP headers not).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    /// Sends the socket refused (a full buffer: lost, as the network would lose them).
    pub send_errors: u64,
}

/// The server's socket, netcode state and guard.
#[derive(Resource)]
pub struct ServerTransport {
    pub(super) socket: UdpSocket,
    /// Whether the socket is IPv6 (then IPv4 peers are mapped on it).
    socket_v6: bool,
    netcode: NetcodeServer,
    pub(super) guard: Guard,
    pub(super) buffer: Box<[u8; 2048]>,
    /// The transport's clock: the sum of the frame times it was given.
    pub(super) clock: Duration,
    /// When each client was last sent to.
    last_sent: std::collections::HashMap<ClientId, Duration>,
    /// When renet's packets go to each client (see `arena_protocol::ack_pace`).
    ack_pace: std::collections::HashMap<ClientId, AckPace>,
    /// Each client's unreliable messages that came outside renet (its
    /// commands), for intake; at most [`MAX_RAW_WAITING`] each.
    raw_inbox: std::collections::HashMap<ClientId, std::collections::VecDeque<Vec<u8>>>,
    pub(super) answers: Answers,
    /// Master-extension datagrams from masters' addresses, not yet read
    /// (see `internet/master_messages.rs`); at most [`MAX_REACH_INBOX`].
    pub(super) reach_inbox: Vec<(SocketAddr, arena_master::reach::Reach)>,
    /// How each client that went since the roster last looked went, so
    /// that the log says it in words (renet calls every one of them
    /// "terminated by the transport layer"); at most [`MAX_PARTINGS`].
    partings: std::collections::HashMap<ClientId, Parting>,
    pub traffic: Traffic,
    /// The remote console's gate: every rcon datagram is judged there.
    pub(crate) rcon: super::remote_console::RconGate,
    /// Remote console commands whose MAC checked, not yet taken by the
    /// console: sender, challenge, command; at most [`MAX_RCON_INBOX`].
    pub(crate) rcon_inbox: Vec<(SocketAddr, arena_protocol::rcon::Challenge, String)>,
    /// When the remote console's refusals were last summed up in the log.
    rcon_summarised_at: Duration,
    /// Browsers' sessions (`--web`): peers beside the socket's, whose
    /// datagrams take the same path; `None` without an endpoint.
    web: Option<Box<dyn arena_udp::WebLink>>,
    /// Datagrams taken from the web link, reused frame to frame.
    web_inbox: Vec<(SocketAddr, Vec<u8>)>,
    /// The real address behind each browser client netcode holds (kept
    /// while the client is, so that a ban still finds it after the session
    /// went): at most one per client.
    web_origins: std::collections::HashMap<SocketAddr, SocketAddr>,
}

/// Remote console commands waiting for the console at most (the gate's
/// rate limit keeps far below it).
const MAX_RCON_INBOX: usize = 16;
/// How often the remote console's refusals are summed up in the log.
const RCON_SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// How a client's connection ended, as the transport saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parting {
    /// It said goodbye (netcode's disconnect packet): a normal leave.
    Left,
    /// Nothing came from it for [`SILENT_CLIENT_TIMEOUT`].
    TimedOut,
    /// It kept sending bad messages and was disconnected.
    BadMessages,
}

/// Partings kept for the roster to read, at most (it reads them the frame
/// they happen; this only bounds a roster that never looks).
const MAX_PARTINGS: usize = 1024;

/// Master-extension datagrams kept between two reads, at most (the rest is
/// dropped: a master sends a handful).
const MAX_REACH_INBOX: usize = 256;

impl std::fmt::Debug for ServerTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTransport").field("clients", &self.netcode.connected_clients()).finish()
    }
}

impl ServerTransport {
    /// A transport on `socket` for a game with this key (see
    /// [`arena_protocol::key`]) and at most `max_clients` clients.
    pub fn new(socket: UdpSocket, key: NetcodeKey, max_clients: usize) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        let netcode = NetcodeServer::new(NetcodeConfig {
            current_time: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO),
            max_clients,
            protocol_id: PROTOCOL_ID,
            // Unused in this mode: the guard has already checked the token.
            public_addresses: Vec::new(),
            // Netcode sees only tokens the guard has opened with the real key
            // and sealed again with the open one (see `guard.rs`).
            authentication: ServerAuthentication::Unsecure,
        });
        Ok(Self {
            socket_v6: arena_udp::is_v6(&socket),
            socket,
            netcode,
            guard: Guard::new(key, PROTOCOL_ID),
            buffer: Box::new([0; 2048]),
            clock: Duration::ZERO,
            last_sent: std::collections::HashMap::new(),
            ack_pace: std::collections::HashMap::new(),
            raw_inbox: std::collections::HashMap::new(),
            partings: std::collections::HashMap::new(),
            answers: Answers::default(),
            reach_inbox: Vec::new(),
            traffic: Traffic::default(),
            rcon: super::remote_console::RconGate::new(None),
            rcon_inbox: Vec::new(),
            rcon_summarised_at: Duration::ZERO,
            web: None,
            web_inbox: Vec::new(),
            web_origins: std::collections::HashMap::new(),
        })
    }

    /// Opens the remote console with the key of its password (none: every
    /// rcon request is refused, within the same limits).
    pub fn set_rcon_key(&mut self, key: Option<arena_protocol::rcon::RconKey>) {
        self.rcon = super::remote_console::RconGate::new(key);
    }

    /// The remote console's counters (what it ran and what it refused).
    pub fn rcon_counters(&self) -> super::remote_console::RconCounters {
        self.rcon.counters()
    }

    /// Sends the answer to a remote console command run under `challenge`.
    pub(crate) fn send_rcon_answer(&mut self, to: SocketAddr, challenge: &arena_protocol::rcon::Challenge, text: &str) {
        for datagram in self.rcon.answer(challenge, text) {
            self.send_to(&datagram, to);
        }
    }

    /// Browsers' sessions from now on: their datagrams come in beside the
    /// socket's, through the same guard, and go out through `link`.
    pub fn attach_web(&mut self, link: Box<dyn arena_udp::WebLink>) {
        self.web = Some(link);
    }

    /// What the browsers' endpoint carried and dropped (`None`: no `--web`).
    pub fn web_counts(&self) -> Option<arena_udp::WebCounts> {
        self.web.as_ref().map(|web| web.counts())
    }

    /// A client's address as the log and `status` show it: a browser
    /// player's real address, marked `(web)`.
    pub fn client_label(&self, client_id: ClientId) -> Option<String> {
        let addr = self.client_addr(client_id)?;
        Some(self.peer_label(addr))
    }

    /// A peer's address as the log shows it (see [`Self::client_label`]).
    pub fn peer_label(&self, addr: SocketAddr) -> String {
        if arena_udp::is_web_peer(addr.ip()) {
            let real = self.web_origins.get(&addr).copied().or_else(|| self.web.as_ref().and_then(|w| w.origin(addr)));
            match real {
                Some(real) => format!("{real} (web)"),
                None => "a closed web session".to_string(),
            }
        } else {
            addr.to_string()
        }
    }

    /// The name data a connected client's token carried.
    pub fn user_data(&self, client_id: ClientId) -> Option<[u8; USER_DATA_BYTES]> {
        self.netcode.user_data(client_id)
    }

    pub fn client_addr(&self, client_id: ClientId) -> Option<SocketAddr> {
        self.netcode.client_addr(client_id)
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Whether joining needs a password.
    pub fn has_password(&self) -> bool {
        self.guard.has_password()
    }

    /// New connections need `key` from now on (the console's `sv_password`).
    pub fn set_key(&mut self, key: arena_protocol::key::NetcodeKey) {
        self.guard.set_key(key);
    }

    /// Refuses `ip`'s connections for the rest of the session. A browser
    /// player's address bans the real address behind it, over UDP and the
    /// web alike, and closes that address's sessions.
    pub fn ban(&mut self, ip: IpAddr) -> bool {
        let Some(web) = self.web.as_ref() else { return self.guard.ban(ip) };
        let real =
            if arena_udp::is_web_peer(ip) { web.origin(SocketAddr::new(ip, 0)).map(|a| a.ip()) } else { Some(ip) };
        web.ban(ip);
        let banned = real.is_none_or(|real| self.guard.ban(real));
        banned && (!arena_udp::is_web_peer(ip) || self.guard.ban(ip))
    }

    /// What the guard has dropped and done so far.
    pub fn guard_counters(&self) -> &GuardCounters {
        &self.guard.counters
    }

    pub fn pending_connections(&self) -> usize {
        self.guard.pending()
    }

    /// What the server answers to queries from now on: A2S's three
    /// answers, and the infostring of a `getinfo` answer.
    pub fn set_answers(
        &mut self,
        info: ServerListing,
        players: Vec<PlayerEntry>,
        rules: Vec<(String, String)>,
        info_string: InfoString,
    ) {
        self.answers.set(info, players, rules, info_string);
    }

    /// Counts a message from a client that did not decode or validate; a
    /// client that keeps sending them is disconnected.
    pub fn report_bad_message(&mut self, client_id: ClientId) {
        self.guard.report_bad(client_id, self.clock);
    }

    /// Sends a connectionless datagram from the game socket (a probe, a
    /// reachability check): the socket a NAT maps for the game.
    pub fn send_datagram(&mut self, datagram: &[u8], to: SocketAddr) {
        self.send_to(datagram, to);
    }

    pub(super) fn send_to(&mut self, datagram: &[u8], addr: SocketAddr) {
        if arena_udp::is_web_peer(addr.ip()) {
            // A browser's session (closed ones drop it, as a gone peer would).
            if self.web.as_ref().is_some_and(|web| web.send(addr, datagram)) {
                self.traffic.bytes_out += datagram.len() as u64;
                self.traffic.datagrams_out += 1;
            }
            return;
        }
        match arena_udp::send_to(&self.socket, datagram, addr, self.socket_v6) {
            Ok(_) => {
                self.traffic.bytes_out += datagram.len() as u64;
                self.traffic.datagrams_out += 1;
            }
            Err(_) => self.traffic.send_errors += 1,
        }
    }

    /// Advances the clock by `dt`, reads every waiting datagram through the
    /// guard into netcode and renet, and keeps the connections (timeouts,
    /// keep-alives, disconnections).
    pub fn update(&mut self, dt: Duration, server: &mut renet::RenetServer) -> io::Result<()> {
        self.clock += dt;
        self.netcode.update(dt);
        self.guard.expire(self.clock, self.netcode.current_time().as_secs());
        loop {
            let (len, from) = match arena_udp::recv_from(&self.socket, &mut self.buffer[..]) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if arena_udp::is_transient(&e) => continue,
                Err(e) => return Err(e),
            };
            self.traffic.bytes_in += len as u64;
            self.traffic.datagrams_in += 1;
            // Only a browser's session speaks for a web peer's address.
            if arena_udp::is_web_peer(from.ip()) {
                *self.guard.counters.dropped.entry(super::drops::DropReason::ForgedWebPeer).or_default() += 1;
                continue;
            }
            // Over netcode's limit (the buffer is larger, to see it).
            let datagram = self.buffer[..len.min(MAX_DATAGRAM_BYTES + 1)].to_vec();
            self.handle_datagram(from, &datagram, server);
        }
        if let Some(web) = self.web.as_ref() {
            let mut inbox = std::mem::take(&mut self.web_inbox);
            web.receive(&mut inbox);
            for (from, datagram) in inbox.drain(..) {
                self.traffic.bytes_in += datagram.len() as u64;
                self.traffic.datagrams_in += 1;
                self.handle_datagram(from, &datagram, server);
            }
            self.web_inbox = inbox;
        }
        self.maintain(server);
        Ok(())
    }

    /// The path of every datagram that arrives: the guard, then netcode,
    /// then (for an authenticated payload) the guard again and renet. Public
    /// so that the fuzz harness drives exactly this code.
    pub fn handle_datagram(&mut self, from: SocketAddr, datagram: &[u8], server: &mut renet::RenetServer) {
        // The remote console's own datagrams: its gate judges them (the
        // guard would drop them as connectionless strangers).
        if arena_protocol::rcon::is_rcon(datagram) {
            self.guard.counters.datagrams += 1;
            match self.rcon.judge(from, datagram, self.clock) {
                super::remote_console::RconVerdict::Reply(reply) => self.send_to(&reply, from),
                super::remote_console::RconVerdict::Run { command, challenge } => {
                    if self.rcon_inbox.len() < MAX_RCON_INBOX {
                        self.rcon_inbox.push((from, challenge, command));
                    } else {
                        self.send_rcon_answer(from, &challenge, "rcon: the server's console is busy; try again");
                    }
                }
                super::remote_console::RconVerdict::Drop => {}
            }
            return;
        }
        let mut datagram = datagram.to_vec();
        let unix_now = self.netcode.current_time().as_secs();
        match self.guard.judge(from, &mut datagram, self.clock, unix_now) {
            Verdict::Netcode(kind) => {
                let outcome = Outcome::of(self.netcode.process_packet(from, &mut datagram));
                if kind == PacketKind::Payload && matches!(outcome, Outcome::None) {
                    self.guard.unauthenticated();
                }
                // A client's own packet that ends its connection is its goodbye.
                if let Outcome::Disconnected { client_id, .. } = outcome {
                    self.parted(client_id, Parting::Left);
                }
                self.apply(outcome, server);
            }
            Verdict::Reply(reply) => self.send_to(&reply, from),
            Verdict::Answer(kind) => {
                for datagram in self.answers.to_query(kind).to_vec() {
                    self.send_to(&datagram, from);
                }
            }
            Verdict::Reach(message) => {
                // An introduction without this server's key is a stranger's,
                // forged from a master's address: dropped here, so that a
                // flood of them cannot crowd out the real messages.
                let forged = matches!(&message, arena_master::reach::Reach::PunchIntro { key, .. }
                    | arena_master::reach::Reach::PunchIntroRelayed { key, .. }
                    if !self.answers.is_intro_key(key));
                if !forged && self.reach_inbox.len() < MAX_REACH_INBOX {
                    self.reach_inbox.push((from, message));
                }
            }
            Verdict::GetInfo { challenge, from_master, request_bytes } => {
                if let Some(answer) = self.answers.info_response(challenge, false, from_master)
                    && self.guard.answered_getinfo(from_master, request_bytes, answer.len())
                {
                    self.send_to(&answer, from);
                }
            }
            Verdict::Drop => {}
        }
    }

    /// Once a frame: keep-alives, the silent and the misbehaving dropped,
    /// renet's disconnections carried out, the summary line.
    fn maintain(&mut self, server: &mut renet::RenetServer) {
        for client_id in self.netcode.clients_id() {
            let silent = self.netcode.time_since_last_received_packet(client_id).unwrap_or(Duration::ZERO);
            let outcome = if silent >= SILENT_CLIENT_TIMEOUT {
                self.guard.counters.timed_out += 1;
                Outcome::of(self.netcode.disconnect(client_id))
            } else {
                Outcome::of(self.netcode.update_client(client_id))
            };
            // Netcode ends a connection here only for silence (ours, or its own timeout).
            if let Outcome::Disconnected { client_id, .. } = outcome {
                self.parted(client_id, Parting::TimedOut);
            }
            self.apply(outcome, server);
        }
        for client_id in self.guard.offenders(self.clock) {
            self.parted(client_id, Parting::BadMessages);
            self.guard.counters.disconnected_for_bad_messages += 1;
            debug!("disconnecting client {client_id}: it keeps sending bad messages");
            server.disconnect(client_id);
        }
        for client_id in server.disconnections_id() {
            let outcome = Outcome::of(self.netcode.disconnect(client_id));
            self.apply(outcome, server);
        }
        if let Some(line) = self.guard.summary(self.clock) {
            warn!("{line}");
        }
        self.rcon.expire(self.clock);
        if self.clock >= self.rcon_summarised_at + RCON_SUMMARY_EVERY {
            self.rcon_summarised_at = self.clock;
            if let Some(line) = self.rcon.summary() {
                warn!("{line}");
            }
        }
    }

    fn parted(&mut self, client_id: ClientId, how: Parting) {
        if self.partings.len() >= MAX_PARTINGS {
            self.partings.clear();
        }
        self.partings.insert(client_id, how);
    }

    /// The unreliable messages (commands) `client_id` sent outside renet
    /// since the last call, oldest first.
    pub(crate) fn take_raw(&mut self, client_id: ClientId) -> std::collections::VecDeque<Vec<u8>> {
        self.raw_inbox.remove(&client_id).unwrap_or_default()
    }

    /// How `client_id`'s connection ended, if the transport knows (once:
    /// the answer is forgotten as it is given).
    pub(crate) fn take_parting(&mut self, client_id: ClientId) -> Option<Parting> {
        self.partings.remove(&client_id)
    }

    fn apply(&mut self, outcome: Outcome, server: &mut renet::RenetServer) {
        match outcome {
            Outcome::None => {}
            Outcome::Send { addr, datagram } => self.send_to(&datagram, addr),
            Outcome::Payload { client_id, payload } => {
                let Ok(packets) = unbundle(&payload) else {
                    self.guard.bad_bundle(client_id, self.clock);
                    return;
                };
                for packet in packets {
                    if let Some(message) = raw_message(packet) {
                        // Commands outside renet: to intake, which decodes and checks them.
                        if message.is_empty() || message.len() > arena_protocol::MAX_COMMAND_PACKET_BYTES + 16 {
                            self.guard.bad_bundle(client_id, self.clock);
                            continue;
                        }
                        let waiting = self.raw_inbox.entry(client_id).or_default();
                        if waiting.len() >= MAX_RAW_WAITING {
                            waiting.pop_front();
                        }
                        waiting.push_back(message.to_vec());
                        continue;
                    }
                    if !self.guard.check_payload(client_id, packet, self.clock) {
                        continue;
                    }
                    self.ack_pace.entry(client_id).or_default().received(packet);
                    let before = ack_pace::held_for(server, client_id);
                    if let Err(e) = server.process_packet_from(packet, client_id) {
                        debug!("renet refused a packet from client {client_id}: {e}");
                    }
                    self.ack_pace.entry(client_id).or_default().taken_in(before, ack_pace::held_for(server, client_id));
                }
            }
            Outcome::Connected { client_id, addr, datagram } => {
                self.guard.connected(client_id, addr, self.clock);
                server.add_connection(client_id);
                self.send_to(&datagram, addr);
                // A browser's session became a player's: it may stay.
                if arena_udp::is_web_peer(addr.ip())
                    && let Some(web) = self.web.as_ref()
                {
                    web.admitted(addr);
                    if let Some(real) = web.origin(addr) {
                        self.web_origins.insert(addr, real);
                    }
                }
            }
            Outcome::Disconnected { client_id, addr, datagram } => {
                self.guard.disconnected(client_id);
                server.remove_connection(client_id);
                if let Some(datagram) = datagram {
                    self.send_to(&datagram, addr);
                }
                // A browser's session goes with its client.
                self.web_origins.remove(&addr);
                if arena_udp::is_web_peer(addr.ip())
                    && let Some(web) = self.web.as_ref()
                {
                    web.close(addr);
                }
            }
        }
    }

    /// Encrypts and sends the unreliable messages waiting in `out` and
    /// renet's packets when they are due (see `arena_protocol::ack_pace`),
    /// bundled into one datagram, for each client in `due` (a snapshot went
    /// to it this frame) or with a voice frame waiting; and renet's packets to any not sent to for
    /// [`FLUSH_INTERVAL`] (acks and reliable messages go out in the end even
    /// without snapshots). Others wait: no datagram on a frame with nothing
    /// to say.
    pub fn send(&mut self, server: &mut renet::RenetServer, due: &[ClientId], out: &mut UnreliableOut) {
        let clock = self.clock;
        let clients = server.clients_id();
        self.last_sent.retain(|id, _| clients.contains(id));
        self.ack_pace.retain(|id, _| clients.contains(id));
        self.raw_inbox.retain(|id, _| clients.contains(id));
        out.0.retain(|id, _| clients.contains(id));
        let urgent = std::mem::take(&mut out.1);
        for client_id in clients {
            let last = self.last_sent.get(&client_id).copied();
            let waited = last.is_none_or(|t| clock.saturating_sub(t) >= FLUSH_INTERVAL);
            let snapshot = due.contains(&client_id);
            // A voice frame goes now; renet's packets are paced as with a snapshot.
            let voice = urgent.contains(&client_id);
            if !snapshot && !voice && !waited {
                continue;
            }
            // The unreliable messages outside renet first, then renet's
            // packets. One too long for a datagram (a whole snapshot of a
            // full server) goes on the reliable channel, which slices it:
            // renet's unreliable slices are refused (see
            // `arena_protocol::payload_guard`).
            let mut packets: Vec<Vec<u8>> = Vec::new();
            for message in out.0.remove(&client_id).unwrap_or_default() {
                if fits_raw(message.len()) {
                    packets.push(raw_entry(&message));
                } else {
                    server.send_message(client_id, arena_protocol::channel::RELIABLE, message);
                }
            }
            let pace = self.ack_pace.entry(client_id).or_default();
            if !(snapshot || voice) || pace.due(clock, ack_pace::held_for(server, client_id)) {
                let Ok(renet_packets) = server.get_packets_to_send(client_id) else { continue };
                packets.extend(renet_packets);
                pace.sent(clock, ack_pace::held_for(server, client_id));
            }
            if packets.is_empty() {
                continue;
            }
            self.last_sent.insert(client_id, clock);
            for payload in bundle(&packets) {
                match self.netcode.generate_payload_packet(client_id, &payload) {
                    Ok((addr, datagram)) => {
                        let datagram = datagram.to_vec();
                        self.send_to(&datagram, addr);
                    }
                    Err(e) => {
                        debug!("cannot send to client {client_id}: {e}");
                        break;
                    }
                }
            }
        }
    }

    /// Tells every client the server is going.
    pub fn disconnect_all(&mut self, server: &mut renet::RenetServer) {
        for client_id in self.netcode.clients_id() {
            let outcome = Outcome::of(self.netcode.disconnect(client_id));
            self.apply(outcome, server);
        }
    }
}

/// A netcode result, owned (renetcode's borrows its buffers).
enum Outcome {
    None,
    Send { addr: SocketAddr, datagram: Vec<u8> },
    Payload { client_id: u64, payload: Vec<u8> },
    Connected { client_id: u64, addr: SocketAddr, datagram: Vec<u8> },
    Disconnected { client_id: u64, addr: SocketAddr, datagram: Option<Vec<u8>> },
}

impl Outcome {
    fn of(result: ServerResult<'_, '_>) -> Self {
        match result {
            ServerResult::None => Outcome::None,
            ServerResult::PacketToSend { addr, payload } => Outcome::Send { addr, datagram: payload.to_vec() },
            ServerResult::Payload { client_id, payload } => Outcome::Payload { client_id, payload: payload.to_vec() },
            ServerResult::ClientConnected { client_id, addr, payload, .. } => {
                Outcome::Connected { client_id, addr, datagram: payload.to_vec() }
            }
            ServerResult::ClientDisconnected { client_id, addr, payload } => {
                Outcome::Disconnected { client_id, addr, datagram: payload.map(|p| p.to_vec()) }
            }
        }
    }
}

fn receive(
    mut transport: ResMut<ServerTransport>,
    mut server: ResMut<RenetServer>,
    time: Res<Time<Real>>,
    mut failures: Local<u64>,
) {
    if let Err(e) = transport.update(time.delta(), &mut server) {
        // A socket error (not a datagram's fault): the next frame usually gets past it.
        *failures += 1;
        if failures.is_power_of_two() {
            warn!("network error ({} so far): {e}", *failures);
        }
    }
}

fn send(
    mut transport: ResMut<ServerTransport>,
    mut server: ResMut<RenetServer>,
    mut due: ResMut<DueClients>,
    mut out: ResMut<UnreliableOut>,
) {
    transport.send(&mut server, &due.0, &mut out);
    due.0.clear();
}

pub(crate) fn disconnect_on_exit(
    exit: MessageReader<AppExit>,
    mut transport: ResMut<ServerTransport>,
    mut server: ResMut<RenetServer>,
) {
    if !exit.is_empty() {
        transport.disconnect_all(&mut server);
    }
}
