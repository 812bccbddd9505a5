//! `arena lab`: headless experiments in one process. A server and clients talk
//! over real UDP on 127.0.0.1, the link conditioner on the client adds the
//! latency, jitter and loss asked for, and time advances by hand at a fixed
//! frame rate, so that a run is repeatable (same seed, same figures) and as
//! fast as the machine allows. Each experiment prints one JSON object.

use std::time::Duration;

use arena_client::{
    ClientStats, ClockSync, LinkConditions, LocalInput, LocalRender, NetStats, NetcodeSettings, Prediction, Session,
    ThisTick,
};
use arena_server::{CommandBuffer, CommandStats, ServerPlayer, Sim};
use arena_sim::Buttons;
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::{client_app_with, server_app_with_frame, session, step, step_until};

/// Frames per second of the simulated client (and server loop).
pub const LAB_FRAME_HZ: f64 = 240.0;
/// Seconds after joining before measuring, for the clock to settle.
pub const WARMUP_S: f64 = 2.0;
/// A frame-to-frame move of the drawn player above this is visible motion, metres.
const VISIBLE_MOTION_M: f32 = 1.0e-3;

/// The settings every experiment shares, named as their flags.
#[derive(Clone, Debug, Serialize)]
pub struct LabSettings {
    pub prediction: Switch,
    pub reconciliation: Switch,
    pub interpolation: Switch,
    pub lag_compensation: Switch,
    /// Interpolation delay, ms; two snapshot intervals when not given.
    pub interp_ms: Option<u16>,
    /// Snapshots per second; the tick rate when not given.
    pub snapshot_rate: Option<u32>,
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
    fn netcode(&self) -> NetcodeSettings {
        NetcodeSettings {
            prediction: self.prediction.on(),
            reconciliation: self.reconciliation.on(),
            interpolation: self.interpolation.on(),
            interp_ms: self.interp_ms,
            lag_compensation: self.lag_compensation.on(),
            show_hitboxes: false,
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
            ..arena_server::ServerConfig::default()
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !arena_sim::TICK_HZ_RANGE.contains(&self.tick) {
            return Err(format!("--tick must be within {:?}", arena_sim::TICK_HZ_RANGE));
        }
        if self.snapshot_rate.is_some_and(|r| r == 0 || r > self.tick) {
            return Err("--snapshot-rate must be 1..=the tick rate".into());
        }
        if self.interp_ms.is_some_and(|ms| ms > arena_protocol::MAX_INTERP_MS) {
            return Err(format!("--interp-ms must be 0..={}", arena_protocol::MAX_INTERP_MS));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err("--seconds must be within 0..=3600".into());
        }
        let conditions = self.netcode().conditions;
        if conditions.clamped() != conditions {
            return Err(format!(
                "--fake-latency-ms and --fake-jitter-ms must be within 0..={}, --fake-loss within 0..=1",
                LinkConditions::MAX_MS
            ));
        }
        Ok(())
    }
}

/// What `arena lab prediction` prints.
#[derive(Debug, Serialize)]
pub struct PredictionReport {
    pub experiment: &'static str,
    #[serde(flatten)]
    pub settings: LabSettings,
    /// Command packets sent while measuring (one per tick).
    pub commands_sent: u64,
    pub mispredictions: u64,
    /// Largest correction of the drawn player, metres.
    pub max_correction_m: f32,
    /// Ticks the server ran on a repeated command because ours had not come.
    pub missing_commands: u64,
    /// Commands that reached the server after their tick.
    pub late_commands: u64,
    pub rtt_ms: f64,
    /// Mean time from a command's creation to the first frame in which the
    /// drawn player moves because of it, milliseconds.
    pub input_to_motion_ms: f64,
    /// Starts from standing still that `input_to_motion_ms` averages.
    pub motion_onsets: usize,
    /// Distance between the client's player and the server's at the end, metres.
    pub final_error_m: f32,
    pub clock_resets: u32,
    /// How early commands reached the server at worst in the last second, ticks.
    pub command_margin_ticks: Option<f32>,
    pub frame_hz: f64,
    /// Seconds after joining that were not measured.
    pub warmup_s: f64,
}

/// The scripted input, a 10 s loop: run, stop, turn, jump, run diagonally into
/// whatever wall comes, turn back, strafe along it, crouch-walk, stand.
/// Returns (forward, right, yaw change per second, buttons held, jump press).
fn script(t: f64) -> (f32, f32, f32, Buttons, bool) {
    let quarter = std::f32::consts::FRAC_PI_2;
    match t % 10.0 {
        p if p < 2.0 => (1.0, 0.0, 0.0, Buttons::default(), false),
        p if p < 3.0 => (0.0, 0.0, 0.0, Buttons::default(), false),
        p if p < 3.5 => (0.0, 0.0, quarter / 0.5, Buttons::default(), false),
        p if p < 4.0 => (1.0, 0.0, 0.0, Buttons::default(), p < 3.5 + 1.0 / 64.0),
        p if p < 6.0 => (1.0, 1.0, 0.0, Buttons::default(), false),
        p if p < 6.5 => (0.0, 0.0, -1.5 * quarter / 0.5, Buttons::default(), false),
        p if p < 8.5 => (0.5, 1.0, 0.0, Buttons::default(), false),
        p if p < 9.5 => (1.0, 0.0, 0.0, Buttons::CROUCH, false),
        _ => (0.0, 0.0, 0.0, Buttons::default(), false),
    }
}

fn server_command_stats(server: &mut App) -> CommandStats {
    let mut query = server.world_mut().query::<(&ServerPlayer, &CommandBuffer)>();
    query.iter(server.world()).map(|(_, b)| b.stats).next().unwrap_or_default()
}

fn server_position(server: &mut App) -> Option<Vec3> {
    let mut query = server.world_mut().query::<&Sim>();
    query.iter(server.world()).map(|s| s.pos).next()
}

fn drawn_position(client: &App) -> Option<Vec3> {
    client.world().resource::<LocalRender>().state.map(|s| s.pos)
}

/// Runs `arena lab prediction`.
pub fn prediction(settings: LabSettings) -> Result<PredictionReport, String> {
    settings.validate()?;
    let frame = Duration::from_secs_f64(1.0 / LAB_FRAME_HZ);
    let (mut server, info) = server_app_with_frame(&settings.server_config(), frame);
    let mut client = client_app_with(frame, info.local_addr, "Lab", settings.netcode());
    let joined = step_until(&mut [&mut server, &mut client], (10.0 * LAB_FRAME_HZ) as usize, |apps| {
        session(apps[1]) == Session::InGame
    });
    if !joined {
        return Err("the lab client did not get into the game within 10 s".into());
    }
    step(&mut [&mut server, &mut client], (WARMUP_S * LAB_FRAME_HZ) as usize);

    let start_server = server_command_stats(&mut server);
    let start_sent = client.world().resource::<ClientStats>().commands_sent;
    let start_mispredictions = client.world().resource::<Prediction>().mispredictions;
    client.world_mut().resource_mut::<Prediction>().max_correction_m = 0.0;

    let frames = (settings.seconds * LAB_FRAME_HZ).round() as usize;
    let mut last_drawn = drawn_position(&client);
    let mut still_frames = 0usize;
    let mut onset: Option<f64> = None;
    let mut delays_ms: Vec<f64> = Vec::new();
    let mut was_moving_input = false;
    for frame_index in 0..frames {
        let t = frame_index as f64 / LAB_FRAME_HZ;
        let (forward, right, turn, held, jump) = script(t);
        {
            let mut input = client.world_mut().resource_mut::<LocalInput>();
            input.forward = forward;
            input.right = right;
            input.yaw = arena_sim::cmd::wrap_angle(input.yaw + turn / LAB_FRAME_HZ as f32);
            input.held = held;
            if jump {
                input.press(Buttons::JUMP);
            }
        }
        server.update();
        client.update();

        // A command with movement made this frame, after standing still: the
        // clock for input-to-motion starts now.
        let moving_input = client.world().resource::<ThisTick>().0.is_some_and(|c| c.forward != 0.0 || c.right != 0.0);
        if moving_input && !was_moving_input && still_frames as f64 > 0.2 * LAB_FRAME_HZ && onset.is_none() {
            onset = Some(t);
        }
        if client.world().resource::<ThisTick>().0.is_some() {
            was_moving_input = moving_input;
        }
        let drawn = drawn_position(&client);
        let moved = match (drawn, last_drawn) {
            (Some(a), Some(b)) => a.distance(b) > VISIBLE_MOTION_M,
            _ => false,
        };
        last_drawn = drawn;
        if moved {
            if let Some(started) = onset.take() {
                delays_ms.push((t - started) * 1000.0);
            }
            still_frames = 0;
        } else {
            still_frames += 1;
        }
    }
    let world = client.world();
    let commands_sent = world.resource::<ClientStats>().commands_sent - start_sent;
    let prediction = world.resource::<Prediction>();
    let mispredictions = prediction.mispredictions - start_mispredictions;
    let max_correction_m = prediction.max_correction_m;
    let end_server = server_command_stats(&mut server);

    // Let go and settle, then compare where each side has the player.
    {
        let mut input = client.world_mut().resource_mut::<LocalInput>();
        input.forward = 0.0;
        input.right = 0.0;
        input.held = Buttons::default();
    }
    step(&mut [&mut server, &mut client], (1.5 * LAB_FRAME_HZ) as usize);
    let client_pos = client.world().resource::<Prediction>().current.map(|s| s.pos);
    let final_error_m = match (client_pos, server_position(&mut server)) {
        (Some(a), Some(b)) => a.distance(b),
        _ => f32::NAN,
    };
    let stats = client.world().resource::<NetStats>().clone();
    let sync = client.world().get_resource::<ClockSync>().cloned();
    let input_to_motion_ms =
        if delays_ms.is_empty() { f64::NAN } else { delays_ms.iter().sum::<f64>() / delays_ms.len() as f64 };
    Ok(PredictionReport {
        experiment: "prediction",
        settings,
        commands_sent,
        mispredictions,
        max_correction_m,
        missing_commands: end_server.missing - start_server.missing,
        late_commands: end_server.late - start_server.late,
        rtt_ms: stats.rtt_ms,
        input_to_motion_ms,
        motion_onsets: delays_ms.len(),
        final_error_m,
        clock_resets: sync.as_ref().map(|s| s.resets).unwrap_or(0),
        command_margin_ticks: sync.and_then(|s| s.margin),
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
    })
}
