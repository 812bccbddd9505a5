//! Headless server and client Apps over real UDP on 127.0.0.1, stepped by hand
//! with a fixed amount of time per update, for integration tests and
//! experiments. No window and no GPU anywhere.

// Test harnesses: a setup that fails (no loopback socket) fails the test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use arena_client::{ClientPlugin, ConnectTo, Drawn, LocalInput, LocalPlayer, NetPlayer, NetcodeSettings, Session};
use arena_protocol::key::Password;
use arena_server::{ServerConfig, ServerInfo};
use arena_sim::{Buttons, PlayerId, PlayerState};
use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy::state::app::StatesPlugin;
use bevy::time::TimeUpdateStrategy;

/// Builds a server on 127.0.0.1 with an OS-chosen port whose every update
/// advances time by exactly one tick.
pub fn server_app(tick_hz: u32) -> (App, ServerInfo) {
    server_app_with_frame(&loopback_config(tick_hz), tick(tick_hz))
}

/// A server configuration on 127.0.0.1 with an OS-chosen port, sending a
/// snapshot every tick, without the map's items (a test of anything else
/// is not thrown by a pickup; the items' own tests turn them on).
pub fn loopback_config(tick_hz: u32) -> ServerConfig {
    ServerConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        tick_hz,
        snapshot_hz: tick_hz,
        bot_seed: Some(1),
        items: false,
        ..ServerConfig::default()
    }
}

/// Builds a server with this configuration whose every update advances time by `frame`.
pub fn server_app_with_frame(config: &ServerConfig, frame: Duration) -> (App, ServerInfo) {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins.set(ScheduleRunnerPlugin::run_once()));
    let info = match arena_server::add_server(&mut app, config) {
        Ok(info) => info,
        Err(e) => panic!("test server failed to start: {e}"),
    };
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame));
    (app, info)
}

/// Builds a headless client App whose every update advances time by one tick
/// at `tick_hz`, and asks it to connect to `server` as `name`.
pub fn client_app(tick_hz: u32, server: SocketAddr, name: &str) -> App {
    client_app_with(tick(tick_hz), server, name, NetcodeSettings::default())
}

/// Builds a headless client App whose every update advances time by `frame`,
/// with these netcode settings (conditioner included), and asks it to
/// connect to `server` as `name`.
pub fn client_app_with(frame: Duration, server: SocketAddr, name: &str, settings: NetcodeSettings) -> App {
    client_app_with_password(frame, server, name, settings, Password::OPEN)
}

/// As [`client_app_with`], joining with a password.
pub fn client_app_with_password(
    frame: Duration,
    server: SocketAddr,
    name: &str,
    settings: NetcodeSettings,
    password: Password,
) -> App {
    client_app_joining(frame, server, (name, false), settings, password)
}

/// As [`client_app_with_password`], joining to play or (`spectate`) to watch.
pub fn client_app_joining(
    frame: Duration,
    server: SocketAddr,
    (name, spectate): (&str, bool),
    settings: NetcodeSettings,
    password: Password,
) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins.set(ScheduleRunnerPlugin::run_once()), StatesPlugin, ClientPlugin));
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame));
    app.insert_resource(settings);
    app.world_mut().trigger(ConnectTo { addr: server, name: name.to_string(), password, spectate });
    app
}

/// A headless client App on the wall clock (its socket on its own I/O
/// thread, as in a game), asked to connect to `server` as `name`; the caller
/// paces its updates.
pub fn client_app_real(server: SocketAddr, name: &str, settings: NetcodeSettings) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins.set(ScheduleRunnerPlugin::run_once()), StatesPlugin, ClientPlugin));
    app.insert_resource(settings);
    app.world_mut().trigger(ConnectTo {
        addr: server,
        name: name.to_string(),
        password: Password::OPEN,
        spectate: false,
    });
    app
}

