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
use arena_sim::{Buttons, Hitbox};
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::{LoopbackGame, client_app_with, server_app_with_frame, session, step, step_until};

/// Frames per second of the simulated client (and server loop).
pub const LAB_FRAME_HZ: f64 = 240.0;
/// Seconds after joining before measuring, for the clock to settle.
pub const WARMUP_S: f64 = 2.0;
fn frame() -> Duration {
    Duration::from_secs_f64(1.0 / LAB_FRAME_HZ)
}

fn frames_for(seconds: f64) -> usize {
    (seconds * LAB_FRAME_HZ).round() as usize
}

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

/// The drawn state of the first remote player a client sees.
fn drawn_remote(client: &mut App) -> Option<arena_sim::PlayerState> {
    let mut query =
        client.world_mut().query_filtered::<&arena_client::Interpolated, Without<arena_client::LocalPlayer>>();
    let interpolated = query.iter(client.world()).next().map(|i| i.0);
    let interpolation = client.world().resource::<NetcodeSettings>().interpolation;
    if interpolation {
        interpolated
    } else {
        let mut query =
            client.world_mut().query_filtered::<&arena_client::NetState, Without<arena_client::LocalPlayer>>();
        query.iter(client.world()).next().map(|n| n.state)
    }
}

/// The interpolation delay a client uses, milliseconds (0 with interpolation off).
fn interp_ms_of(client: &App) -> f64 {
    let settings = client.world().resource::<NetcodeSettings>();
    if !settings.interpolation {
        return 0.0;
    }
    let roster = client.world().resource::<arena_client::Roster>();
    arena_client::interpolation::delay_ticks(settings, roster) * 1000.0 / f64::from(roster.tick_hz.max(1))
}

/// Yaw and pitch that look from `eye` at `target`.
fn aim(eye: Vec3, target: Vec3) -> (f32, f32) {
    let dir = (target - eye).normalize_or_zero();
    ((-dir.x).atan2(-dir.z), dir.y.clamp(-1.0, 1.0).asin())
}

