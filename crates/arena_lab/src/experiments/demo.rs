//! `arena lab demo`: a recorded match. A server recording to a directory
//! and N network clients fighting through conditioned links (strafing,
//! aiming, firing: commands with render times, sub-tick clicks), time
//! stepped by hand (the server four frames a tick, as `arena server` runs,
//! each client one). Then the demo is verified (every recorded command
//! through the shared rules, every keyframe's states compared bit for bit)
//! and a seek to every minute timed. Reports the file's size, its rate,
//! and what recording cost the server per tick.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arena_client::Session;
use arena_server::ServerSet;
use bevy::prelude::*;
use serde::Serialize;

use crate::bot_clients::{Steering, engage};
use crate::harness::{client_app_with, server_app_with_frame};

use super::setup::{LabError, LabSettings, build_name};

/// One tick of simulated time: the server's frames, then every client's.
struct Pacing {
    frames_per_tick: u32,
    tick_s: f64,
    t_s: f64,
}

impl Pacing {
    /// Steps a tick; returns the wall time the server's frames took, seconds.
    fn step(&mut self, server: &mut App, clients: &mut [(App, Steering)]) -> f64 {
        let mut server_s = 0.0;
        for _ in 0..self.frames_per_tick {
            let start = Instant::now();
            server.update();
            server_s += start.elapsed().as_secs_f64();
        }
        self.t_s += self.tick_s;
        for (app, steering) in clients.iter_mut() {
            app.update();
            if *app.world().resource::<State<Session>>().get() == Session::InGame {
                engage(app, steering, self.t_s as f32, true);
            }
        }
        server_s
    }
}

/// The game `arena lab demo` records: network clients, server bots, the map.
#[derive(Debug, Clone)]
pub struct DemoGame {
    pub players: usize,
    pub bots: usize,
    pub map: String,
}

#[derive(Debug, Serialize)]
pub struct DemoReport {
    pub experiment: &'static str,
    pub build: &'static str,
    pub map: String,
    pub bots: usize,
    pub players: usize,
    pub clients_in_game: usize,
    pub tick: u32,
    pub fake_latency_ms: f32,
    /// The match recorded, seconds (from the demo's first tick to its last).
    pub demo_seconds: f64,
    pub demo_file: PathBuf,
    pub demo_bytes: u64,
    pub demo_mb: f64,
    pub demo_kbytes_per_minute: f64,
    /// A 10-minute match at this rate, megabytes.
    pub demo_mb_per_10_min: f64,
    pub frames: usize,
    pub chunks: usize,
    /// Frames' bytes before DEFLATE.
    pub frame_bytes: u64,
    pub verify_ok: bool,
    pub mismatches: u64,
    pub states_checked: u64,
    pub player_ticks: u64,
    pub server_changes: u64,
    pub shots: u64,
    pub rockets: u64,
    pub seek_ms_max: f64,
    pub seeks: usize,
    /// The server's recording set, per tick, milliseconds.
    pub record_ms_per_tick_mean: f64,
    pub lab_wall_s: f64,
}

/// Wall time spent in the recording set.
#[derive(Resource, Default)]
struct RecordClock {
    start: Option<Instant>,
    total: Duration,
    ticks: u64,
}

fn record_start(mut clock: ResMut<RecordClock>) {
    clock.start = Some(Instant::now());
}

fn record_end(mut clock: ResMut<RecordClock>) {
    if let Some(start) = clock.start.take() {
        clock.total += start.elapsed();
        clock.ticks += 1;
    }
}

