//! `arena lab teleport`: a player runs onto each of the map's jump pads and
//! into each of its teleporters in turn, through a conditioned link, while
//! another watches and fires at it (lag-compensated). The report counts
//! the jumper's mispredictions (a launch and a teleport are in the shared
//! movement: none), the watcher's frames that drew the teleporting body
//! more than a metre from both the path into the entry and the path out of
//! the destination (nobody is drawn between the ends), and the shots the
//! server tested against a hitbox between the ends (lag compensation
//! rewinds within one side of a teleport only).

use std::collections::BTreeMap;

use arena_client::{LocalInput, NetStats, Prediction};
use arena_sim::{ArenaWorld, MapDef};
use bevy::prelude::*;
use serde::Serialize;

use super::setup::{LabError, LabSettings, frames_for, lab_on, line_clear};
use crate::harness::LoopbackGame;

/// What `arena lab teleport` prints.
#[derive(Debug, Serialize)]
pub struct TeleportReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    pub map: String,
    pub pad_launches: usize,
    pub teleports: usize,
    /// The jumper's mispredictions over the run: the prediction's own count
    /// (pads among them), and each teleport its client did not predict at
    /// the server's very tick.
    pub mispredictions: u64,
    /// Watcher frames that drew the teleporting body more than 1 m from
    /// both the path into the entry and the path out of the destination.
    pub drawn_between_ends: usize,
    /// Watcher frames looked at around teleports.
    pub frames_around_teleports: usize,
    /// Shots tested against a hitbox more than 1 m from both paths.
    pub rewind_between_ends: usize,
    /// Shots tested against the jumper around teleports.
    pub shots_around_teleports: usize,
    pub rtt_ms: f64,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// How far from a trigger a run at it starts, metres.
const RUN_UP_M: f32 = 4.0;
/// Farthest from both paths a drawn or tested body may be, metres.
const OFF_PATH_M: f32 = 1.0;
/// Seconds either side of a teleport whose drawing and shots are looked at.
const AROUND_S: f64 = 1.5;

/// A start on open floor `RUN_UP_M` from `target`, with a clear run at it.
fn start_for(world: &ArenaWorld, target: Vec3) -> Option<Vec3> {
    (0..16).find_map(|k| {
        let a = std::f32::consts::TAU * k as f32 / 16.0;
        let start = target + Vec3::new(a.cos(), 0.0, a.sin()) * RUN_UP_M;
        let ground = world.cast_ray(start + Vec3::Y * 1.5, Vec3::NEG_Y, 3.0)?;
        let feet = start + Vec3::Y * (1.5 - ground);
        let knee = Vec3::Y * 0.5;
        let free = world.player_fits(feet, arena_sim::player::STAND_HEIGHT_M)
            && world.map().teleporter_at(feet, arena_sim::player::STAND_HEIGHT_M).is_none()
            && world.map().jump_pad_at(feet, arena_sim::player::STAND_HEIGHT_M).is_none();
        (free && line_clear(world, feet + knee, Vec3::new(target.x, feet.y, target.z) + knee)).then_some(feet)
    })
}

/// One use of a trigger: the server tick it happened at (a teleport), and
/// the lab frame.
struct Use {
    tick: u32,
    frame: usize,
    /// The spawn counter before and after it.
    lives: (u8, u8),
}

