//! `arena lab servercost`: what a server's tick costs. A server with N real
//! network clients fighting (headless bot clients that strafe, aim and
//! fire, every shot lag-compensated), all in one process over loopback UDP,
//! time stepped by hand: the server four frames a tick as `arena server`
//! runs, the clients one frame a tick. The server's own updates are timed
//! with the wall clock: per tick (its four frames), and per stage (the
//! server's sets, timed by marks between them).

use std::time::{Duration, Instant};

use arena_client::Session;
use arena_server::ServerSet;
use bevy::prelude::*;
use bevy_renet::{RenetReceive, RenetSend};
use serde::Serialize;

use crate::bot_clients::{Steering, engage, headless_client};
use crate::harness::server_app_with_frame;

use super::setup::{LabError, LabSettings, Summary};

/// What `arena lab servercost` prints.
#[derive(Debug, Serialize)]
pub struct ServerCostReport {
    pub experiment: &'static str,
    /// `dev` or `release`: what this binary was built as.
    pub build: &'static str,
    pub players: usize,
    pub tick: u32,
    pub snapshot_rate: u32,
    pub seconds: f64,
    pub ticks: usize,
    /// Wall time of the server's updates per tick (its four frames), ms.
    pub tick_time_mean_ms: f64,
    pub tick_time_p50_ms: f64,
    pub tick_time_p99_ms: f64,
    pub tick_time_max_ms: f64,
    /// The server's updates' wall time over the simulated time: the share
    /// of one core the server needs to keep up.
    pub cpu_share: f64,
    /// Where a tick's time goes: each stage's mean per tick, busiest first.
    pub stages: Vec<StageCost>,
    /// Shots the server resolved (every one from a client that asks for lag
    /// compensation, on a server that gives it).
    pub shots: u64,
    pub clients_in_game: usize,
}

#[derive(Debug, Serialize, Clone)]
pub struct StageCost {
    pub stage: &'static str,
    pub mean_ms_per_tick: f64,
    pub share: f64,
}

/// The server's stages in frame order, each timed from the previous mark.
const STAGES: [&str; 11] = [
    "receive and intake",
    "between (time, fixed loop)",
    "tick and bots",
    "simulate",
    "record history",
    "rewind (lag compensation)",
    "combat",
    "respawn and match",
    "snapshots",
    "update (joins, queries)",
    "send",
];

/// Marks between the server's stages (indices into [`STAGES`]).
#[derive(Resource, Default)]
struct StageClock {
    last: Option<Instant>,
    totals: [Duration; STAGES.len()],
}

fn start_frame(mut clock: ResMut<StageClock>) {
    clock.last = Some(Instant::now());
}

fn lap<const STAGE: usize>(mut clock: ResMut<StageClock>) {
    let now = Instant::now();
    if let Some(last) = clock.last {
        clock.totals[STAGE] += now - last;
    }
    clock.last = Some(now);
}

fn time_stages(app: &mut App) {
    app.init_resource::<StageClock>()
        .add_systems(First, start_frame)
        .add_systems(PreUpdate, lap::<0>.after(ServerSet::Intake).after(RenetReceive))
        .add_systems(FixedUpdate, lap::<1>.before(ServerSet::Tick))
        .add_systems(FixedUpdate, lap::<2>.after(ServerSet::Bots).before(ServerSet::Simulate))
        .add_systems(FixedUpdate, lap::<3>.after(ServerSet::Simulate).before(ServerSet::Record))
        .add_systems(FixedUpdate, lap::<4>.after(ServerSet::Record).before(ServerSet::Rewind))
        .add_systems(FixedUpdate, lap::<5>.after(ServerSet::Rewind).before(ServerSet::Combat))
        .add_systems(FixedUpdate, lap::<6>.after(ServerSet::Combat).before(ServerSet::Respawn))
        .add_systems(FixedUpdate, lap::<7>.after(ServerSet::Match).before(ServerSet::Snapshot))
        .add_systems(FixedUpdate, lap::<8>.after(ServerSet::Snapshot))
        .add_systems(PostUpdate, lap::<9>.before(RenetSend))
        .add_systems(Last, lap::<10>);
}