/// A headless client App whose every update advances time by `frame`, its
/// link pumped between frames by the caller ([`pump_io`]), as its I/O
/// thread would in a game; asked to connect to `server` as `name`.
pub fn client_app_pumped(frame: Duration, server: SocketAddr, name: &str, settings: NetcodeSettings) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins.set(ScheduleRunnerPlugin::run_once()), StatesPlugin, ClientPlugin));
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame));
    app.insert_resource(settings);
    app.insert_resource(arena_client::IoMode::Pumped);
    app.world_mut().trigger(ConnectTo {
        addr: server,
        name: name.to_string(),
        password: Password::OPEN,
        spectate: false,
    });
    app
}

/// Moves a pumped client's datagrams at `now` on its own clock (its time at
/// its last update, plus the time since). A socket error is left for the
/// client's next frame, whose own read meets it.
pub fn pump_io(client: &mut App, now: Duration) {
    if let Some(mut transport) = client.world_mut().get_resource_mut::<arena_client::transport::UdpTransport>() {
        let _ = transport.pump_io(now);
    }
}

/// One tick at `tick_hz`.
pub fn tick(tick_hz: u32) -> Duration {
    Duration::from_secs_f64(1.0 / f64::from(tick_hz))
}

/// Frames per second of the apps the integration tests step: twice the
/// default tick rate, so that some frames make no command.
pub const TEST_FPS: f64 = 128.0;

/// One test frame.
pub fn test_frame() -> Duration {
    Duration::from_secs_f64(1.0 / TEST_FPS)
}

/// Test frames in `seconds`.
pub fn test_frames(seconds: f64) -> usize {
    (seconds * TEST_FPS).round() as usize
}

/// Where `client` draws its own player this frame (predicted and smoothed,
/// or as the server last had it with prediction off): where its camera is.
pub fn drawn_self(client: &App) -> Option<PlayerState> {
    let world = client.world();
    let mut query = world.try_query_filtered::<&Drawn, With<LocalPlayer>>()?;
    query.iter(world).next().map(|d| d.0)
}

/// Where `client` draws every other player this frame.
pub fn drawn_others(client: &App) -> Vec<(PlayerId, PlayerState)> {
    let world = client.world();
    let Some(mut query) = world.try_query_filtered::<(&NetPlayer, &Drawn), Without<LocalPlayer>>() else {
        return Vec::new();
    };
    query.iter(world).map(|(p, d)| (p.id, d.0)).collect()
}

/// Where `client` draws player `id` this frame.
pub fn drawn_player(client: &App, id: PlayerId) -> Option<PlayerState> {
    let world = client.world();
    let mut query = world.try_query::<(&NetPlayer, &Drawn)>()?;
    query.iter(world).find(|(p, _)| p.id == id).map(|(_, d)| d.0)
}

/// Updates every app once, in order, `frames` times. Loopback UDP delivers at
/// once, so a message sent in one app's update is readable in the next app's.
pub fn step(apps: &mut [&mut App], frames: usize) {
    for _ in 0..frames {
        for app in apps.iter_mut() {
            app.update();
        }
    }
}

/// Steps until `done` holds for the apps (checked after every round), at most
/// `max_frames` rounds; returns whether it held.
pub fn step_until(apps: &mut [&mut App], max_frames: usize, mut done: impl FnMut(&mut [&mut App]) -> bool) -> bool {
    for _ in 0..max_frames {
        step(apps, 1);
        if done(apps) {
            return true;
        }
    }
    false
}

/// The client's session state.
pub fn session(app: &App) -> Session {
    *app.world().resource::<State<Session>>().get()
}

/// A server and named clients over loopback UDP, joined, with helpers to
/// steer the game from outside (for tests and experiments).
pub struct LoopbackGame {
    pub server: App,
    pub clients: Vec<App>,
}

