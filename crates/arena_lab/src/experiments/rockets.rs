//! `arena lab rockets`: a shooter on the south platform fires rockets at a
//! target 20 m away, first standing still (alternately at the floor by its
//! feet and at its body), then strafing (at its body as drawn); run with
//! and without projectile compensation. What a player would notice: how
//! many frames from the click to a drawn rocket, how far the blast we drew
//! was from the server's, rockets drawn that the server never had, rockets
//! drawn twice, whether the splash we drew hurt whom the server's hurt, and
//! what it all costs on the wire.

use arena_client::{DrawnRockets, LocalInput, MessageTally, NetStats, RocketStats};
use arena_sim::{Buttons, Hitbox};
use bevy::prelude::*;
use serde::Serialize;

use super::setup::{
    LAB_FRAME_HZ, LabError, LabSettings, SHOOTER_AT, Strafer, Summary, TARGET_AT, WARMUP_S, interp_ms_of,
    two_player_lab,
};
use crate::harness::{LoopbackGame, drawn_self};

/// Time between rockets at the still target (a flight of 0.8 s, and the
/// target put back), and at the strafing one, seconds.
const STILL_INTERVAL_S: f64 = 1.6;
const MOVING_INTERVAL_S: f64 = 1.0;
/// Two own rockets drawn closer than this are one rocket drawn twice, metres
/// (two of them fired 0.8 s apart are 20 m apart).
const TWICE_M: f32 = 0.5;

/// The figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RocketFigures {
    pub projectile_compensation: bool,
    /// Rockets our prediction fired, and clicks.
    pub rockets_predicted: u64,
    pub clicks: usize,
    /// Frames from the click to the first frame that draws its rocket.
    pub frames_click_to_drawn_p50: f64,
    pub frames_click_to_drawn_max: f64,
    /// Distance from each blast we drew to the server's, metres.
    pub impact_error_still_p50_m: f64,
    pub impact_error_still_p95_m: f64,
    pub impact_error_moving_p50_m: f64,
    pub impact_error_moving_p95_m: f64,
    /// Blasts compared, still and moving.
    pub impacts_still: usize,
    pub impacts_moving: usize,
    /// Predicted rockets the server never had (faded), and their share.
    pub never_on_server: u64,
    pub never_on_server_ratio: f64,
    /// Frames in which one rocket of ours was drawn twice.
    pub drawn_twice: u64,
    /// Blasts whose splash we drew reaching the same players the server's
    /// did, of those compared; and the mean damage difference on the target.
    pub splash_agreement: f64,
    pub splashes_compared: usize,
    pub splash_damage_error_mean: f64,
    /// Of the rockets at the strafing target, those the server blew up on it.
    pub direct_hit_ratio_moving: f64,
    /// Encoded bytes per launch and per blast as the target's client received them.
    pub bytes_per_shot: f64,
    pub bytes_per_blast: f64,
    /// What a rocket in flight adds to each snapshot, bytes per rocket per
    /// snapshot (the still phase's snapshots with rockets flying less those
    /// without, per rocket). Rockets are not in snapshots; what differs is
    /// the players' motion (the target is still while a rocket flies, and
    /// knocked about after it lands), so this comes out below zero.
    pub bytes_per_rocket_per_tick: f64,
    /// Rocket messages the target's client received per rocket fired: a
    /// launch and a blast, whatever the flight's length.
    pub rocket_messages_per_rocket: f64,
    pub snapshot_bytes_rockets_flying: f64,
    pub snapshot_bytes_none_flying: f64,
    /// The server's catch-up, mean, milliseconds; catch-ups the cap cut.
    pub catch_up_mean_ms: f64,
    pub catch_ups_capped: u64,
    pub rtt_ms: f64,
    pub interp_ms: f64,
}

