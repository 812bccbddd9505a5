//! The authoritative Arena server: headless (MinimalPlugins), fixed tick, renet
//! over netcode UDP. It runs every player's commands through the shared
//! movement code and sends everyone snapshots of the result.
//!
//! The same plugin runs the dedicated server (`arena server`), the listen
//! server inside a host's game (on its own thread, see [`ListenServer`]) and
//! the server half of the integration tests.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! Shared leaves, below everything:
//!
//! - `vocabulary`: the shared components, resources and messages.
//! - `net`: sending a message to one client or to all.
//! - `range_lanes`: the shooting range's lanes, and where shooters stand.
//! - `config`: every server option, its defaults and checks; match rules.
//! - `config_file`: `--config FILE`, the options from a RON file.
//! - `reach_report`: what a host is shown about being reached from the
//!   internet (the port mapping, the check, the listing).
//!
//! Then the room both wings stand on, and the two wings side by side
//! (neither imports the other):
//!
//! - `socket`: the socket, netcode and renet behind the datagram guard
//!   (`rate_limits`, `guard`, `answers`, `remote_console`, `transport`, `binding`,
//!   `master_traffic`, `farewell`; see `socket/mod.rs`).
//! - `tick`, `internet`: the game (`intake`, `life`, `range`,
//!   `lag_compensation`, `combat`, `rockets`, `kill_cam`, `match_flow`,
//!   `sides`, `simulation`, `roster`, `bots`, `snapshots`, `demo_recording`; see
//!   `tick/mod.rs`), and being found and reached (`queries`, `port_mapping`,
//!   `master_list`, `hole_punch`, `reach_check`, `master_messages`; see
//!   `internet/mod.rs`).
//!
//! This file, above them all, orders the sets and starts the server.
//!
//! # The order of a frame
//!
//! `PreUpdate`: [`ServerSet::Intake`], after renet has received. Then, once per
//! tick in `FixedUpdate`, the sets in this order:
//!
//! 1. [`ServerSet::Tick`]: the tick number advances.
//! 2. [`ServerSet::Bots`]: each bot files its command for this tick, as a
//!    client's would have arrived.
//! 3. [`ServerSet::Simulate`]: every player's command runs; shots wait. On
//!    a range, the targets then move along their lanes.
//! 4. [`ServerSet::Record`]: every hitbox is recorded for lag compensation.
//!    After movement and before the shots on purpose: the newest record is
//!    the present, so a shot without lag compensation is tested against
//!    where everyone is now, and a rewind can reach the present too.
//! 5. [`ServerSet::Rewind`]: each shot gets the other players as its
//!    shooter saw them (lag compensation).
//! 6. [`ServerSet::Combat`]: the shots are judged: damage and deaths; then
//!    the range's tallies.
//! 7. [`ServerSet::Rockets`]: rockets in flight move on; this tick's are
//!    launched (caught up to their shooters' time); blasts splash; then
//!    the range's tallies of rockets.
//! 8. [`ServerSet::KillCam`]: each victim who wants one is sent its
//!    kill-cam (and stays dead while it plays); skips are applied.
//! 9. [`ServerSet::Respawn`]: lives forfeited to watch end; the frags are
//!    counted; switches waiting for a death are made; the dead whose time
//!    has come are back.
//! 10. [`ServerSet::Match`]: the clock, the duel's rotation, the balance of
//!     teams, the scoreboard.
//! 11. [`ServerSet::Snapshot`]: the result goes out.
//! 12. [`ServerSet::Demo`]: the tick goes into the demo being recorded.

mod config;
mod config_file;
mod internet;
mod net;
mod range_lanes;
mod reach_report;
mod socket;
mod tick;
mod vocabulary;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arena_sim::{ArenaWorld, MapDef};
use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy_renet::RenetReceive;

use internet::{hole_punch, master_list, master_messages, port_mapping, queries, reach_check};
use socket::{binding, drops, guard, remote_console, server_info, transport};
use tick::{
    bots, chat, combat, console, demo_recording, intake, items, kill_cam, lag_compensation, life, map_upload,
    match_flow, range, rockets, roster, rotation, sides, simulation, snapshots, voice, votes,
};

// What running a server needs.

