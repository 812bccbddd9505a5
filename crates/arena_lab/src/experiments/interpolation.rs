//! `arena lab interpolation`: an observer draws a target on a known path;
//! the drawn position is compared, every frame, with where the server had the
//! target at the render time.

use arena_client::{InterpStats, LocalInput, NetStats, NetcodeSettings, ServerClock};
use arena_sim::Buttons;
use bevy::prelude::*;
use serde::Serialize;

use super::setup::{
    LAB_FRAME_HZ, LabError, LabSettings, SHOOTER_AT, WARMUP_S, interp_ms_of, percentile, two_player_lab,
};

/// What `arena lab interpolation` prints.
#[derive(Debug, Serialize)]
pub struct InterpolationReport {
    pub experiment: &'static str,
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
    /// Extrapolated player-frames among all drawn from a history.
    pub extrapolated_share: f64,
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
pub fn interpolation(settings: LabSettings) -> Result<InterpolationReport, LabError> {
    let mut lab = two_player_lab(&settings, ["Observer", "Target"])?;
    let (observer, target) = (0, 1);
    lab.teleport("Observer", SHOOTER_AT, 0.0);
    lab.teleport("Target", Vec3::new(0.0, 0.0, 10.0), 0.0);
    lab.step(LAB_FRAME_HZ as usize);
    let start = lab.clients[observer].world().resource::<InterpStats>().clone();

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
        let clock = lab.clients[observer].world().resource::<ServerClock>().clone();
        let shown_tick = clock.render_tick
            + if lab.clients[observer].world().resource::<NetcodeSettings>().interpolation {
                0.0
            } else {
                clock.delay_ticks
            };
        let Some(drawn) = lab.drawn_other(observer) else { continue };
        let (a, b) = (shown_tick.floor() as u32, shown_tick.floor() as u32 + 1);
        if let (Some(pa), Some(pb)) = (truth.get(&a), truth.get(&b)) {
            let true_pos = pa.lerp(*pb, (shown_tick - shown_tick.floor()) as f32);
            errors.push(f64::from(drawn.pos.distance(true_pos)));
        }
        while truth.len() > 1024 {
            truth.pop_first();
        }
    }
    let end = lab.clients[observer].world().resource::<InterpStats>().clone();
    let mut sorted = errors.clone();
    sorted.sort_by(f64::total_cmp);
    let percentile = |p: f64| percentile(&sorted, p);
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
        extrapolated_share: {
            let drawn = (end.interpolated_frames + end.extrapolated_frames + end.held_frames)
                - (start.interpolated_frames + start.extrapolated_frames + start.held_frames);
            (end.extrapolated_frames - start.extrapolated_frames) as f64 / drawn.max(1) as f64
        },
        held_frames: end.held_frames - start.held_frames,
        history_resets: end.history_resets - start.history_resets,
        rtt_ms: lab.clients[observer].world().resource::<NetStats>().rtt_ms,
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
        settings,
    })
}