impl LoopbackGame {
    /// Starts a server with `config` and one client per name with `netcode`
    /// (each conditioner seeded from `seed`), and waits until all are in.
    pub fn start(
        config: &ServerConfig,
        netcode: &NetcodeSettings,
        seed: u64,
        names: &[&str],
        frame: Duration,
    ) -> Result<LoopbackGame, String> {
        let (server, info) = server_app_with_frame(config, frame);
        let clients = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut netcode = netcode.clone();
                netcode.conditioner_seed = Some(seed.wrapping_add(i as u64 * 7919));
                client_app_with(frame, info.local_addr, name, netcode)
            })
            .collect();
        let mut game = LoopbackGame { server, clients };
        let frames = (10.0 / frame.as_secs_f64()) as usize;
        let joined = game.step_until(frames, |g| g.clients.iter().all(|c| session(c) == Session::InGame));
        if joined { Ok(game) } else { Err("the clients did not get into the game within 10 s".into()) }
    }

    /// Another client called `name` joins (to watch, with `spectate`) with
    /// `netcode`, updated every `frame`; its index once it is in the game
    /// (within 10 s).
    pub fn join(
        &mut self,
        name: &str,
        spectate: bool,
        netcode: NetcodeSettings,
        frame: Duration,
    ) -> Result<usize, String> {
        let transport = self.server.world().resource::<arena_server::ServerTransport>();
        let addr = transport.local_addr().map_err(|e| e.to_string())?;
        self.clients.push(client_app_joining(frame, addr, (name, spectate), netcode, Password::OPEN));
        let index = self.clients.len() - 1;
        let frames = (10.0 / frame.as_secs_f64()) as usize;
        if self.step_until(frames, |g| session(&g.clients[index]) == Session::InGame) {
            Ok(index)
        } else {
            Err(format!("{name} did not get into the game within 10 s"))
        }
    }

    /// Updates the server and then every client, `frames` times.
    pub fn step(&mut self, frames: usize) {
        for _ in 0..frames {
            self.server.update();
            for client in &mut self.clients {
                client.update();
            }
        }
    }

    pub fn step_until(&mut self, max_frames: usize, mut done: impl FnMut(&LoopbackGame) -> bool) -> bool {
        for _ in 0..max_frames {
            self.step(1);
            if done(self) {
                return true;
            }
        }
        false
    }

    /// The server entity of the player called `name`.
    pub fn player(&self, name: &str) -> Option<Entity> {
        let roster = self.server.world().get_resource::<arena_server::Roster>()?;
        roster.players.values().find(|e| e.name == name).map(|e| e.entity)
    }

    /// The server's state of the player called `name`.
    pub fn sim(&self, name: &str) -> Option<arena_sim::PlayerState> {
        self.player(name).and_then(|e| self.server.world().get::<arena_server::Sim>(e)).map(|s| s.0)
    }

    /// Changes the server's state of the player called `name`.
    pub fn edit_sim(&mut self, name: &str, edit: impl FnOnce(&mut arena_sim::PlayerState)) {
        if let Some(entity) = self.player(name)
            && let Some(mut sim) = self.server.world_mut().get_mut::<arena_server::Sim>(entity)
        {
            edit(&mut sim.0);
        }
    }

    /// Puts a player at `pos` on the server, fresh, as a respawn would (its
    /// clients see a respawn), but without spawn protection: experiments shoot at once.
    pub fn teleport(&mut self, name: &str, pos: Vec3, yaw: f32) {
        self.edit_sim(name, |s| *s = PlayerState { protected_s: 0.0, ..s.respawned_at(pos, yaw) });
    }

    /// Keeps a player at full health (so that a target survives an experiment).
    pub fn keep_alive(&mut self, name: &str) {
        self.edit_sim(name, |s| s.health = arena_sim::weapon::MAX_HEALTH);
    }

    /// The id of the player called `name`.
    pub fn id_of(&self, name: &str) -> Option<PlayerId> {
        let roster = self.server.world().get_resource::<arena_server::Roster>()?;
        roster.players.iter().find(|(_, e)| e.name == name).map(|(id, _)| *id)
    }

    /// Where client `i` draws the first other player it has (in a game of
    /// two, the other one).
    pub fn drawn_other(&self, i: usize) -> Option<PlayerState> {
        drawn_others(&self.clients[i]).first().map(|(_, s)| *s)
    }

    /// Client `i` looks at `point` from its eye as drawn.
    pub fn aim(&mut self, i: usize, point: Vec3) {
        let Some(me) = drawn_self(&self.clients[i]) else { return };
        let (yaw, pitch) = arena_sim::look_at(me.eye_pos(), point);
        let mut input = self.clients[i].world_mut().resource_mut::<LocalInput>();
        (input.yaw, input.pitch) = (yaw, pitch);
    }

    /// Client `i` holds the trigger down, or lets go.
    pub fn hold_fire(&mut self, i: usize, on: bool) {
        self.clients[i].world_mut().resource_mut::<LocalInput>().held =
            if on { Buttons::FIRE } else { Buttons::default() };
    }

    /// Client `i` pulls the trigger once: pressed for one frame, then let go.
    pub fn tap_fire(&mut self, i: usize) {
        self.clients[i].world_mut().resource_mut::<LocalInput>().press(Buttons::FIRE);
        self.step(1);
        self.hold_fire(i, false);
    }
}