pub use config::{
    DEFAULT_HEARTBEAT_S, DEFAULT_MAP_LEASE_S, DEFAULT_MAX_SPECTATORS, DEFAULT_MAX_UNLAG_MS, DEFAULT_RECORD_KEEP,
    Executor, MAX_MASTERS, MAX_SPECTATORS, MAX_UNLAG_MS, MatchRules, ServerConfig, read_map_file,
};
pub use config_file::{ConfigFileError, FileOption, MAX_CONFIG_FILE_BYTES, check_config_file, read_config_file};
pub use reach_report::{MapState, ReachReport, Reachable};
pub use server_info::{ServerError, ServerInfo, WebInfo};
pub use transport::ServerTransport;

// What a game, a test or an experiment reads of a running server.
pub use chat::ChatStats;
pub use combat::{ShotLog, ShotRecord};
pub use drops::{DropReason, GuardCounters};
pub use intake::{CommandBuffer, CommandStats};
pub use map_upload::{MapUploads, UploadStats};
pub use match_flow::MatchState;
pub use rockets::{RocketLog, RocketRecord, Rockets};
pub use rotation::MapRotation;
pub use sides::SideStats;
pub use vocabulary::{
    CombatStats, ConsoleLines, ConsoleSource, Dead, GameMode, Items, Joined, Roster, RoundTrips, Score, ServedMap,
    ServedMaps, ServerPlayer, ServerStats, ServerTick, Sim, UnreliableOut, VoiceControl,
};
pub use voice::VoiceStats;
pub use votes::{VoteStats, Votes};

// The rules, each a plain function or type, tested and fuzzed on their own.
pub use guard::{Guard, SILENT_CLIENT_TIMEOUT, Verdict};
pub use remote_console::{CHALLENGE_LIFETIME, RconCounters, RconGate, RconVerdict};

pub use demo_recording::check_writable;
pub use kill_cam::KILL_CAM_HOLD_S;
pub use lag_compensation::{RewindBounds, Unlag, choose_tested_tick, click_wait_ticks, render_time_tolerance_ticks};
pub use life::RESPAWN_DELAY_S;
pub use queries::info_string;
pub use range::RangeTarget;
pub use range_lanes::{FIRING_LINE_Z_M, LANE_HALF_WIDTH_M, LANES, Lane};
// Types other crates reach through the items above (returned, carried
// in fields or messages): nameable, though none names them yet.
pub use config::ConfigError;
pub use lag_compensation::TestedTick;
pub use reach_report::ReachHandle;
pub use rockets::{BlastRecord, Flying};
pub use transport::Traffic;
pub use vocabulary::RosterEntry;

/// The log filter of the headless modes: renetcode logs an error line for
/// every packet it cannot decrypt, which a flood would turn into a disk's
/// worth; the guard counts them instead and logs one summary per period.
pub const LOG_FILTER: &str = "info,renetcode=off,renet=error,wgpu=error,naga=warn";

/// The server's ordered stages (see the list at the top of this file).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerSet {
    /// Decode, check and queue what clients sent (PreUpdate).
    Intake,
    /// Advance the tick (FixedUpdate).
    Tick,
    /// Bots decide this tick's commands.
    Bots,
    /// Run every player's command.
    Simulate,
    /// Record every hitbox for lag compensation.
    Record,
    /// Give each of this tick's shots the other players as its shooter saw them.
    Rewind,
    /// Resolve this tick's shots: damage and deaths, then the range's tallies.
    Combat,
    /// Rockets fly on, this tick's launch, blasts splash.
    Rockets,
    /// Kill-cams to this tick's victims; skips.
    KillCam,
    /// Count the frags; make the switches; bring back the dead whose time has come.
    Respawn,
    /// The match clock, the scoreboard.
    Match,
    /// Send the result to everyone.
    Snapshot,
    /// Record the tick (with `--record`).
    Demo,
}

/// The systems of the server. Add [`add_server`] instead unless you provide
/// the renet resources yourself.
pub struct ServerPlugin {
    pub tick_hz: u32,
    pub snapshot_hz: u32,
    pub lag_compensation: bool,
    /// The rewind cap, milliseconds.
    pub max_unlag_ms: u16,
    pub subtick: bool,
    /// Rockets caught up to their shooters' time.
    pub projectile_compensation: bool,
    /// The map's items in play (`--no-items`: none).
    pub items: bool,
}