/// Runs `arena lab teleport` on the built-in map `map_name` (the first with
/// jump pads and teleporters when none is named).
pub fn teleport(settings: LabSettings, map_name: Option<&str>) -> Result<TeleportReport, LabError> {
    settings.validate()?;
    let map = match map_name {
        Some(name) => MapDef::built_in(name).ok_or_else(|| LabError::Map(format!("{name} is not a built-in map")))?,
        None => MapDef::built_in_names()
            .into_iter()
            .filter_map(MapDef::built_in)
            .find(|m| !m.jump_pads.is_empty() && !m.teleporters.is_empty())
            .ok_or_else(|| LabError::Map("no built-in map has jump pads and teleporters".into()))?,
    };
    let world = ArenaWorld::new(map.clone());
    // Each trigger with where a run at it starts: a teleporter, then a
    // pad, in turn (there are fewer teleporters: they come round oftener).
    let start_at = |teleporter: bool, center: Vec3, size: Vec3| {
        let floor = center - Vec3::Y * (size.y * 0.5);
        start_for(&world, floor).map(|start| (teleporter, start, floor))
    };
    let pads: Vec<_> = map.jump_pads.iter().filter_map(|p| start_at(false, p.center, p.size)).collect();
    let gates: Vec<_> = map.teleporters.iter().filter_map(|t| start_at(true, t.center, t.size)).collect();
    let mut runs: Vec<(bool, Vec3, Vec3)> = Vec::new();
    for i in 0..pads.len().max(gates.len()) {
        runs.extend(gates.get(i % gates.len().max(1)).copied());
        runs.extend(pads.get(i).copied());
    }
    if runs.is_empty() {
        return Err(LabError::Map(format!("{}: no pad or teleporter can be run at from open floor", map.name)));
    }
    let mut lab = lab_on(&settings, &map.name, ["Jumper", "Watcher"])?;
    let (jumper, watcher) = (0, 1);
    let watch_at = map.spawns.first().map_or(Vec3::ZERO, |s| s.pos);
    lab.teleport("Watcher", watch_at, 0.0);
    let start_mispredictions = lab.clients[jumper].world().resource::<Prediction>().mispredictions;
    // The jumper's positions and lives: the server's by tick, the
    // watcher's drawing by frame, the hitboxes shots were tested against.
    let mut truth: BTreeMap<u32, (Vec3, u8)> = BTreeMap::new();
    let mut drawn: Vec<(usize, Vec3, u8)> = Vec::new();
    let mut tested: Vec<(f64, Vec3, u8)> = Vec::new();
    let mut teleports: Vec<Use> = Vec::new();
    let mut pad_launches = 0;
    let mut teleport_misses = 0usize;
    let mut last_shot_tick = 0u32;
    let jumper_id = lab.id_of("Jumper");
    let frames = frames_for(settings.seconds);
    let mut frame = 0usize;
    let mut run = 0usize;
    while frame < frames {
        let (is_teleporter, start, target) = runs[run % runs.len()];
        run += 1;
        let yaw = arena_sim::yaw_towards(target - start);
        lab.teleport("Jumper", start, yaw);
        {
            let mut input = lab.clients[jumper].world_mut().resource_mut::<LocalInput>();
            (input.forward, input.yaw, input.pitch) = (0.0, yaw, 0.0);
        }
        // Settle at the start, then run at the trigger until it acts, and
        // on until the body is down again.
        let mut life = None;
        let mut used = false;
        let mut predicted_at: Option<u32> = None;
        for k in 0..frames_for(5.0) {
            let Some(before) = lab.sim("Jumper") else { break };
            let ready = k >= frames_for(0.5 + f64::from(settings.fake_latency_ms) / 500.0);
            lab.clients[jumper].world_mut().resource_mut::<LocalInput>().forward =
                if ready && !used { 1.0 } else { 0.0 };
            aim_and_fire(&mut lab, watcher);
            lab.keep_alive("Jumper");
            lab.step(1);
            frame += 1;
            let tick = lab.server.world().resource::<arena_server::ServerTick>().0;
            let Some(now) = lab.sim("Jumper") else { break };
            truth.insert(tick, (now.pos, now.spawn_count));
            if let Some(d) = lab.drawn_other(watcher).filter(|d| d.alive) {
                drawn.push((frame, d.pos, d.spawn_count));
            }
            record_shots(&lab, jumper_id, &mut last_shot_tick, &mut tested);
            let life_now = *life.get_or_insert(before.spawn_count);
            // The tick the jumper's client predicted the teleport at (its
            // first predicted state in the next life).
            if predicted_at.is_none() {
                let next = life_now.wrapping_add(1);
                let states = &lab.clients[jumper].world().resource::<Prediction>().states;
                predicted_at = states.iter().find(|(_, s)| s.spawn_count == next && s.alive).map(|(t, _)| *t);
            }
            if !used && is_teleporter && now.spawn_count != life_now && now.alive {
                teleports.push(Use { tick, frame, lives: (life_now, now.spawn_count) });
                used = true;
            }
            if !used && !is_teleporter && now.vel.y > 5.0 && !now.on_ground {
                pad_launches += 1;
                used = true;
            }
            if used && now.on_ground && k > frames_for(1.0) {
                break;
            }
        }
        // A teleport the prediction did not foresee at its very tick is a
        // misprediction (the spawn counter's change keeps it out of the
        // prediction's own count).
        if is_teleporter && used {
            let server_tick = teleports.last().map(|t| t.tick);
            teleport_misses += usize::from(predicted_at != server_tick);
        }
        // A while longer, watched: the watcher draws the way out later.
        for _ in 0..frames_for(1.0) {
            aim_and_fire(&mut lab, watcher);
            lab.keep_alive("Jumper");
            lab.clients[jumper].world_mut().resource_mut::<LocalInput>().forward = 0.0;
            lab.step(1);
            frame += 1;
            let tick = lab.server.world().resource::<arena_server::ServerTick>().0;
            if let Some(now) = lab.sim("Jumper") {
                truth.insert(tick, (now.pos, now.spawn_count));
            }
            if let Some(d) = lab.drawn_other(watcher).filter(|d| d.alive) {
                drawn.push((frame, d.pos, d.spawn_count));
            }
            record_shots(&lab, jumper_id, &mut last_shot_tick, &mut tested);
        }
    }
    let mispredictions = lab.clients[jumper].world().resource::<Prediction>().mispredictions - start_mispredictions
        + teleport_misses as u64;
    // Around each teleport: the path in (the server's positions before it)
    // and the path out (from it on), and what was drawn and tested then.
    let tick_s = 1.0 / f64::from(settings.tick);
    let around_ticks = (AROUND_S / tick_s) as u32;
    let (mut frames_around, mut drawn_off, mut shots_around, mut tested_off) = (0, 0, 0, 0);
    for t in &teleports {
        // The two lives either side of it (the lab's own placements are
        // other lives, and not looked at).
        let ours = |life: u8| life == t.lives.0 || life == t.lives.1;
        let path = |life: u8| -> Vec<Vec3> {
            truth
                .range(t.tick.saturating_sub(around_ticks)..t.tick + around_ticks)
                .filter(|(_, (_, l))| *l == life)
                .map(|(_, (p, _))| *p)
                .collect()
        };
        let (path_in, path_out) = (path(t.lives.0), path(t.lives.1));
        let off = |p: Vec3| {
            let near = |path: &[Vec3]| path.iter().any(|q| q.distance(p) <= OFF_PATH_M);
            !near(&path_in) && !near(&path_out)
        };
        let window = frames_for(AROUND_S);
        let around = |f: usize| f + window / 3 >= t.frame && f <= t.frame + window;
        for (_, p, _) in drawn.iter().filter(|(f, _, life)| around(*f) && ours(*life)) {
            frames_around += 1;
            drawn_off += usize::from(off(*p));
        }
        let span = f64::from(t.tick) - f64::from(around_ticks / 2)..=f64::from(t.tick) + f64::from(around_ticks / 2);
        for (_, p, _) in tested.iter().filter(|(at, _, life)| span.contains(at) && ours(*life)) {
            shots_around += 1;
            tested_off += usize::from(off(*p));
        }
    }
    Ok(TeleportReport {
        experiment: "teleport",
        map: map.name.clone(),
        pad_launches,
        teleports: teleports.len(),
        mispredictions,
        drawn_between_ends: drawn_off,
        frames_around_teleports: frames_around,
        rewind_between_ends: tested_off,
        shots_around_teleports: shots_around,
        rtt_ms: lab.clients[jumper].world().resource::<NetStats>().rtt_ms,
        frame_hz: super::setup::LAB_FRAME_HZ,
        warmup_s: super::setup::WARMUP_S,
        settings,
    })
}