/// A client made by hand from renetcode on a raw socket: it can connect with
/// a token claiming anything, then send whatever it likes, or nothing at all.
/// For tests of what a hostile client can do.
pub struct RawClient {
    pub socket: std::net::UdpSocket,
    pub netcode: renetcode::NetcodeClient,
    pub server: SocketAddr,
}

impl RawClient {
    /// A client of the open game at `server` whose self-made token claims
    /// this timeout (-1: never) and lifetime.
    pub fn new(server: SocketAddr, timeout_s: i32, expire_s: u64) -> Self {
        Self::with_key(server, timeout_s, expire_s, &arena_protocol::key::OPEN_KEY)
    }

    pub fn with_key(server: SocketAddr, timeout_s: i32, expire_s: u64, key: &[u8; 32]) -> Self {
        use std::time::{SystemTime, UNIX_EPOCH};
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        socket.set_nonblocking(true).expect("non-blocking");
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
        let token = renetcode::ConnectToken::generate(
            now,
            arena_protocol::PROTOCOL_ID,
            expire_s,
            arena_client::transport::random_u64(),
            timeout_s,
            vec![server],
            Some(&arena_protocol::names::name_to_user_data("Raw")),
            key,
        )
        .expect("a token");
        let netcode =
            renetcode::NetcodeClient::new(now, renetcode::ClientAuthentication::Secure { connect_token: token })
                .expect("a netcode client");
        Self { socket, netcode, server }
    }

    pub fn addr(&self) -> SocketAddr {
        self.socket.local_addr().expect("an address")
    }

    /// Reads what came, advances netcode by `dt` and sends what it says to
    /// (connection requests, responses, keep-alives).
    pub fn pump(&mut self, dt: Duration) {
        let mut buffer = [0u8; 2048];
        while let Ok((len, from)) = self.socket.recv_from(&mut buffer) {
            if from == self.server && len <= arena_protocol::datagram::MAX_DATAGRAM_BYTES {
                let _ = self.netcode.process_packet(&mut buffer[..len]);
            }
        }
        if let Some((packet, to)) = self.netcode.update(dt) {
            let _ = self.socket.send_to(packet, to);
        }
    }

    pub fn send_raw(&self, datagram: &[u8]) {
        let _ = self.socket.send_to(datagram, self.server);
    }

    /// Bundles `packet` (a renet packet) as the transport does, encrypts it
    /// with the session key and sends it.
    pub fn send_payload(&mut self, packet: &[u8]) {
        for payload in arena_protocol::bundle::bundle(&[packet]) {
            if let Ok((to, datagram)) = self.netcode.generate_payload_packet(&payload) {
                let _ = self.socket.send_to(datagram, to);
            }
        }
    }
}