/// One tick of simulated time: the server's frames, then every client's.
pub(super) struct Pacing {
    pub(super) frames_per_tick: u32,
    pub(super) tick_s: f64,
    pub(super) t_s: f64,
}

impl Pacing {
    /// Steps a tick; returns the wall time the server's frames took, seconds.
    pub(super) fn step(&mut self, server: &mut App, clients: &mut [(App, Steering)]) -> f64 {
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

/// Runs `arena lab servercost` with `players` network clients.
pub fn servercost(settings: LabSettings, players: usize) -> Result<ServerCostReport, LabError> {
    settings.validate()?;
    if players == 0 || players > arena_protocol::MAX_PLAYERS {
        return Err(LabError::Players(players));
    }
    let config =
        arena_server::ServerConfig { max_clients: players, bot_seed: Some(settings.seed), ..settings.server_config() };
    let frames_per_tick = 4;
    let server_frame = Duration::from_secs_f64(1.0 / f64::from(config.tick_hz * frames_per_tick));
    let (mut server, info) = server_app_with_frame(&config, server_frame);
    time_stages(&mut server);
    let tick = Duration::from_secs_f64(1.0 / f64::from(config.tick_hz));
    let mut clients: Vec<(App, Steering)> = (0..players)
        .map(|i| {
            let mut app = headless_client(info.local_addr, &format!("Fighter {}", i + 1), Default::default());
            app.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(tick));
            (app, Steering::default())
        })
        .collect();
    let in_game = |clients: &[(App, Steering)]| {
        clients.iter().filter(|(c, _)| *c.world().resource::<State<Session>>().get() == Session::InGame).count()
    };
    // Join (everyone, or as many as get in within 15 s), then warm up.
    let mut pacing = Pacing { frames_per_tick, tick_s: tick.as_secs_f64(), t_s: 0.0 };
    let join_ticks = (15.0 / tick.as_secs_f64()) as usize;
    for _ in 0..join_ticks {
        pacing.step(&mut server, &mut clients);
        if in_game(&clients) == players {
            break;
        }
    }
    if in_game(&clients) == 0 {
        return Err(LabError::NotJoined);
    }
    for _ in 0..(2.0 / tick.as_secs_f64()) as usize {
        pacing.step(&mut server, &mut clients);
    }
    server.insert_resource(StageClock::default());
    let shots_before = server.world().resource::<arena_server::CombatStats>().shots;
    let mut times = Vec::new();
    let ticks = (settings.seconds / tick.as_secs_f64()).round() as usize;
    for _ in 0..ticks {
        times.push(pacing.step(&mut server, &mut clients));
    }
    let per_tick_ms: Vec<f64> = times.iter().map(|s| s * 1000.0).collect();
    let summary = Summary::of(&per_tick_ms);
    let mut sorted = per_tick_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let busy_s: f64 = times.iter().sum();
    let clock = server.world().resource::<StageClock>();
    let staged: f64 = clock.totals.iter().map(Duration::as_secs_f64).sum();
    let mut stages: Vec<StageCost> = STAGES
        .iter()
        .zip(clock.totals)
        .map(|(stage, total)| StageCost {
            stage,
            mean_ms_per_tick: total.as_secs_f64() * 1000.0 / ticks.max(1) as f64,
            share: total.as_secs_f64() / staged.max(f64::MIN_POSITIVE),
        })
        .collect();
    stages.sort_by(|a, b| b.mean_ms_per_tick.total_cmp(&a.mean_ms_per_tick));
    Ok(ServerCostReport {
        experiment: "servercost",
        build: if cfg!(debug_assertions) { "dev" } else { "release" },
        players,
        tick: config.tick_hz,
        snapshot_rate: config.snapshot_hz,
        seconds: settings.seconds,
        ticks,
        tick_time_mean_ms: summary.mean,
        tick_time_p50_ms: summary.p50,
        tick_time_p99_ms: super::setup::percentile(&sorted, 0.99),
        tick_time_max_ms: sorted.last().copied().unwrap_or(f64::NAN),
        cpu_share: busy_s / settings.seconds,
        stages,
        shots: server.world().resource::<arena_server::CombatStats>().shots - shots_before,
        clients_in_game: in_game(&clients),
    })
}