/// The watcher aims at the jumper as it draws it, the trigger held, the
/// magazine kept full (the server's word: the watcher's own predictions
/// are not measured).
fn aim_and_fire(lab: &mut LoopbackGame, watcher: usize) {
    if let Some(target) = lab.drawn_other(watcher) {
        lab.aim(watcher, target.pos + Vec3::Y * 1.2);
        lab.hold_fire(watcher, true);
    }
    lab.edit_sim("Watcher", |s| s.ammo = arena_sim::weapon::MAGAZINE);
}

/// The jumper's hitboxes the server tested shots against since the last
/// look: (the time tested at, ticks; the feet; the life).
fn record_shots(
    lab: &LoopbackGame,
    jumper: Option<arena_sim::PlayerId>,
    last: &mut u32,
    out: &mut Vec<(f64, Vec3, u8)>,
) {
    let Some(log) = lab.server.world().get_resource::<arena_server::ShotLog>() else { return };
    for record in log.0.iter().filter(|r| arena_sim::tick_after(r.processed_tick, *last)) {
        for (id, hitbox) in &record.tested {
            if Some(*id) == jumper && hitbox.alive {
                out.push((record.tested_tick, hitbox.input.feet, hitbox.spawn_count));
            }
        }
    }
    if let Some(newest) = log.0.iter().map(|r| r.processed_tick).max() {
        *last = (*last).max(newest);
    }
}
