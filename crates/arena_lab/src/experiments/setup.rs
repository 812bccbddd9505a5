//! What every experiment shares: the settings and their flags, why one
//! cannot run, the lab's frame rate and warm-up, the two-player lab on the
//! south platform and its strafing target.

use std::time::Duration;

use arena_client::{LinkConditions, NetcodeSettings};
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::LoopbackGame;

/// The build that made this binary, as reports name it: "release", "dev"
/// (opt-level 1, what `./play.sh` plays) or "test" (`cargo test`'s
/// opt-level 0 build, whose timings are slower than the game's).
pub fn build_name() -> &'static str {
    if !cfg!(debug_assertions) {
        "release"
    } else if env!("ARENA_OPT_LEVEL") == "0" {
        "test"
    } else {
        "dev"
    }
}

/// Frames per second of the simulated client (and server loop).
pub const LAB_FRAME_HZ: f64 = 240.0;
/// Frame rates the lab draws at, frames per second.
pub const FPS_RANGE: std::ops::RangeInclusive<f64> = 2.0..=1000.0;
/// Seconds after joining before measuring, for the clock to settle.
pub const WARMUP_S: f64 = 2.0;
/// Why an experiment cannot run.
#[derive(Debug, Clone, PartialEq)]
pub enum LabError {
    TickRate(u32),
    SnapshotRate(u32),
    InterpMs(u16),
    Seconds(f64),
    Conditions,
    /// The lab's clients did not get into the game.
    NotJoined,
    /// A number of players the server cannot hold.
    Players(usize),
    /// A flick the lab cannot run.
    Flick,
    /// A frame rate the lab cannot run.
    Fps(f64),
    MaxUnlag(u16),
    /// The recording server left no demo file.
    NoDemo,
    /// The demo recorded would not read or replay.
    Demo(String),
    /// The master experiment could not set up or finish (what, in words).
    Master(String),
    /// The server-cost experiment could not start or read its processes.
    ServerCost(String),
    /// A map the experiment cannot run on (which, and why).
    Map(String),
}

impl std::fmt::Display for LabError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabError::TickRate(hz) => write!(f, "--tick {hz} must be within {:?}", arena_sim::TICK_HZ_RANGE),
            LabError::SnapshotRate(hz) => write!(f, "--snapshot-rate {hz} must be 1..=the tick rate"),
            LabError::InterpMs(ms) => write!(f, "--interp-ms {ms} must be 0..={}", arena_protocol::MAX_INTERP_MS),
            LabError::Seconds(s) => write!(f, "--seconds {s}: give more than 0 and at most 3600 seconds"),
            LabError::Conditions => write!(
                f,
                "--fake-latency-ms and --fake-jitter-ms must be within 0..={}, --fake-loss within 0..=1",
                LinkConditions::MAX_MS
            ),
            LabError::NotJoined => f.write_str("the lab's clients did not get into the game within 10 s"),
            LabError::Players(n) => write!(f, "--players {n} must be 1..={}", arena_protocol::MAX_PLAYERS),
            LabError::MaxUnlag(ms) => write!(f, "--max-unlag-ms {ms} must be 0..={}", arena_server::MAX_UNLAG_MS),
            LabError::NoDemo => f.write_str("the server recorded no demo file"),
            LabError::Demo(e) => write!(f, "the recorded demo: {e}"),
            LabError::Master(e) => write!(f, "the master experiment: {e}"),
            LabError::ServerCost(e) => write!(f, "the server-cost experiment: {e}"),
            LabError::Map(e) => write!(f, "--map: {e}"),
            LabError::Fps(fps) => write!(f, "--fps {fps} must be within {FPS_RANGE:?}"),
            LabError::Flick => write!(
                f,
                "--fps must be within {FPS_RANGE:?}, --turn-deg-s within 0..=20000 and --sweep-deg within 0.5..=90"
            ),
        }
    }
}

impl std::error::Error for LabError {}

pub(crate) fn frame() -> Duration {
    Duration::from_secs_f64(1.0 / LAB_FRAME_HZ)
}

pub(crate) fn frames_for(seconds: f64) -> usize {
    (seconds * LAB_FRAME_HZ).round() as usize
}