impl Plugin for ServerPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(bevy_renet::RenetServerPlugin)
            .insert_resource(Time::<Fixed>::from_hz(f64::from(self.tick_hz)))
            .insert_resource(vocabulary::TickRate(arena_sim::TickRate::new(self.tick_hz)))
            .insert_resource(vocabulary::SnapshotRate(arena_sim::TickRate::new(self.snapshot_hz)))
            .insert_resource(vocabulary::LagCompensation {
                on: self.lag_compensation,
                max_unlag_s: f64::from(self.max_unlag_ms) / 1000.0,
            })
            .insert_resource(vocabulary::SubTickShots(self.subtick))
            .insert_resource(vocabulary::ProjectileCompensation(self.projectile_compensation))
            .insert_resource(vocabulary::Items { on: self.items, slots: Vec::new() })
            .init_resource::<ServerStats>()
            .init_resource::<vocabulary::RoundTrips>()
            .configure_sets(PreUpdate, ServerSet::Intake.after(RenetReceive))
            .configure_sets(
                FixedUpdate,
                (
                    ServerSet::Tick,
                    ServerSet::Bots,
                    ServerSet::Simulate,
                    ServerSet::Record,
                    ServerSet::Rewind,
                    ServerSet::Combat,
                    ServerSet::Rockets,
                    ServerSet::KillCam,
                    ServerSet::Respawn,
                    ServerSet::Match,
                    ServerSet::Snapshot,
                    ServerSet::Demo,
                )
                    .chain(),
            )
            .add_plugins((
                transport::plugin,
                roster::plugin,
                simulation::plugin,
                lag_compensation::plugin,
                life::plugin,
                combat::plugin,
                rockets::plugin,
                match_flow::plugin,
                bots::plugin,
                demo_recording::plugin,
                kill_cam::plugin,
                chat::plugin,
                sides::plugin,
                console::plugin,
            ))
            .add_plugins((votes::plugin, map_upload::plugin, voice::plugin))
            .init_resource::<GameMode>()
            .add_systems(PreUpdate, intake::receive_commands.in_set(ServerSet::Intake))
            .add_systems(PreUpdate, chat::pass_on_chat.after(ServerSet::Intake))
            .add_systems(PreUpdate, voice::pass_on_voice.after(ServerSet::Intake))
            .add_systems(PreUpdate, sides::take_choices.after(ServerSet::Intake))
            .add_systems(PreUpdate, (votes::take_votes, votes::count_votes).chain().after(ServerSet::Intake))
            .add_systems(PreUpdate, map_upload::take_map_asks.after(ServerSet::Intake))
            .add_systems(Update, map_upload::send_map_chunks)
            .add_systems(Update, sides::sum_up)
            .add_systems(FixedUpdate, chat::bots_say_gg.after(ServerSet::Match))
            .add_systems(Update, roster::settle_joiners)
            .add_systems(Update, queries::publish_answers.after(roster::settle_joiners))
            .add_systems(FixedUpdate, simulation::advance_tick.in_set(ServerSet::Tick))
            .add_systems(FixedUpdate, bots::think.in_set(ServerSet::Bots))
            .add_systems(
                FixedUpdate,
                (simulation::run_commands, items::take_items, simulation::pass_watchers, range::move_targets)
                    .chain()
                    .in_set(ServerSet::Simulate),
            )
            .add_systems(
                FixedUpdate,
                (lag_compensation::record_history, kill_cam::record_tracks).in_set(ServerSet::Record),
            )
            .add_systems(
                FixedUpdate,
                (kill_cam::apply_skips, kill_cam::send_kill_cams).chain().in_set(ServerSet::KillCam),
            )
            .add_systems(FixedUpdate, lag_compensation::rewind_shots.in_set(ServerSet::Rewind))
            .add_systems(FixedUpdate, (combat::resolve_shots, range::tally_shots).chain().in_set(ServerSet::Combat))
            .add_systems(
                FixedUpdate,
                (rockets::fly_rockets, rockets::launch_rockets, rockets::splash_blasts, range::tally_rockets)
                    .chain()
                    .in_set(ServerSet::Rockets),
            )
            .add_systems(
                FixedUpdate,
                // The frags are counted before any switch is made: a death
                // counts on the side it was died on.
                (sides::forfeit_lives, match_flow::count_frags, sides::switch_the_dead, life::respawn_the_dead)
                    .chain()
                    .in_set(ServerSet::Respawn),
            )
            .add_systems(
                FixedUpdate,
                (
                    rotation::rotate_maps,
                    match_flow::advance_phase,
                    sides::rotate_duel,
                    sides::balance_teams,
                    match_flow::publish,
                )
                    .chain()
                    .in_set(ServerSet::Match),
            )
            .add_systems(FixedUpdate, snapshots::send_snapshots.in_set(ServerSet::Snapshot))
            .add_systems(FixedUpdate, demo_recording::record_tick.in_set(ServerSet::Demo));
    }
}

