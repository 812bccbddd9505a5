//! The authoritative Arena server: headless (MinimalPlugins), fixed tick, renet
//! over netcode UDP. It runs every player's commands through the shared
//! movement code and sends everyone snapshots of the result.
//!
//! The same plugin runs the dedicated server (`arena server`), the listen
//! server inside a host's game (on its own thread, see [`ListenServer`]) and
//! the server half of the integration tests.

mod bots;
mod combat;
mod connections;
mod guard;
mod intake;
mod match_flow;
mod net;
mod simulation;
mod snapshots;
mod transport;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arena_protocol::key::Password;
use arena_sim::{ArenaWorld, DEFAULT_TICK_HZ, MapDef, TICK_HZ_RANGE};
use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy_renet::RenetReceive;

pub use bots::{BotBrain, BotSettings, Navigation};
pub use combat::{
    ClientPrefs, CombatStats, Dead, HISTORY_S, LagCompensation, LagHistory, MAX_RENDER_TIME_TOLERANCE_S,
    RENDER_TIME_SLACK_TICKS, RESPAWN_DELAY_S, RewindBounds, ShotLog, ShotRecord, TestedTick, choose_tested_tick,
    render_time_tolerance_ticks,
};
pub use connections::{Roster, RosterEntry, ServerPlayer};
pub use guard::{
    BAD_MESSAGES_TO_DISCONNECT, DropReason, Guard, GuardCounters, PENDING_S, SILENT_CLIENT_TIMEOUT, Verdict,
};
pub use intake::{CommandBuffer, CommandStats, MAX_AHEAD_S, STALL_REPEAT_S};
pub use match_flow::{Frag, MatchRules, MatchState, Score};
pub use simulation::{ServerTick, Sim};
pub use transport::{ServerError, ServerInfo, ServerTransport, Traffic};

/// The log filter of the headless modes: renetcode logs an error line for
/// every packet it cannot decrypt, which a flood would turn into a disk's
/// worth; the guard counts them instead and logs one summary per period.
pub const LOG_FILTER: &str = "info,renetcode=off,renet=error,wgpu=error,naga=warn";

/// How a server is set up; the command line fills it in.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address and UDP port to listen on; `0.0.0.0` listens on every interface.
    pub bind: SocketAddr,
    /// Extra addresses clients use to reach this server (behind NAT or port
    /// forwarding). The addresses of this machine's interfaces are always added.
    pub public_addrs: Vec<SocketAddr>,
    /// Players connected at once, at most (bots not counted; bots and
    /// clients together never exceed [`arena_protocol::MAX_PLAYERS`]).
    pub max_clients: usize,
    /// A private game's password: without it a client cannot even start to
    /// connect. Open to anyone when not set.
    pub password: Password,
    /// Simulation rate, ticks per second.
    pub tick_hz: u32,
    /// Snapshots per second (at most the tick rate).
    pub snapshot_hz: u32,
    /// Lag compensation for everyone (each client can also turn it off for itself).
    pub lag_compensation: bool,
    /// Server-side bots to add, and how well they play (0-1).
    pub bots: usize,
    pub bot_skill: f32,
    /// Seeds the bots' choices; `None`: a different game every time.
    pub bot_seed: Option<u64>,
    pub rules: MatchRules,
    /// Stop on its own after this long (for scripts and tests).
    pub stop_after: Option<Duration>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([0, 0, 0, 0], arena_protocol::DEFAULT_PORT)),
            public_addrs: Vec::new(),
            max_clients: 16,
            password: Password::OPEN,
            tick_hz: DEFAULT_TICK_HZ,
            snapshot_hz: DEFAULT_TICK_HZ,
            lag_compensation: true,
            bots: 0,
            bot_skill: 0.5,
            bot_seed: None,
            rules: MatchRules::default(),
            stop_after: None,
        }
    }
}

