//! `arena lab hitreg`: a shooter aims at a strafing target as its client
//! draws it and fires; the server judges. Hit ratio, the lead one would have
//! needed, and how far the server's rewind was from what the shooter saw,
//! body part by body part (the pose is rewound with the player).

use arena_client::{LocalInput, NetStats};
use std::collections::BTreeMap;

use arena_sim::hitbox::BodyPart;
use arena_sim::{Buttons, Hitbox, look_at};
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::drawn_self;

use super::setup::{
    LAB_FRAME_HZ, LabError, LabSettings, SHOOTER_AT, Strafer, TARGET_AT, WARMUP_S, interp_ms_of, percentile,
    two_player_lab,
};

/// What `arena lab hitreg` prints.
#[derive(Debug, Serialize)]
pub struct HitregReport {
    pub experiment: &'static str,
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
    /// Per body part, how far its capsule as the shooter's client drew it at
    /// the click was from the capsule the server tested (the larger of its
    /// two ends' distances), over the shots the server ran from their own
    /// command: mean, 95th percentile, largest.
    pub hitbox_part_error_m: BTreeMap<&'static str, PartError>,
    /// The largest of the parts' 95th percentiles, and of their largest, metres.
    pub hitbox_part_error_p95_max_m: f64,
    pub hitbox_part_error_max_m: f64,
    /// Shots fired from a repeat of the shooter's last command, because its
    /// own had not come in time (the trigger held): the server cannot know
    /// what was drawn for them and guesses (the last command's render time,
    /// moved on by the ticks since).
    pub shots_on_repeats: usize,
    /// The largest drawn-versus-tested part distance over those, metres.
    pub hitbox_part_error_on_repeats_max_m: f64,
    /// Claimed render times the server did not believe.
    pub render_times_rejected: u64,
    /// Claimed render times the server moved into its rewind window.
    pub render_times_clamped: u64,
    /// Shots the server tested against the two snapshots the shooter drew
    /// between (the rest: the two recorded ticks around the render time).
    pub rewinds_as_drawn: u64,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// One body part's drawn-versus-tested distances, metres.
#[derive(Debug, Serialize)]
pub struct PartError {
    pub mean: f64,
    pub p95: f64,
    pub max: f64,
}

/// Per part, the drawn-versus-tested distances over every shot's pair.
fn part_errors_of(pairs: &[(Hitbox, Hitbox)]) -> BTreeMap<&'static str, PartError> {
    BodyPart::ALL
        .iter()
        .map(|part| {
            let mut d: Vec<f64> = pairs
                .iter()
                .map(|(drawn, tested)| {
                    let (a, b) = (drawn.parts()[part.index()], tested.parts()[part.index()]);
                    f64::from(a.a.distance(b.a).max(a.b.distance(b.b)))
                })
                .collect();
            d.sort_by(f64::total_cmp);
            let mean = if d.is_empty() { f64::NAN } else { d.iter().sum::<f64>() / d.len() as f64 };
            let max = d.last().copied().unwrap_or(f64::NAN);
            (part.name(), PartError { mean, p95: percentile(&d, 0.95), max })
        })
        .collect()
}

/// Runs `arena lab hitreg`: a shooter aims at the centre of a strafing
/// target's body as its client draws it, and fires; the server judges.
pub fn hitreg(settings: LabSettings) -> Result<HitregReport, LabError> {
    let mut lab = two_player_lab(&settings, ["Shooter", "Target"])?;
    let (shooter, target) = (0, 1);
    lab.teleport("Shooter", SHOOTER_AT, 0.0);
    lab.teleport("Target", TARGET_AT, std::f32::consts::PI);
    lab.step(LAB_FRAME_HZ as usize);
    lab.server.world_mut().resource_mut::<arena_server::ShotLog>().0.clear();
    let stats_before = lab.server.world().resource::<arena_server::CombatStats>().clone();

    let mut strafer = Strafer::new(settings.seed);
    let mut speeds = Vec::new();
    let mut seen: std::collections::HashMap<u32, (Hitbox, Hitbox)> = std::collections::HashMap::new();
    let frames = (settings.seconds * LAB_FRAME_HZ).round() as usize;
    for frame_index in 0..frames {
        let t = frame_index as f64 / LAB_FRAME_HZ;
        strafer.drive(&mut lab, target, t);
        // The shooter aims at the target's body as its own client draws it.
        let eye = drawn_self(&lab.clients[shooter]).map(|s| s.eye_pos());
        let drawn = lab.drawn_other(shooter);
        if let (Some(eye), Some(drawn)) = (eye, drawn) {
            let (yaw, pitch) = look_at(eye, Hitbox::of(&drawn).body_center());
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
    let errors: Vec<f64> =
        seen.values().map(|(drawn, tested)| f64::from(drawn.feet().distance(tested.feet()))).collect();
    let on_repeat: std::collections::HashSet<u32> =
        records.iter().filter(|r| r.on_repeat).map(|r| r.cmd_tick).collect();
    let (repeats, pairs): (Vec<_>, Vec<_>) = seen.iter().partition(|(tick, _)| on_repeat.contains(tick));
    let pairs: Vec<(Hitbox, Hitbox)> = pairs.into_iter().map(|(_, p)| *p).collect();
    let repeats: Vec<(Hitbox, Hitbox)> = repeats.into_iter().map(|(_, p)| *p).collect();
    let part_errors = part_errors_of(&pairs);
    let repeat_max = part_errors_of(&repeats).values().map(|e| e.max).fold(f64::NAN, f64::max);
    let worst = |f: fn(&PartError) -> f64| part_errors.values().map(f).fold(f64::NAN, f64::max);
    let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
    let rtt_ms = lab.clients[shooter].world().resource::<NetStats>().rtt_ms;
    let interp_ms = interp_ms_of(&lab.clients[shooter]);
    let stats = lab.server.world().resource::<arena_server::CombatStats>();
    let rejected = stats.render_times_rejected - stats_before.render_times_rejected;
    let as_drawn = stats.rewinds_as_drawn - stats_before.rewinds_as_drawn;
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
        hitbox_part_error_p95_max_m: worst(|e| e.p95),
        hitbox_part_error_max_m: worst(|e| e.max),
        hitbox_part_error_m: part_errors,
        shots_on_repeats: on_repeat.len(),
        hitbox_part_error_on_repeats_max_m: repeat_max,
        render_times_rejected: rejected,
        render_times_clamped: stats.render_times_clamped - stats_before.render_times_clamped,
        rewinds_as_drawn: as_drawn,
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
    })
}