/// A server made by hand from renetcode and renet on a raw socket, for tests
/// of what a hostile server can do to a client: it handshakes honestly, then
/// sends any datagram or message it likes.
pub struct HostileServer {
    pub socket: std::net::UdpSocket,
    pub netcode: renetcode::NetcodeServer,
    pub renet: bevy_renet::renet::RenetServer,
}

impl HostileServer {
    pub fn bind() -> Self {
        use std::time::{SystemTime, UNIX_EPOCH};
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
        socket.set_nonblocking(true).expect("non-blocking");
        let netcode = renetcode::NetcodeServer::new(renetcode::ServerConfig {
            current_time: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO),
            max_clients: 4,
            protocol_id: arena_protocol::PROTOCOL_ID,
            public_addresses: Vec::new(),
            authentication: renetcode::ServerAuthentication::Unsecure,
        });
        Self { socket, netcode, renet: bevy_renet::renet::RenetServer::new(arena_protocol::connection_config()) }
    }

    pub fn addr(&self) -> SocketAddr {
        self.socket.local_addr().expect("an address")
    }

    /// Handshakes, receives, keeps connections alive and sends what renet queued.
    pub fn pump(&mut self, dt: Duration) {
        use renetcode::ServerResult;
        self.netcode.update(dt);
        self.renet.update(dt);
        let mut buffer = [0u8; 2048];
        while let Ok((len, from)) = self.socket.recv_from(&mut buffer) {
            let result = self.netcode.process_packet(from, &mut buffer[..len.min(1400)]);
            match result {
                ServerResult::PacketToSend { addr, payload } => {
                    let _ = self.socket.send_to(payload, addr);
                }
                ServerResult::ClientConnected { client_id, addr, payload, .. } => {
                    self.renet.add_connection(client_id);
                    let _ = self.socket.send_to(payload, addr);
                }
                ServerResult::Payload { client_id, payload } => {
                    // The client's commands come outside renet (raw entries):
                    // renet would end the connection on one.
                    for packet in arena_protocol::bundle::unbundle(payload).unwrap_or_default() {
                        if arena_protocol::bundle::raw_message(packet).is_none() {
                            let _ = self.renet.process_packet_from(packet, client_id);
                        }
                    }
                }
                ServerResult::ClientDisconnected { client_id, .. } => self.renet.remove_connection(client_id),
                ServerResult::None => {}
            }
        }
        for client_id in self.netcode.clients_id() {
            if let ServerResult::PacketToSend { addr, payload } = self.netcode.update_client(client_id) {
                let _ = self.socket.send_to(payload, addr);
            }
        }
        for client_id in self.renet.clients_id() {
            for channel in [arena_protocol::channel::RELIABLE, arena_protocol::channel::UNRELIABLE] {
                while self.renet.receive_message(client_id, channel).is_some() {}
            }
            let packets = self.renet.get_packets_to_send(client_id).unwrap_or_default();
            for payload in arena_protocol::bundle::bundle(&packets) {
                if let Ok((addr, datagram)) = self.netcode.generate_payload_packet(client_id, &payload) {
                    let _ = self.socket.send_to(datagram, addr);
                }
            }
        }
    }

    /// The connected client's address, once it has connected.
    pub fn client_addr(&self) -> Option<SocketAddr> {
        self.netcode.clients_id().first().and_then(|id| self.netcode.client_addr(*id))
    }

    /// Queues a message for every connected client (sent at the next pump).
    pub fn send_message(&mut self, message: &arena_protocol::ToClient) {
        let bytes = arena_protocol::encode(message).expect("encodes");
        for client_id in self.renet.clients_id() {
            self.renet.send_message(client_id, message.channel(), bytes.clone());
        }
    }

    /// Sends raw bytes from the server's own address.
    pub fn send_raw(&self, to: SocketAddr, datagram: &[u8]) {
        let _ = self.socket.send_to(datagram, to);
    }
}