/// What `arena lab rockets` prints: the run with the settings given, and
/// the same with projectile compensation switched the other way.
#[derive(Debug, Serialize)]
pub struct RocketsReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    /// The run with the settings given.
    pub figures: RocketFigures,
    /// The same run with projectile compensation switched the other way.
    pub other: RocketFigures,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// Runs `arena lab rockets`.
pub fn rockets(settings: LabSettings) -> Result<RocketsReport, LabError> {
    use super::setup::Switch;
    let figures = one_run(&settings)?;
    let flipped = match settings.projectile_compensation {
        Switch::On => Switch::Off,
        Switch::Off => Switch::On,
    };
    let other = one_run(&LabSettings { projectile_compensation: flipped, ..settings.clone() })?;
    Ok(RocketsReport { experiment: "rockets", settings, figures, other, frame_hz: LAB_FRAME_HZ, warmup_s: WARMUP_S })
}

fn hold(lab: &mut LoopbackGame, i: usize, buttons: Buttons) {
    lab.clients[i].world_mut().resource_mut::<LocalInput>().held = buttons;
}

/// Own rockets drawn now by client `i`, and whether one of them is drawn twice.
fn snapshot_tally(lab: &LoopbackGame, i: usize) -> (u64, u64) {
    lab.clients[i].world().resource::<MessageTally>().down.get("snapshot").copied().unwrap_or_default()
}

fn drawn_own(lab: &LoopbackGame, i: usize) -> (usize, bool) {
    let drawn = &lab.clients[i].world().resource::<DrawnRockets>().0;
    let own: Vec<Vec3> = drawn.iter().filter(|r| r.own).map(|r| r.pos).collect();
    let twice = own.iter().enumerate().any(|(a, p)| own[a + 1..].iter().any(|q| p.distance(*q) < TWICE_M));
    (own.len(), twice)
}