/// The server's ordered stages. Intake runs every frame, as soon as renet has
/// received; the rest once per tick in `FixedUpdate`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerSet {
    /// Decode, check and queue what clients sent (PreUpdate).
    Intake,
    /// Advance the tick and run every player's command (FixedUpdate).
    Simulate,
    /// Resolve this tick's shots against the lag-compensation history;
    /// damage, deaths, respawns (FixedUpdate).
    Combat,
    /// Frags, the match clock, the scoreboard (FixedUpdate).
    Match,
    /// Record every hitbox for lag compensation (FixedUpdate).
    Record,
    /// Send the result to everyone (FixedUpdate).
    Snapshot,
}

/// The arena's collision world, shared with nothing else.
#[derive(Resource, Clone, Deref)]
pub struct SimWorld(pub Arc<ArenaWorld>);

/// The tick rate the server runs at, ticks per second.
#[derive(Resource, Clone, Copy, Debug)]
pub struct TickRate(pub u32);

/// Snapshots per second.
#[derive(Resource, Clone, Copy, Debug)]
pub struct SnapshotRate(pub u32);

/// Counters of what the server had to reject or repair, for logs and tests.
#[derive(Resource, Default, Debug, Clone)]
pub struct ServerStats {
    /// Messages that did not decode or failed validation.
    pub bad_messages: u64,
    /// Messages from a client with no player.
    pub unknown_client_messages: u64,
    /// Commands with NaN or out-of-range fields that were repaired.
    pub repaired_commands: u64,
    /// Commands dropped because their tick made no sense.
    pub dropped_commands: u64,
    pub joins: u64,
    pub leaves: u64,
    /// Clients sent away for their name.
    pub names_refused: u64,
}

/// The systems of the server. Add [`add_server`] instead unless you provide
/// the renet resources yourself.
pub struct ServerPlugin {
    pub tick_hz: u32,
    pub snapshot_hz: u32,
    pub lag_compensation: bool,
}

impl Plugin for ServerPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(bevy_renet::RenetServerPlugin)
            .insert_resource(Time::<Fixed>::from_hz(f64::from(self.tick_hz)))
            .insert_resource(TickRate(self.tick_hz))
            .insert_resource(SnapshotRate(self.snapshot_hz))
            .insert_resource(combat::LagCompensation(self.lag_compensation))
            .init_resource::<ServerStats>()
            .configure_sets(PreUpdate, ServerSet::Intake.after(RenetReceive))
            .configure_sets(
                FixedUpdate,
                (ServerSet::Simulate, ServerSet::Combat, ServerSet::Match, ServerSet::Record, ServerSet::Snapshot)
                    .chain(),
            )
            .add_plugins((
                transport::plugin,
                connections::plugin,
                intake::plugin,
                simulation::plugin,
                combat::plugin,
                match_flow::plugin,
                bots::plugin,
                snapshots::plugin,
            ));
    }
}

/// Binds the UDP socket and adds the server to `app` (which must already have
/// `MinimalPlugins` or equivalent). Fails with a readable error if the address
/// cannot be used.
pub fn add_server(app: &mut App, config: &ServerConfig) -> Result<ServerInfo, ServerError> {
    if !TICK_HZ_RANGE.contains(&config.tick_hz) {
        return Err(ServerError::Config(format!(
            "tick rate {} Hz is outside {}..={} Hz",
            config.tick_hz,
            TICK_HZ_RANGE.start(),
            TICK_HZ_RANGE.end()
        )));
    }
    if config.snapshot_hz == 0 || config.snapshot_hz > config.tick_hz {
        return Err(ServerError::Config(format!(
            "snapshot rate {} Hz must be 1..={} Hz (the tick rate)",
            config.snapshot_hz, config.tick_hz
        )));
    }
    if config.bots > arena_protocol::MAX_PLAYERS {
        return Err(ServerError::Config(format!("at most {} bots", arena_protocol::MAX_PLAYERS)));
    }
    if !(0.0..=1.0).contains(&config.bot_skill) {
        return Err(ServerError::Config(format!("bot skill must be 0..=1, not {}", config.bot_skill)));
    }
    if config.rules.frag_limit == 0 || config.rules.time_limit_s == 0 {
        return Err(ServerError::Config("the frag limit and the time limit must be above 0".into()));
    }
    if config.max_clients == 0 || config.max_clients > arena_protocol::MAX_PLAYERS {
        return Err(ServerError::Config(format!(
            "max clients must be 1..={}, not {}",
            arena_protocol::MAX_PLAYERS,
            config.max_clients
        )));
    }
    if config.bots + config.max_clients > arena_protocol::MAX_PLAYERS {
        return Err(ServerError::Config(format!(
            "{} bots and {} clients make more than the {} players a server can hold; lower --bots or --max-clients",
            config.bots,
            config.max_clients,
            arena_protocol::MAX_PLAYERS
        )));
    }
    let info = transport::open(app, config)?;
    app.insert_resource(SimWorld(Arc::new(ArenaWorld::new(MapDef::foundry()))))
        .insert_resource(BotSettings {
            count: config.bots,
            skill: config.bot_skill,
            seed: config.bot_seed.unwrap_or_else(|| {
                // Any varying number will do: the clock's nanoseconds.
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
            }),
        })
        .insert_resource(config.rules);
    app.add_plugins(ServerPlugin {
        tick_hz: config.tick_hz,
        snapshot_hz: config.snapshot_hz,
        lag_compensation: config.lag_compensation,
    });
    if let Some(after) = config.stop_after {
        app.insert_resource(StopAfter(after));
        // In First, so that Last of the same frame (netcode's disconnect_on_exit)
        // tells every client before the loop ends.
        app.add_systems(First, stop_after_deadline);
    }
    Ok(info)
}