/// Runs `arena lab demo`: `players` clients, recorded into `out` (a fresh
/// directory under the system's temporary one when not given).
pub fn demo(settings: LabSettings, game: DemoGame, out: Option<&Path>) -> Result<DemoReport, LabError> {
    settings.validate()?;
    let DemoGame { players, bots, map } = game;
    if players == 0 || players + bots > arena_protocol::MAX_PLAYERS {
        return Err(LabError::Players(players + bots));
    }
    let map =
        arena_sim::MapDef::built_in(&map).ok_or_else(|| LabError::Map(format!("{map} is not a built-in map")))?.name;
    let dir = out
        .map_or_else(|| std::env::temp_dir().join(format!("arena-lab-demo-{}", std::process::id())), Path::to_path_buf);
    let wall = Instant::now();
    let config = arena_server::ServerConfig {
        max_clients: players,
        bots,
        map: map.clone(),
        // Items, jump pads and teleporters in play: the demo follows them all.
        items: true,
        bot_seed: Some(settings.seed),
        record_dir: Some(dir.clone()),
        rules: arena_server::MatchRules {
            // One match over the whole run: no frag limit reached, no restart.
            frag_limit: i16::MAX as u16,
            time_limit_s: (settings.seconds + 60.0).ceil() as u32,
            ..arena_server::MatchRules::default()
        },
        ..settings.server_config()
    };
    let frames_per_tick = 4;
    let tick = Duration::from_secs_f64(1.0 / f64::from(config.tick_hz));
    let (mut server, info) = server_app_with_frame(&config, tick / frames_per_tick);
    server
        .init_resource::<RecordClock>()
        .add_systems(FixedUpdate, record_start.after(ServerSet::Snapshot).before(ServerSet::Demo))
        .add_systems(FixedUpdate, record_end.after(ServerSet::Demo));
    let mut clients: Vec<(App, Steering)> = (0..players)
        .map(|i| {
            let mut netcode = settings.netcode();
            netcode.conditioner_seed = Some(settings.seed.wrapping_add(i as u64 * 7919));
            (client_app_with(tick, info.local_addr, &format!("Fighter {}", i + 1), netcode), Steering::default())
        })
        .collect();
    let in_game = |clients: &[(App, Steering)]| {
        clients.iter().filter(|(c, _)| *c.world().resource::<State<Session>>().get() == Session::InGame).count()
    };
    let mut pacing = Pacing { frames_per_tick, tick_s: tick.as_secs_f64(), t_s: 0.0 };
    for _ in 0..(15.0 / tick.as_secs_f64()) as usize {
        pacing.step(&mut server, &mut clients);
        if in_game(&clients) == players {
            break;
        }
    }
    let clients_in_game = in_game(&clients);
    if clients_in_game == 0 {
        return Err(LabError::NotJoined);
    }
    for _ in 0..(settings.seconds / tick.as_secs_f64()).round() as usize {
        pacing.step(&mut server, &mut clients);
    }
    let clock = server.world().resource::<RecordClock>();
    let record_ms_per_tick_mean = clock.total.as_secs_f64() * 1000.0 / clock.ticks.max(1) as f64;
    // Stopping the server finishes the demo (its last chunk and index).
    drop(clients);
    drop(server);
    let file = newest_demo(&dir).ok_or(LabError::NoDemo)?;
    let summary = arena_protocol::demo::summarize_file(&file).map_err(|e| LabError::Demo(e.to_string()))?;
    let report = arena_replay::verify_file(&file).map_err(|e| LabError::Demo(e.to_string()))?;
    let per_minute = summary.file_bytes as f64 / 1000.0 / (summary.duration_s / 60.0).max(1e-9);
    Ok(DemoReport {
        experiment: "demo",
        build: build_name(),
        map,
        bots,
        players,
        clients_in_game,
        tick: config.tick_hz,
        fake_latency_ms: settings.fake_latency_ms,
        demo_seconds: summary.duration_s,
        demo_file: file,
        demo_bytes: summary.file_bytes,
        demo_mb: summary.file_bytes as f64 / 1e6,
        demo_kbytes_per_minute: per_minute,
        demo_mb_per_10_min: per_minute * 10.0 / 1000.0,
        frames: summary.frames,
        chunks: summary.chunks,
        frame_bytes: summary.frame_bytes,
        verify_ok: report.ok,
        mismatches: report.mismatches,
        states_checked: report.states_checked,
        player_ticks: report.player_ticks,
        server_changes: report.server_changes,
        shots: report.shots,
        rockets: report.rockets,
        seek_ms_max: report.seek_ms_max,
        seeks: report.seeks,
        record_ms_per_tick_mean,
        lab_wall_s: wall.elapsed().as_secs_f64(),
    })
}

/// The newest demo file in `dir`.
fn newest_demo(dir: &Path) -> Option<PathBuf> {
    let mut demos: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "demo"))
        .collect();
    demos.sort();
    demos.pop()
}