fn one_run(settings: &LabSettings) -> Result<RocketFigures, LabError> {
    let mut lab = two_player_lab(settings, ["Shooter", "Target"])?;
    let (shooter, target) = (0, 1);
    lab.teleport("Shooter", SHOOTER_AT, 0.0);
    lab.teleport("Target", TARGET_AT, std::f32::consts::PI);
    // The launcher in hand, and the switch done.
    hold(&mut lab, shooter, Buttons::ROCKET);
    lab.step(LAB_FRAME_HZ as usize);
    lab.server.world_mut().resource_mut::<arena_server::RocketLog>().0.clear();
    let target_id = lab.id_of("Target");
    let capped_before = lab.server.world().resource::<arena_server::CombatStats>().catch_ups_capped;

    let frames = (settings.seconds * LAB_FRAME_HZ).round() as usize;
    let moving_from = frames / 2;
    let mut strafer = Strafer::new(settings.seed);
    let mut next_shot_s = 0.5;
    let mut shots = 0usize;
    let mut waiting: Option<usize> = None;
    let mut click_frames = Vec::new();
    let mut twice_frames = 0u64;
    let mut errors_at_switch = None;
    let mut moving_ticks = (u32::MAX, 0u32);
    // Snapshots the target received while rockets flew and while none did
    // (at the still target): count, bytes, rockets in flight × count.
    let (mut flight, mut idle) = ((0u64, 0u64, 0u64), (0u64, 0u64, 0u64));
    for frame_index in 0..frames {
        let t = frame_index as f64 / LAB_FRAME_HZ;
        let moving = frame_index >= moving_from;
        if moving && errors_at_switch.is_none() {
            errors_at_switch = Some(lab.clients[shooter].world().resource::<RocketStats>().impact_errors_m.len());
        }
        if moving {
            strafer.drive(&mut lab, target, t);
        } else if t + 0.6 >= next_shot_s && t + 0.6 - 1.0 / LAB_FRAME_HZ < next_shot_s {
            // Back on its mark, still, before each shot.
            lab.teleport("Target", TARGET_AT, std::f32::consts::PI);
        }
        lab.keep_alive("Target");
        let mut clicked = false;
        if let (Some(me), Some(other)) = (drawn_self(&lab.clients[shooter]), lab.drawn_other(shooter)) {
            // At the body as drawn; at the still target every other rocket
            // goes to the floor a metre in front of its feet.
            let body = Hitbox::of(&other).body_center();
            let floor = other.pos + (me.pos - other.pos).with_y(0.0).normalize_or_zero() * 1.0;
            lab.aim(shooter, if !moving && shots % 2 == 1 { floor } else { body });
            if t >= next_shot_s && waiting.is_none() {
                let mut input = lab.clients[shooter].world_mut().resource_mut::<LocalInput>();
                input.press(Buttons::FIRE.union(Buttons::ROCKET));
                clicked = true;
                shots += 1;
                next_shot_s = t + if moving { MOVING_INTERVAL_S } else { STILL_INTERVAL_S };
                if moving {
                    let tick = lab.server.world().resource::<arena_server::ServerTick>().0;
                    moving_ticks = (moving_ticks.0.min(tick), tick);
                }
            }
        }
        let snapshot_before = snapshot_tally(&lab, target);
        let in_flight = lab.server.world().resource::<arena_server::Rockets>().0.len();
        lab.step(1);
        hold(&mut lab, shooter, Buttons::ROCKET);
        if !moving {
            let (count, bytes) = snapshot_tally(&lab, target);
            let (count, bytes) = (count - snapshot_before.0, bytes - snapshot_before.1);
            let bucket = if in_flight > 0 { &mut flight } else { &mut idle };
            bucket.0 += count;
            bucket.1 += bytes;
            bucket.2 += in_flight as u64 * count;
        }
        let (_, twice) = drawn_own(&lab, shooter);
        twice_frames += u64::from(twice);
        if clicked {
            waiting = Some(0);
        }
        if let Some(n) = waiting {
            // Its rocket: one of ours drawn near the eye (the one before is 20 m on).
            let eye = drawn_self(&lab.clients[shooter]).map(|s| s.eye_pos());
            let near = eye.is_some_and(|eye| {
                let drawn = &lab.clients[shooter].world().resource::<DrawnRockets>().0;
                drawn.iter().any(|r| r.own && r.pos.distance(eye) < 3.0)
            });
            if near || n > LAB_FRAME_HZ as usize {
                click_frames.push(n as f64);
                waiting = None;
            } else {
                waiting = Some(n + 1);
            }
        }
    }
    // Let the last rockets land and their word arrive.
    for _ in 0..(2.0 * LAB_FRAME_HZ) as usize {
        lab.keep_alive("Target");
        lab.step(1);
        twice_frames += u64::from(drawn_own(&lab, shooter).1);
    }

    let stats = lab.clients[shooter].world().resource::<RocketStats>().clone();
    let split = errors_at_switch.unwrap_or(stats.impact_errors_m.len()).min(stats.impact_errors_m.len());
    let errors: Vec<f64> = stats.impact_errors_m.iter().map(|e| f64::from(*e)).collect();
    let still = Summary::of(&errors[..split]);
    let moving = Summary::of(&errors[split..]);
    let log: Vec<arena_server::RocketRecord> =
        lab.server.world().resource::<arena_server::RocketLog>().0.iter().cloned().collect();

    // The splash as drawn against the server's, rocket by rocket.
    let predicted_victims = predicted_splashes(&lab, shooter);
    let mut compared = 0usize;
    let mut agreed = 0usize;
    let mut damage_errors = Vec::new();
    for record in &log {
        let (Some(blast), Some(predicted)) = (&record.blast, predicted_victims.get(&record.launch.tick)) else {
            continue;
        };
        compared += 1;
        let ids =
            |v: &[(arena_sim::PlayerId, u8)]| v.iter().map(|(id, _)| *id).collect::<std::collections::BTreeSet<_>>();
        agreed += usize::from(ids(&blast.victims) == ids(predicted));
        let on_target = |v: &[(arena_sim::PlayerId, u8)]| {
            v.iter().find(|(id, _)| Some(*id) == target_id).map_or(0.0, |(_, d)| f64::from(*d))
        };
        damage_errors.push((on_target(&blast.victims) - on_target(predicted)).abs());
    }
    let moving_records: Vec<_> =
        log.iter().filter(|r| r.launch.tick >= moving_ticks.0 && r.launch.tick <= moving_ticks.1 + 64).collect();
    let direct = moving_records.iter().filter(|r| r.blast.as_ref().is_some_and(|b| b.direct == target_id)).count();

    let tally = lab.clients[target].world().resource::<MessageTally>();
    let kind = |k: &str| tally.down.get(k).copied().unwrap_or_default();
    let (fired, blasts) = (kind("rocket_fired"), kind("rocket_exploded"));
    let per = |(count, bytes): (u64, u64)| if count == 0 { f64::NAN } else { bytes as f64 / count as f64 };
    // What a rocket in flight adds to each snapshot: the snapshots' size
    // while rockets flew less while none did, per rocket.
    let mean_in_flight = if flight.0 == 0 { f64::NAN } else { flight.2 as f64 / flight.0 as f64 };
    let per_rocket_tick = (per((flight.0, flight.1)) - per((idle.0, idle.1))) / mean_in_flight;
    let catch_ups: Vec<f64> = log.iter().map(|r| f64::from(r.catch_up_ms)).collect();
    let predicted = stats.predicted;
    Ok(RocketFigures {
        projectile_compensation: settings.projectile_compensation.on(),
        rockets_predicted: predicted,
        clicks: shots,
        frames_click_to_drawn_p50: Summary::of(&click_frames).p50,
        frames_click_to_drawn_max: click_frames.iter().copied().fold(f64::NAN, f64::max),
        impact_error_still_p50_m: still.p50,
        impact_error_still_p95_m: still.p95,
        impact_error_moving_p50_m: moving.p50,
        impact_error_moving_p95_m: moving.p95,
        impacts_still: split,
        impacts_moving: errors.len() - split,
        never_on_server: stats.never_on_server,
        never_on_server_ratio: if predicted == 0 { f64::NAN } else { stats.never_on_server as f64 / predicted as f64 },
        drawn_twice: twice_frames,
        splash_agreement: if compared == 0 { f64::NAN } else { agreed as f64 / compared as f64 },
        splashes_compared: compared,
        splash_damage_error_mean: Summary::of(&damage_errors).mean,
        direct_hit_ratio_moving: if moving_records.is_empty() {
            f64::NAN
        } else {
            direct as f64 / moving_records.len() as f64
        },
        bytes_per_shot: per(fired),
        bytes_per_blast: per(blasts),
        bytes_per_rocket_per_tick: per_rocket_tick,
        rocket_messages_per_rocket: if log.is_empty() {
            f64::NAN
        } else {
            (fired.0 + blasts.0) as f64 / log.len() as f64
        },
        snapshot_bytes_rockets_flying: per((flight.0, flight.1)),
        snapshot_bytes_none_flying: per((idle.0, idle.1)),
        catch_up_mean_ms: Summary::of(&catch_ups).mean,
        catch_ups_capped: lab.server.world().resource::<arena_server::CombatStats>().catch_ups_capped - capped_before,
        rtt_ms: lab.clients[shooter].world().resource::<NetStats>().rtt_ms,
        interp_ms: interp_ms_of(&lab.clients[shooter]),
    })
}

/// The splash each of our rockets was drawn doing, by the command that fired it.
fn predicted_splashes(lab: &LoopbackGame, i: usize) -> std::collections::HashMap<u32, Vec<(arena_sim::PlayerId, u8)>> {
    let rockets = lab.clients[i].world().resource::<arena_client::ClientRockets>();
    rockets
        .own
        .iter()
        .chain(rockets.judged.iter())
        .filter_map(|r| Some((r.launch?.tick, r.predicted.as_ref()?.victims.clone())))
        .collect()
}
