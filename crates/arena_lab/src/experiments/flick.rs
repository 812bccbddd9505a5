//! `arena lab flick`: a shooter whose client draws at a chosen frame rate
//! sweeps its view at a chosen rate across a strafing target, and clicks in
//! each frame whose crosshair lies on the target as drawn (well inside its
//! body, with the rifle ready). The server's shots are compared with the
//! click frames: hits, the angle between each shot and the click frame's
//! crosshair, the time between the instant the shot was fired from and the
//! click frame, and how often the hit the client foresaw was the verdict.
//! With sub-tick shots the server fires from the click; without, from the
//! next tick, up to a tick or two (and several degrees of a flick) later.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use arena_client::{DrawnFrame, HitPredictions, LocalInput, NetStats, Prediction, ShotComparisons, ShotMemory};
use arena_sim::hitbox::{BodyPart, ray_capsule};
use arena_sim::player::view_forward;
use arena_sim::{Buttons, Hitbox, look_at};
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::{LoopbackGame, drawn_self};

use super::setup::{
    FPS_RANGE, LabError, LabSettings, SHOOTER_AT, Strafer, TARGET_AT, WARMUP_S, interp_ms_of, two_player_lab_at,
};

/// The crosshair must pass this far inside the drawn body for a click (a
/// player fires on the target, not on its outline), metres.
const INSIDE_M: f32 = 0.1;

/// How the shooter flicks.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Flick {
    /// The shooter's frames per second (the server's too).
    pub fps: f64,
    /// How fast the view sweeps, degrees per second.
    pub turn_deg_s: f64,
    /// How wide each sweep is at least, degrees, centred on the target as
    /// drawn (at least four frames' turn, so that the view sweeps at all).
    pub sweep_deg: f64,
}

impl Default for Flick {
    fn default() -> Self {
        Self { fps: 144.0, turn_deg_s: 1000.0, sweep_deg: 12.0 }
    }
}

/// What `arena lab flick` prints.
#[derive(Debug, Serialize)]
pub struct FlickReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    #[serde(flatten)]
    pub flick: Flick,
    /// Clicks made, and the server's shots from them.
    pub clicks: usize,
    pub shots: usize,
    pub hits: usize,
    pub hit_ratio: f64,
    /// Shots fired from their click (the rest from the tick).
    pub clicked_shots: usize,
    /// The angle between a shot and its click frame's crosshair, degrees.
    pub angle_error_p50_deg: f64,
    pub angle_error_p99_deg: f64,
    pub angle_error_max_deg: f64,
    /// The time between the instant a shot left from and its click frame, ms.
    pub time_error_mean_ms: f64,
    pub time_error_max_ms: f64,
    /// Shots whose foreseen hit (or miss) was the server's verdict.
    pub predicted_agreement: f64,
    pub predicted_hits: u64,
    pub confirmed: u64,
    pub denied: u64,
    pub unforeseen: u64,
    pub rtt_ms: f64,
    pub interp_ms: f64,
    pub warmup_s: f64,
}

/// A click the shooter made, as its frame was.
struct Click {
    /// The crosshair's direction.
    dir: Vec3,
    /// Where the frame was on the tick timeline: `tick - 1 + fraction`, ticks.
    at_tick: f64,
}

/// Why a flick cannot run.
fn check(flick: &Flick) -> Result<(), LabError> {
    let ok = FPS_RANGE.contains(&flick.fps)
        && (0.0..=20_000.0).contains(&flick.turn_deg_s)
        && (0.5..=90.0).contains(&flick.sweep_deg);
    if ok { Ok(()) } else { Err(LabError::Flick) }
}