/// What `arena lab hitreg` prints.
#[derive(Debug, Serialize)]
pub struct HitregReport {
    pub experiment: &'static str,
    #[serde(flatten)]
    pub settings: LabSettings,
    /// Shots the server resolved.
    pub shots: usize,
    pub hits: usize,
    pub hit_ratio: f64,
    /// The target's mean speed on the server, m/s.
    pub target_speed_mps: f64,
    /// The distance from shooter to target, mean, metres.
    pub range_m: f64,
    pub rtt_ms: f64,
    /// The shooter's interpolation delay, ms.
    pub interp_ms: f64,
    /// Mean distance, across the shot, between the aim and where the target
    /// was on the server when the shot was resolved: how far one had to lead.
    pub lead_needed_m: f64,
    /// Mean distance between the target as the shooter drew it and as the
    /// server tested it.
    pub rewind_error_m: f64,
    /// Claimed render times the server did not believe.
    pub render_times_rejected: u64,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// Where the shooter stands (on the south platform, looking north through
/// the gap in its parapet) and the lane the target strafes along, about 20 m away.
const SHOOTER_AT: Vec3 = Vec3::new(0.0, 3.0, 21.5);
const TARGET_AT: Vec3 = Vec3::new(0.0, 0.0, 2.5);
const LANE_HALF_WIDTH_M: f32 = 8.0;

/// A server and two named clients with the lab's settings, joined and warmed up.
fn two_player_lab(settings: &LabSettings, names: [&str; 2]) -> Result<LoopbackGame, String> {
    settings.validate()?;
    let mut lab = LoopbackGame::start(&settings.server_config(), &settings.netcode(), settings.seed, &names, frame())?;
    lab.step(frames_for(WARMUP_S));
    Ok(lab)
}

/// Runs `arena lab hitreg`: a shooter aims at the centre of a strafing
/// target's body as its client draws it, and fires; the server judges.
pub fn hitreg(settings: LabSettings) -> Result<HitregReport, String> {
    let mut lab = two_player_lab(&settings, ["Shooter", "Target"])?;
    let (shooter, target) = (0, 1);
    lab.teleport("Shooter", SHOOTER_AT, 0.0);
    lab.teleport("Target", TARGET_AT, std::f32::consts::PI);
    lab.step(LAB_FRAME_HZ as usize);
    lab.server.world_mut().resource_mut::<arena_server::ShotLog>().0.clear();
    let rejected_before = lab.server.world().resource::<arena_server::CombatStats>().render_times_rejected;

    let mut rng = arena_client::conditioner::SplitMix64::new(settings.seed ^ 0x5eed);
    let mut direction = 1.0f32;
    let mut next_change_s = 1.0 + 2.0 * f64::from(rng.next_f32());
    let mut speeds = Vec::new();
    let mut seen: std::collections::HashMap<u32, (Hitbox, Hitbox)> = std::collections::HashMap::new();
    let frames = (settings.seconds * LAB_FRAME_HZ).round() as usize;
    for frame_index in 0..frames {
        let t = frame_index as f64 / LAB_FRAME_HZ;
        // The target strafes at full speed across the shooter's view, turning
        // back at random every 1-3 s and at the ends of its lane.
        let target_x = lab.clients[target].world().resource::<LocalRender>().state.map(|s| s.pos.x).unwrap_or(0.0);
        if t >= next_change_s {
            direction = -direction;
            next_change_s = t + 1.0 + 2.0 * f64::from(rng.next_f32());
        }
        if target_x > LANE_HALF_WIDTH_M {
            direction = -1.0;
        } else if target_x < -LANE_HALF_WIDTH_M {
            direction = 1.0;
        }
        {
            let mut input = lab.clients[target].world_mut().resource_mut::<LocalInput>();
            // Facing south (towards the shooter), right is -x.
            input.yaw = std::f32::consts::PI;
            input.pitch = 0.0;
            input.forward = 0.0;
            input.right = -direction;
        }
        // The shooter aims at the target's body as its own client draws it.
        let eye = lab.clients[shooter].world().resource::<LocalRender>().state.map(|s| s.eye_pos());
        let drawn = drawn_remote(&mut lab.clients[shooter]);
        if let (Some(eye), Some(drawn)) = (eye, drawn) {
            let (yaw, pitch) = aim(eye, Hitbox::of(&drawn).body_center());
            let mut input = lab.clients[shooter].world_mut().resource_mut::<LocalInput>();
            input.yaw = yaw;
            input.pitch = pitch;
            input.held = Buttons::FIRE;
        }
        lab.keep_alive("Target");
        lab.step(1);
        if let Some(state) = lab.sim("Target") {
            speeds.push(f64::from(Vec3::new(state.vel.x, 0.0, state.vel.z).length()));
        }
        // What the shooter drew and what the server tested, per shot.
        for c in &lab.clients[shooter].world().resource::<arena_client::ShotComparisons>().0 {
            let drawn = c.fired.seen.first().map(|(_, h)| *h);
            let tested = c.result.hitboxes.first().map(|(_, h)| *h);
            if let (Some(drawn), Some(tested)) = (drawn, tested) {
                seen.entry(c.fired.cmd_tick).or_insert((drawn, tested));
            }
        }
    }

    let records: Vec<arena_server::ShotRecord> =
        lab.server.world().resource::<arena_server::ShotLog>().0.iter().cloned().collect();
    let shots = records.len();
    let hits = records.iter().filter(|r| r.hit.is_some()).count();
    let leads: Vec<f64> = records
        .iter()
        .filter_map(|r| {
            let (_, current) = r.current.first()?;
            let to = current.body_center() - r.shot.origin;
            Some(f64::from((to - r.shot.dir * to.dot(r.shot.dir)).length()))
        })
        .collect();
    let ranges: Vec<f64> = records
        .iter()
        .filter_map(|r| r.current.first().map(|(_, h)| f64::from(h.body_center().distance(r.shot.origin))))
        .collect();
    let errors: Vec<f64> = seen.values().map(|(drawn, tested)| f64::from(drawn.feet.distance(tested.feet))).collect();
    let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
    let rtt_ms = lab.clients[shooter].world().resource::<NetStats>().rtt_ms;
    let interp_ms = interp_ms_of(&lab.clients[shooter]);
    let rejected = lab.server.world().resource::<arena_server::CombatStats>().render_times_rejected - rejected_before;
    Ok(HitregReport {
        experiment: "hitreg",
        settings,
        shots,
        hits,
        hit_ratio: if shots == 0 { f64::NAN } else { hits as f64 / shots as f64 },
        target_speed_mps: mean(&speeds),
        range_m: mean(&ranges),
        rtt_ms,
        interp_ms,
        lead_needed_m: mean(&leads),
        rewind_error_m: mean(&errors),
        render_times_rejected: rejected,
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
    })
}

/// What `arena lab interpolation` prints.
#[derive(Debug, Serialize)]
pub struct InterpolationReport {
    pub experiment: &'static str,
    #[serde(flatten)]
    pub settings: LabSettings,
    /// Rendered position against the target's true position at the render
    /// time, metres: mean and 99th percentile over frames.
    pub render_error_mean_m: f64,
    pub render_error_p99_m: f64,
    pub render_error_max_m: f64,
    pub frames: usize,
    pub interp_ms: f64,
    pub extrapolated_frames: u64,
    pub held_frames: u64,
    pub history_resets: u64,
    pub rtt_ms: f64,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// The target's known path: a loop of running in a circle, stopping, running
/// the other way and jumping, repeated.
fn circle_script(t: f64) -> (f32, f32, bool) {
    match t % 8.0 {
        p if p < 3.0 => (1.0, 1.3, false),
        p if p < 3.5 => (0.0, 0.0, false),
        p if p < 6.5 => (1.0, -1.3, (p - 4.0).abs() < 1.0 / 64.0 || (p - 5.5).abs() < 1.0 / 64.0),
        _ => (0.0, 0.6, false),
    }
}

/// Runs `arena lab interpolation`: an observer draws a target that runs, turns
/// and jumps on a known path; the drawn position is compared, every frame,
/// with where the server had the target at the render time.
pub fn interpolation(settings: LabSettings) -> Result<InterpolationReport, String> {
    let mut lab = two_player_lab(&settings, ["Observer", "Target"])?;
    let (observer, target) = (0, 1);
    lab.teleport("Observer", SHOOTER_AT, 0.0);
    lab.teleport("Target", Vec3::new(0.0, 0.0, 10.0), 0.0);
    lab.step(LAB_FRAME_HZ as usize);
    let start = lab.clients[observer].world().resource::<arena_client::InterpClock>().clone();

    // The target's true positions, by server tick.
    let mut truth: std::collections::BTreeMap<u32, Vec3> = std::collections::BTreeMap::new();
    let mut errors = Vec::new();
    let frames = (settings.seconds * LAB_FRAME_HZ).round() as usize;
    for frame_index in 0..frames {
        let t = frame_index as f64 / LAB_FRAME_HZ;
        let (forward, turn, jump) = circle_script(t);
        {
            let mut input = lab.clients[target].world_mut().resource_mut::<LocalInput>();
            input.forward = forward;
            input.yaw = arena_sim::cmd::wrap_angle(input.yaw + turn / LAB_FRAME_HZ as f32);
            if jump {
                input.press(Buttons::JUMP);
            }
        }
        lab.keep_alive("Target");
        lab.step(1);
        let tick = lab.server.world().resource::<arena_server::ServerTick>().0;
        if let Some(state) = lab.sim("Target") {
            truth.insert(tick, state.pos);
        }
        // The time the observer means to show: the render time, or with
        // interpolation off its estimate of the newest server time.
        let clock = lab.clients[observer].world().resource::<arena_client::InterpClock>().clone();
        let shown_tick = clock.render_tick
            + if lab.clients[observer].world().resource::<NetcodeSettings>().interpolation {
                0.0
            } else {
                clock.delay_ticks
            };
        let Some(drawn) = drawn_remote(&mut lab.clients[observer]) else { continue };
        let (a, b) = (shown_tick.floor() as u32, shown_tick.floor() as u32 + 1);
        if let (Some(pa), Some(pb)) = (truth.get(&a), truth.get(&b)) {
            let true_pos = pa.lerp(*pb, (shown_tick - shown_tick.floor()) as f32);
            errors.push(f64::from(drawn.pos.distance(true_pos)));
        }
        while truth.len() > 1024 {
            truth.pop_first();
        }
    }
    let end = lab.clients[observer].world().resource::<arena_client::InterpClock>().clone();
    let mut sorted = errors.clone();
    sorted.sort_by(f64::total_cmp);
    let percentile =
        |p: f64| sorted.get(((sorted.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(f64::NAN);
    Ok(InterpolationReport {
        experiment: "interpolation",
        render_error_mean_m: if errors.is_empty() {
            f64::NAN
        } else {
            errors.iter().sum::<f64>() / errors.len() as f64
        },
        render_error_p99_m: percentile(0.99),
        render_error_max_m: percentile(1.0),
        frames: errors.len(),
        interp_ms: interp_ms_of(&lab.clients[observer]),
        extrapolated_frames: end.extrapolated_frames - start.extrapolated_frames,
        held_frames: end.held_frames - start.held_frames,
        history_resets: end.history_resets - start.history_resets,
        rtt_ms: lab.clients[observer].world().resource::<NetStats>().rtt_ms,
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
        settings,
    })
}