/// The settings every experiment shares, named as their flags. Reports
/// carry them as one `settings` object, never flattened: a report that
/// measures a figure of the same name (`interp_ms`, the delay in use, beside
/// the fixed one asked for) would otherwise print that key twice.
#[derive(Clone, Debug, Serialize)]
pub struct LabSettings {
    pub prediction: Switch,
    pub reconciliation: Switch,
    pub interpolation: Switch,
    pub lag_compensation: Switch,
    /// Sub-tick shots (off: `--no-subtick`, shots from the tick).
    pub subtick: Switch,
    /// Rockets caught up to their shooter's time (off: `--no-projectile-compensation`).
    pub projectile_compensation: Switch,
    /// Server bots take the rocket launcher too (off: `--bot-rifle-only`).
    pub bot_rockets: Switch,
    /// Interpolation delay, ms; adaptive when not given.
    pub interp_ms: Option<u16>,
    /// `cl_updaterate`, `cl_cmdrate` and `rate` (0: the defaults: all the
    /// server sends, a packet a tick, no limit).
    pub update_rate: u8,
    pub cmd_rate: u16,
    pub rate: u32,
    /// Snapshots per second; the tick rate when not given.
    pub snapshot_rate: Option<u32>,
    /// The server's rewind cap, milliseconds.
    pub max_unlag_ms: u16,
    pub fake_latency_ms: f32,
    pub fake_jitter_ms: f32,
    pub fake_loss: f32,
    pub tick: u32,
    pub seconds: f64,
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    pub fn on(self) -> bool {
        self == Switch::On
    }
}

impl LabSettings {
    pub fn netcode(&self) -> NetcodeSettings {
        NetcodeSettings {
            prediction: self.prediction.on(),
            reconciliation: self.reconciliation.on(),
            interpolation: self.interpolation.on(),
            interp_ms: self.interp_ms,
            lag_compensation: self.lag_compensation.on(),
            projectile_compensation: self.projectile_compensation.on(),
            subtick: self.subtick.on(),
            hit_prediction: true,
            show_hitboxes: false,
            kill_cam: false,
            predict_ahead_ms: None,
            update_rate: self.update_rate,
            cmd_rate: self.cmd_rate,
            rate: self.rate,
            conditions: LinkConditions {
                latency_ms: self.fake_latency_ms,
                jitter_ms: self.fake_jitter_ms,
                loss: self.fake_loss,
            },
            conditioner_seed: Some(self.seed),
        }
    }

    /// The lab server's configuration (on 127.0.0.1, any port).
    pub fn server_config(&self) -> arena_server::ServerConfig {
        arena_server::ServerConfig {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            tick_hz: self.tick,
            snapshot_hz: self.snapshot_rate.unwrap_or(self.tick),
            subtick: self.subtick.on(),
            max_unlag_ms: self.max_unlag_ms,
            projectile_compensation: self.projectile_compensation.on(),
            bot_rockets: self.bot_rockets.on(),
            // The techniques on their own: no item changes anyone's health
            // or armour (the pickups, teleport and demo experiments turn
            // them on).
            items: false,
            ..arena_server::ServerConfig::default()
        }
    }

    pub fn validate(&self) -> Result<(), LabError> {
        if !arena_sim::TICK_HZ_RANGE.contains(&self.tick) {
            return Err(LabError::TickRate(self.tick));
        }
        if let Some(rate) = self.snapshot_rate.filter(|r| *r == 0 || *r > self.tick) {
            return Err(LabError::SnapshotRate(rate));
        }
        if self.max_unlag_ms > arena_server::MAX_UNLAG_MS {
            return Err(LabError::MaxUnlag(self.max_unlag_ms));
        }
        if let Some(ms) = self.interp_ms.filter(|ms| *ms > arena_protocol::MAX_INTERP_MS) {
            return Err(LabError::InterpMs(ms));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(LabError::Seconds(self.seconds));
        }
        let conditions = self.netcode().conditions;
        if conditions.clamped() != conditions {
            return Err(LabError::Conditions);
        }
        Ok(())
    }
}

/// The mean, median and 95th percentile of some figures (NaN for none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Summary {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
}

impl Summary {
    pub(crate) fn of(values: &[f64]) -> Self {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let mean = if sorted.is_empty() { f64::NAN } else { sorted.iter().sum::<f64>() / sorted.len() as f64 };
        Self { mean, p50: percentile(&sorted, 0.5), p95: percentile(&sorted, 0.95) }
    }
}