/// Runs `arena lab flick`.
pub fn flick(settings: LabSettings, flick: Flick) -> Result<FlickReport, LabError> {
    check(&flick)?;
    let frame = Duration::from_secs_f64(1.0 / flick.fps);
    let mut lab = two_player_lab_at(&settings, ["Shooter", "Target"], frame)?;
    let (shooter, target) = (0, 1);
    lab.teleport("Shooter", SHOOTER_AT, 0.0);
    lab.teleport("Target", TARGET_AT, std::f32::consts::PI);
    lab.step(flick.fps.round() as usize);
    lab.server.world_mut().resource_mut::<arena_server::ShotLog>().0.clear();
    let judged_before = lab.clients[shooter].world().resource::<HitPredictions>().clone();

    let mut strafer = Strafer::new(settings.seed);
    let mut phases = arena_client::conditioner::SplitMix64::new(settings.seed ^ 0xf11c);
    let tick_ms = 1000.0 / f64::from(settings.tick);
    // A click's shot is in a command at most two ticks and a frame later
    // (the frame that sends it), and a tick for the clock's nudging.
    let stale_ticks = 3.0 + f64::from(settings.tick) / flick.fps;
    let turn_rad_per_frame = (flick.turn_deg_s / flick.fps).to_radians() as f32;
    let half_sweep = ((flick.sweep_deg / 2.0).to_radians() as f32).max(2.0 * turn_rad_per_frame);
    let (mut offset, mut direction, mut centre) = (-half_sweep, 1.0f32, 0.0f32);
    let mut pending: Vec<Click> = Vec::new();
    let mut clicks: HashMap<u32, Click> = HashMap::new();
    let mut known_ticks: HashSet<u32> = HashSet::new();
    let mut clicked_last_frame = false;
    let frames = (settings.seconds * flick.fps).round() as usize;
    for frame_index in 0..frames {
        strafer.drive(&mut lab, target, frame_index as f64 / flick.fps);
        let me = drawn_self(&lab.clients[shooter]);
        let them = lab.drawn_other(shooter);
        let (Some(me), Some(them)) = (me, them) else {
            lab.step(1);
            continue;
        };
        let eye = me.eye_pos();
        let client = lab.clients[shooter].world();
        let view = client.resource::<LocalInput>();
        let crosshair = view_forward(view.yaw, view.pitch);
        // The last click is not in a command yet (frames faster than ticks).
        let waiting = view.click.is_some() || view.pressed.contains(Buttons::FIRE);
        let drawn_frame = *client.resource::<DrawnFrame>();
        let rifle = client.resource::<Prediction>().current;
        let ready = rifle
            .is_some_and(|s| s.alive && s.ammo > 0 && s.reload_s == 0.0 && s.fire_cooldown_s <= 0.0 && !s.fire_held);
        let empty = rifle.is_some_and(|s| s.ammo == 0 && s.reload_s == 0.0);
        // Well inside the body as this frame drew it.
        let torso = Hitbox::of(&them).parts()[BodyPart::Torso.index()];
        let on_target = them.alive && ray_capsule(eye, crosshair, torso.a, torso.b, torso.radius - INSIDE_M).is_some();
        if clicked_last_frame {
            lab.hold_fire(shooter, false);
            clicked_last_frame = false;
        } else if empty {
            lab.clients[shooter].world_mut().resource_mut::<LocalInput>().press(Buttons::RELOAD);
            clicked_last_frame = true;
        } else if on_target
            && ready
            && !waiting
            && let Some(tick) = drawn_frame.tick
        {
            // Pressed before this frame's turn: the click is in the frame drawn last.
            lab.clients[shooter].world_mut().resource_mut::<LocalInput>().press(Buttons::FIRE);
            let at_tick = f64::from(tick) - 1.0 + f64::from(drawn_frame.fraction);
            pending.push(Click { dir: crosshair, at_tick });
            clicked_last_frame = true;
        }
        // The sweep: back and forth across the target, re-centred on it at
        // each end, from a random part of a frame's turn (so that the frames
        // fall on the target at every phase).
        offset += direction * turn_rad_per_frame;
        if turn_rad_per_frame == 0.0 {
            // Not flicking: the view holds on the target as drawn.
            (centre, offset) = (look_at(eye, Hitbox::of(&them).body_center()).0, 0.0);
        } else if offset.abs() > half_sweep {
            direction = -direction;
            offset = -direction * (half_sweep - phases.next_f32() * turn_rad_per_frame);
            centre = look_at(eye, Hitbox::of(&them).body_center()).0;
        }
        let pitch = look_at(eye, Hitbox::of(&them).body_center()).1;
        {
            let mut input = lab.clients[shooter].world_mut().resource_mut::<LocalInput>();
            input.yaw = arena_sim::cmd::wrap_angle(centre + offset);
            input.pitch = pitch;
        }
        lab.keep_alive("Target");
        lab.step(1);
        take_fired_ticks(&lab, shooter, &mut known_ticks, &mut pending, &mut clicks, stale_ticks);
    }
    // The last verdicts.
    lab.hold_fire(shooter, false);
    lab.step((0.5 * flick.fps).round() as usize);
    take_fired_ticks(&lab, shooter, &mut known_ticks, &mut pending, &mut clicks, stale_ticks);
    report(&lab, settings, flick, &clicks, judged_before, tick_ms)
}