/// Binds the UDP socket and adds the server to `app` (which must already have
/// `MinimalPlugins` or equivalent). Fails with a readable error if the address
/// cannot be used.
pub fn add_server(app: &mut App, config: &ServerConfig) -> Result<ServerInfo, ServerError> {
    config.check().map_err(ServerError::Config)?;
    let (served, first, rotation) = config.load_maps().map_err(ServerError::Config)?;
    if let Some(dir) = &config.record_dir {
        tick::demo_recording::check_writable(dir).map_err(|error| ServerError::Record { dir: dir.clone(), error })?;
    }
    let info = binding::open(app, config)?;
    let map = served.find(&first).map_or_else(MapDef::foundry, |m| m.def.clone());
    for file in served.0.iter().filter(|m| m.file) {
        info!(
            "map file: {} ({} bytes, hash {}), sent to clients that lack it",
            file.id.name,
            file.id.bytes,
            &file.id.hex()[..16]
        );
    }
    app.insert_resource(served);
    app.insert_resource(tick::votes::Votes::new(config.vote_kinds.clone()));
    app.insert_resource(vocabulary::ServerIdentity {
        name: info.name.clone(),
        map: map.name.clone(),
        kind: config.kind,
        max_players: config.bots + config.targets() + config.max_clients,
        max_clients: config.max_clients,
        port: config.advertised_port(info.local_addr.port()),
    });
    app.insert_resource(rotation::MapRotation::new(rotation, &map.name));
    app.insert_resource(vocabulary::SimWorld(Arc::new(ArenaWorld::new(map))))
        .insert_resource(tick::bots::BotSettings {
            count: config.bots,
            skill: config.bot_skill,
            seed: config.bot_seed.unwrap_or_else(|| {
                // Any varying number will do: the clock's nanoseconds.
                web_time::SystemTime::now().duration_since(web_time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
            }),
            rockets: config.bot_rockets,
        })
        .insert_resource(config.rules)
        .insert_resource(GameMode {
            mode: config.mode,
            friendly_fire: config.friendly_fire,
            max_spectators: config.max_spectators,
        });
    if config.range {
        app.insert_resource(vocabulary::Range);
    }
    app.insert_resource(vocabulary::VoiceControl { on: config.voice, ..Default::default() });
    let mapping = if config.map_port.any() { MapState::Asking } else { MapState::Off };
    info.reach.update(|r| {
        *r = ReachReport::new(info.local_addr.port(), config.public_addrs.clone(), !config.masters.is_empty(), mapping)
    });
    app.insert_resource(info.reach.clone());
    if config.map_port.any() {
        app.insert_resource(port_mapping::PortMapping::start(port_mapping::MapRequest {
            methods: config.map_port,
            internal_port: info.local_addr.port(),
            lease: Duration::from_secs(u64::from(config.map_lease_s.max(1))),
            description: format!("Arena: {}", info.name),
        }))
        .add_plugins(port_mapping::plugin);
    }
    if !config.masters.is_empty() {
        // The introduction key: masters learn it from the server's answers
        // to them, and put it in every introduction.
        let punches = hole_punch::Punches::new(arena_master::reach::new_token());
        let pairs = reach_check::master_pairs(&punches.key, arena_master::reach::Nat::Unknown, info.local_addr.port());
        app.world_mut().resource_mut::<ServerTransport>().set_master_pairs(pairs);
        app.insert_resource(master_list::Masters::new(
            config.masters.clone(),
            config.master_heartbeat_s,
            info.local_addr,
        ))
        .insert_resource(punches)
        .add_plugins((master_list::plugin, master_messages::plugin));
    }
    if let Some(dir) = &config.record_dir {
        app.insert_resource(demo_recording::RecordTo { dir: dir.clone(), keep: config.record_keep.max(1) });
    }
    app.add_plugins(ServerPlugin {
        tick_hz: config.tick_hz,
        snapshot_hz: config.snapshot_hz,
        lag_compensation: config.lag_compensation,
        max_unlag_ms: config.max_unlag_ms,
        subtick: config.subtick,
        projectile_compensation: config.projectile_compensation,
        items: config.items,
    });
    if let Some(after) = config.stop_after {
        app.insert_resource(StopAfter(after));
        // In First, so that Last of the same frame (netcode's disconnect_on_exit)
        // tells every client before the loop ends.
        app.add_systems(First, stop_after_deadline);
    }
    use_executor(app, config.executor);
    Ok(info)
}

/// Runs every schedule the app has so far with `executor`.
pub fn use_executor(app: &mut App, executor: Executor) {
    let mut schedules = app.world_mut().resource_mut::<Schedules>();
    for (_, schedule) in schedules.iter_mut() {
        match executor {
            Executor::Single => schedule.set_executor(bevy::ecs::schedule::SingleThreadedExecutor::new()),
            Executor::Multi => schedule.set_executor(bevy::ecs::schedule::MultiThreadedExecutor::new()),
        };
    }
}

/// Frames a server runs per tick: a few, so that a command waits little
/// for its intake (the socket is read once a frame)...
pub const FRAMES_PER_TICK: u32 = 4;
/// ...but no more than this many a second: every frame reads the socket and
/// runs the schedule, and at 128 Hz four a tick cost more than they bring
/// (a command waits up to one frame, 3.9 ms, either way).
pub const MAX_FRAME_HZ: u32 = 256;

/// How many frames a second a server runs at `tick_hz`.
pub fn frame_hz(tick_hz: u32) -> u32 {
    let tick_hz = tick_hz.max(1);
    (tick_hz * FRAMES_PER_TICK).min(MAX_FRAME_HZ.max(tick_hz))
}

/// A headless server App that paces itself in real time ([`frame_hz`]).
pub fn headless_app(config: &ServerConfig) -> Result<(App, ServerInfo), ServerError> {
    let mut app = App::new();
    let frame = Duration::from_secs_f64(1.0 / f64::from(frame_hz(config.tick_hz)));
    app.add_plugins(MinimalPlugins.set(ScheduleRunnerPlugin::run_loop(frame)));
    let info = add_server(&mut app, config)?;
    Ok((app, info))
}

/// Whether log lines may carry colour codes: only to a terminal, and not
/// when `NO_COLOR` is set to anything (no-color.org), so that files,
/// pipes, journald and container logs get plain text.
pub fn log_colours() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Bevy's log layer for every mode that logs through a `LogPlugin` (the
/// dedicated server, the window): to stderr, coloured only where
/// [`log_colours`] says.
pub fn log_layer(_: &mut App) -> Option<bevy::log::BoxedFmtLayer> {
    let layer =
        bevy::log::tracing_subscriber::fmt::Layer::default().with_writer(std::io::stderr).with_ansi(log_colours());
    Some(Box::new(layer))
}

/// Runs a dedicated server until SIGTERM or SIGINT (Ctrl+C), or `stop_after`.
pub fn run_dedicated(config: &ServerConfig) -> Result<(), ServerError> {
    let (mut app, info) = headless_app(config)?;
    app.add_plugins(bevy::log::LogPlugin {
        // RUST_LOG, when set, replaces this filter (Bevy's rule).
        filter: LOG_FILTER.into(),
        fmt_layer: log_layer,
        ..Default::default()
    });
    stop_on_signals(&mut app)?;
    console::read_terminal(&mut app);
    // The schedules the plugins above added too.
    use_executor(&mut app, config.executor);
    info.print_banner();
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(ServerError::Stopped(code.get())),
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
///
/// In a browser (wasm32), which has one thread, the server's app lives
/// beside the page's instead: [`ListenServer::step`] runs its frame, once
/// per frame of the game, over the in-page network.
pub struct ListenServer {
    stop: Arc<AtomicBool>,
    #[cfg(not(target_arch = "wasm32"))]
    thread: Option<std::thread::JoinHandle<()>>,
    /// Its app's number among the page's.
    #[cfg(target_arch = "wasm32")]
    key: u64,
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

/// SIGTERM (Docker, systemd, Kubernetes) and SIGINT (Ctrl+C) both stop the
/// server cleanly: the flag ends the loop in `First`, so that `Last` of the
/// same frame tells every client it is closing (they leave at once, with
/// the reason, instead of timing out) and the process exits 0. A second
/// signal while stopping exits at once (status 1).
fn stop_on_signals(app: &mut App) -> Result<(), ServerError> {
    let flag = Arc::new(AtomicBool::new(false));
    arena_udp::stop_on_signals(&flag).map_err(ServerError::Signals)?;
    app.insert_resource(StopFlag(flag)).add_systems(First, (announce_stop, stop_when_flagged).chain());
    Ok(())
}

/// Says once why the server is stopping.
fn announce_stop(flag: Res<StopFlag>, mut said: Local<bool>) {
    if flag.0.load(Ordering::Relaxed) && !*said {
        *said = true;
        info!("stopping: a stop signal came (SIGTERM or SIGINT); telling every client");
    }
}

#[cfg(not(target_arch = "wasm32"))]
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
            .map_err(ServerError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok(info)) => Ok(Self { stop, thread: Some(thread), info }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(ServerError::ThreadEnded),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Drop for ListenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(target_arch = "wasm32")]
thread_local! {
    /// The in-page servers' apps by their handles' numbers (an `App` is not
    /// `Send`: it stays on the page's one thread, and the game's resource
    /// holds only the handle). A handle dropped stops its own app only, so
    /// a game hosted again while the last one winds down keeps the new one.
    static IN_PAGE: std::cell::RefCell<(u64, std::collections::BTreeMap<u64, App>)> =
        const { std::cell::RefCell::new((0, std::collections::BTreeMap::new())) };
}

/// Longest step of an in-page server's clock: more than the page's clock
/// ever gives a frame.
#[cfg(target_arch = "wasm32")]
const IN_PAGE_MAX_FRAME: Duration = Duration::from_secs(10);

#[cfg(target_arch = "wasm32")]
impl ListenServer {
    /// Makes an in-page server; returns once it listens on the in-page
    /// network, or with the reason it cannot.
    pub fn start(config: ServerConfig) -> Result<Self, ServerError> {
        let mut app = App::new();
        // Its own schedules and clock; no runner: the page's frames step it.
        app.add_plugins(MinimalPlugins);
        // Each step's time whole, as the game's client takes it: the page's
        // clock already turns a long gap into a pause, and a server clock
        // clamped shorter (Bevy's 250 ms) would fall behind the client's on
        // every slow frame.
        app.world_mut().resource_mut::<Time<Virtual>>().set_max_delta(IN_PAGE_MAX_FRAME);
        let info = add_server(&mut app, &config)?;
        let stop = Arc::new(AtomicBool::new(false));
        // First, so that netcode tells the clients in Last of the same frame.
        app.insert_resource(StopFlag(stop.clone())).add_systems(First, stop_when_flagged);
        if app.plugins_state() == bevy::app::PluginsState::Ready {
            app.finish();
            app.cleanup();
        }
        let key = IN_PAGE.with(|cell| {
            let (next, apps) = &mut *cell.borrow_mut();
            *next += 1;
            apps.insert(*next, app);
            *next
        });
        Ok(Self { stop, key, info })
    }

    /// One frame of the in-page server at `now` (the page's clock): what
    /// came over the in-page network since the last, the ticks its clock
    /// has reached, what it sends.
    pub fn step(&self, now: bevy::platform::time::Instant) {
        use bevy::time::TimeUpdateStrategy::ManualInstant;
        // Out of the table while it runs: nothing it does can reach the table.
        let Some(mut app) = IN_PAGE.with(|cell| cell.borrow_mut().1.remove(&self.key)) else { return };
        // First what came, with the clock where it stopped: the page runs
        // the server's ticks of a frame in one batch after the client made
        // its commands, so a command is early by the ticks between the last
        // one run and its own, not late by the frame's length (the clock
        // sync steers by these margins).
        if let Some(last) = app.world().resource::<Time<Real>>().last_update() {
            app.insert_resource(ManualInstant(last));
            app.update();
        }
        app.insert_resource(ManualInstant(now));
        app.update();
        if app.should_exit().is_none() {
            IN_PAGE.with(|cell| cell.borrow_mut().1.insert(self.key, app));
        }
    }
}

#[cfg(target_arch = "wasm32")]
impl Drop for ListenServer {
    /// One last frame, whose `Last` tells its clients.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(mut app) = IN_PAGE.with(|cell| cell.borrow_mut().1.remove(&self.key)) {
            app.update();
        }
    }
}