/// Whether nothing of the map stands between `a` and `b`.
pub(crate) fn line_clear(world: &arena_sim::ArenaWorld, a: Vec3, b: Vec3) -> bool {
    (b - a).try_normalize().is_none_or(|dir| world.cast_ray(a, dir, a.distance(b)).is_none())
}

/// The `p` quantile (0..=1) of sorted figures, nearest rank (NaN for none).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted.get(((sorted.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN)
}

/// The interpolation delay a client uses now, milliseconds (0 with interpolation off).
pub(crate) fn interp_ms_of(client: &App) -> f64 {
    let settings = client.world().resource::<NetcodeSettings>();
    if !settings.interpolation {
        return 0.0;
    }
    let roster = client.world().resource::<arena_client::Roster>();
    client.world().resource::<arena_client::ServerClock>().delay_ms(roster.tick_rate())
}

/// Where the shooter stands (on the south platform, looking north through
/// the gap in its parapet) and the lane the target strafes along, about 20 m away.
pub(crate) const SHOOTER_AT: Vec3 = Vec3::new(0.0, 3.0, 21.5);
pub(crate) const TARGET_AT: Vec3 = Vec3::new(0.0, 0.0, 2.5);
pub(crate) const LANE_HALF_WIDTH_M: f32 = 8.0;

/// A server and two named clients with the lab's settings, joined and warmed up.
pub(crate) fn two_player_lab(settings: &LabSettings, names: [&str; 2]) -> Result<LoopbackGame, LabError> {
    two_player_lab_at(settings, names, frame())
}

/// The same, every app updated every `frame`.
pub(crate) fn two_player_lab_at(
    settings: &LabSettings,
    names: [&str; 2],
    frame: Duration,
) -> Result<LoopbackGame, LabError> {
    settings.validate()?;
    let mut lab = LoopbackGame::start(&settings.server_config(), &settings.netcode(), settings.seed, &names, frame)
        .map_err(|_| LabError::NotJoined)?;
    lab.step((WARMUP_S / frame.as_secs_f64()).round() as usize);
    Ok(lab)
}

/// A server on the built-in map `map` with its items, jump pads and
/// teleporters in play, and two named clients with the lab's settings,
/// joined and warmed up.
pub(crate) fn lab_on(settings: &LabSettings, map: &str, names: [&str; 2]) -> Result<LoopbackGame, LabError> {
    settings.validate()?;
    let config = arena_server::ServerConfig { map: map.to_string(), items: true, ..settings.server_config() };
    let mut lab = LoopbackGame::start(&config, &settings.netcode(), settings.seed, &names, frame())
        .map_err(|_| LabError::NotJoined)?;
    lab.step(frames_for(WARMUP_S));
    Ok(lab)
}

/// A target strafing at full speed across the shooter's view, along the
/// lane, turning back at random every 1-3 s and at the ends of its lane.
pub(crate) struct Strafer {
    rng: arena_client::conditioner::SplitMix64,
    direction: f32,
    next_change_s: f64,
}

impl Strafer {
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = arena_client::conditioner::SplitMix64::new(seed ^ 0x5eed);
        let next_change_s = 1.0 + 2.0 * f64::from(rng.next_f32());
        Self { rng, direction: 1.0, next_change_s }
    }

    /// Sets client `target`'s input for the frame at `t_s` seconds.
    pub(crate) fn drive(&mut self, lab: &mut LoopbackGame, target: usize, t_s: f64) {
        let target_x = crate::harness::drawn_self(&lab.clients[target]).map(|s| s.pos.x).unwrap_or(0.0);
        if t_s >= self.next_change_s {
            self.direction = -self.direction;
            self.next_change_s = t_s + 1.0 + 2.0 * f64::from(self.rng.next_f32());
        }
        if target_x > LANE_HALF_WIDTH_M {
            self.direction = -1.0;
        } else if target_x < -LANE_HALF_WIDTH_M {
            self.direction = 1.0;
        }
        let mut input = lab.clients[target].world_mut().resource_mut::<arena_client::LocalInput>();
        // Facing south (towards the shooter), right is -x.
        input.yaw = std::f32::consts::PI;
        input.pitch = 0.0;
        input.forward = 0.0;
        input.right = -self.direction;
    }
}