/// Each shot the client fired since the last look is its oldest click's
/// that is not `stale_ticks` older than the shot's command (a click that
/// never became a shot is not paired with a later one).
fn take_fired_ticks(
    lab: &LoopbackGame,
    shooter: usize,
    known: &mut HashSet<u32>,
    pending: &mut Vec<Click>,
    clicks: &mut HashMap<u32, Click>,
    stale_ticks: f64,
) {
    let world = lab.clients[shooter].world();
    let remembered = world.resource::<ShotMemory>().0.iter().map(|s| s.cmd_tick);
    let judged = world.resource::<ShotComparisons>().0.iter().map(|c| c.fired.cmd_tick);
    let mut fired: Vec<u32> = remembered.chain(judged).filter(|t| known.insert(*t)).collect();
    fired.sort_unstable();
    for tick in fired {
        pending.retain(|c| c.at_tick >= f64::from(tick) - stale_ticks);
        if !pending.is_empty() {
            clicks.insert(tick, pending.remove(0));
        }
    }
}

fn report(
    lab: &LoopbackGame,
    settings: LabSettings,
    flick: Flick,
    clicks: &HashMap<u32, Click>,
    judged_before: HitPredictions,
    tick_ms: f64,
) -> Result<FlickReport, LabError> {
    let records: Vec<arena_server::ShotRecord> =
        lab.server.world().resource::<arena_server::ShotLog>().0.iter().cloned().collect();
    let mut angles = Vec::new();
    let mut times = Vec::new();
    let (mut shots, mut hits, mut clicked_shots) = (0, 0, 0);
    for record in &records {
        let Some(click) = clicks.get(&record.cmd_tick) else { continue };
        shots += 1;
        hits += usize::from(record.hit.is_some());
        clicked_shots += usize::from(record.click_fraction.is_some());
        // In f64 and by atan2: an f32 acos cannot tell angles below 0.03°.
        let (shot, crosshair) = (record.shot.dir.as_dvec3(), click.dir.as_dvec3());
        angles.push(shot.cross(crosshair).length().atan2(shot.dot(crosshair)).to_degrees());
        // A clicked shot leaves from its fraction of the tick before its
        // command's; any other from the end of its command's tick.
        let fired_at = match record.click_fraction {
            Some(fraction) => f64::from(record.cmd_tick) - 2.0 + f64::from(fraction),
            None => f64::from(record.cmd_tick),
        };
        times.push((fired_at - click.at_tick).abs() * tick_ms);
    }
    angles.sort_by(f64::total_cmp);
    let quantile = |v: &[f64], q: f64| {
        if v.is_empty() { f64::NAN } else { v[((v.len() - 1) as f64 * q).round() as usize] }
    };
    let client = lab.clients[0].world();
    let now = client.resource::<HitPredictions>();
    let since = |a: u64, b: u64| a.saturating_sub(b);
    let judged = since(now.judged, judged_before.judged);
    let agreed = since(now.agreed, judged_before.agreed);
    Ok(FlickReport {
        experiment: "flick",
        clicks: clicks.len(),
        shots,
        hits,
        hit_ratio: if shots == 0 { f64::NAN } else { hits as f64 / shots as f64 },
        clicked_shots,
        angle_error_p50_deg: quantile(&angles, 0.5),
        angle_error_p99_deg: quantile(&angles, 0.99),
        angle_error_max_deg: angles.last().copied().unwrap_or(f64::NAN),
        time_error_mean_ms: if times.is_empty() { f64::NAN } else { times.iter().sum::<f64>() / times.len() as f64 },
        time_error_max_ms: times.iter().copied().fold(f64::NAN, f64::max),
        predicted_agreement: if judged == 0 { f64::NAN } else { agreed as f64 / judged as f64 },
        predicted_hits: since(now.predicted_hits, judged_before.predicted_hits),
        confirmed: since(now.confirmed, judged_before.confirmed),
        denied: since(now.denied, judged_before.denied),
        unforeseen: since(now.unforeseen, judged_before.unforeseen),
        rtt_ms: client.resource::<NetStats>().rtt_ms,
        interp_ms: interp_ms_of(&lab.clients[0]),
        warmup_s: WARMUP_S,
        settings,
        flick,
    })
}