/// A headless server App that paces itself in real time (a few frames per tick,
/// so received commands wait little for the next tick).
pub fn headless_app(config: &ServerConfig) -> Result<(App, ServerInfo), ServerError> {
    let mut app = App::new();
    let frame = Duration::from_secs_f64(1.0 / f64::from(config.tick_hz.max(1) * 4));
    app.add_plugins(MinimalPlugins.set(ScheduleRunnerPlugin::run_loop(frame)));
    let info = add_server(&mut app, config)?;
    Ok((app, info))
}

/// Runs a dedicated server until Ctrl+C (or `stop_after`).
pub fn run_dedicated(config: &ServerConfig) -> Result<(), ServerError> {
    let (mut app, info) = headless_app(config)?;
    app.add_plugins((
        bevy::app::TerminalCtrlCHandlerPlugin,
        bevy::log::LogPlugin { filter: LOG_FILTER.into(), ..Default::default() },
    ));
    info.print_banner();
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(ServerError::Config(format!("server stopped with error code {code}"))),
    }
}

#[derive(Resource)]
struct StopAfter(Duration);

fn stop_after_deadline(time: Res<Time<Real>>, stop: Res<StopAfter>, mut exit: MessageWriter<AppExit>) {
    if time.elapsed() >= stop.0 {
        info!("stopping after {:.0} s as asked", stop.0.as_secs_f64());
        exit.write(AppExit::Success);
    }
}

/// A server running on its own thread inside a game process (a host's listen
/// server). Dropping it stops the server and tells its clients.
pub struct ListenServer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub info: ServerInfo,
}

impl std::fmt::Debug for ListenServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenServer").field("info", &self.info).finish()
    }
}

#[derive(Resource, Clone)]
struct StopFlag(Arc<AtomicBool>);

fn stop_when_flagged(flag: Res<StopFlag>, mut exit: MessageWriter<AppExit>) {
    if flag.0.load(Ordering::Relaxed) {
        exit.write(AppExit::Success);
    }
}

impl ListenServer {
    /// Starts a server thread; returns once it listens, or with the reason it cannot.
    pub fn start(config: ServerConfig) -> Result<Self, ServerError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let flag = StopFlag(stop.clone());
        let thread = std::thread::Builder::new()
            .name("arena-listen-server".into())
            .spawn(move || match headless_app(&config) {
                Ok((mut app, info)) => {
                    // First, so that netcode tells the clients in Last of the same frame.
                    app.insert_resource(flag).add_systems(First, stop_when_flagged);
                    let _ = ready_tx.send(Ok(info));
                    app.run();
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| ServerError::Config(format!("cannot start the server thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(info)) => Ok(Self { stop, thread: Some(thread), info }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(ServerError::Config("the server thread ended before it started listening".into())),
        }
    }
}

impl Drop for ListenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
