//! `arena lab unlag`: the rewind cap as a measured policy. A target runs
//! back and forth between the open and cover (the centre slab); a shooter
//! fires at it whenever its client draws it in sight, aiming at the body as
//! drawn (at the head when only the head shows over a crate). For each cap (a fresh server each), the shooter's hit ratio, and
//! for each hit, how long the victim had already been behind cover on the
//! server when the hit landed: the price of favouring the shooter, which
//! the cap bounds.

use arena_client::{LocalInput, NetStats};
use arena_sim::hitbox::BodyPart;
use arena_sim::{ArenaWorld, Buttons, Hitbox, MapDef, PlayerState, look_at};
use bevy::prelude::*;
use serde::Serialize;

use crate::harness::drawn_self;

use super::setup::{
    LAB_FRAME_HZ, LabError, LabSettings, Summary, WARMUP_S, frames_for, interp_ms_of, line_clear, two_player_lab,
};

/// The caps `arena lab unlag` tries by default, milliseconds (the last is
/// the largest the server takes: no cap within its history).
pub const DEFAULT_CAPS_MS: [u16; 8] = [0, 50, 100, 150, 200, 250, 300, 1000];

/// Where the shooter stands (south of the slab, looking north) and the
/// target's run, east-west behind the slab's east edge: hidden west of
/// about x = 4.6 m, in the open east of it.
const SHOOTER_AT: Vec3 = Vec3::new(0.0, 0.0, 10.0);
const TARGET_AT: Vec3 = Vec3::new(2.0, 0.0, -2.2);
const RUN_EAST_TO_X_M: f32 = 8.0;
const RUN_WEST_TO_X_M: f32 = 1.5;

/// One cap's figures.
#[derive(Debug, Clone, Serialize)]
pub struct UnlagRow {
    pub max_unlag_ms: u16,
    pub shots: usize,
    pub hits: usize,
    pub hit_ratio: f64,
    /// This cap's hit ratio over the largest cap's (the hits it keeps).
    pub hits_kept: f64,
    /// How long the victim had been wholly out of the shooter's sight (no
    /// part of its body or head) on the server when each hit landed (0 when
    /// in sight), milliseconds.
    pub behind_cover_mean_ms: f64,
    pub behind_cover_p95_ms: f64,
    pub behind_cover_max_ms: f64,
    /// Hits that landed on a victim out of the shooter's sight.
    pub hits_behind_cover: usize,
    /// Rewinds the cap cut short.
    pub rewinds_capped: u64,
}

/// What `arena lab unlag` prints.
#[derive(Debug, Serialize)]
pub struct UnlagReport {
    pub experiment: &'static str,
    pub settings: LabSettings,
    /// The shooter's round trip and interpolation delay (in the last cap's run).
    pub rtt_ms: f64,
    pub interp_ms: f64,
    pub caps: Vec<UnlagRow>,
    pub frame_hz: f64,
    pub warmup_s: f64,
}

/// The points of `to` in sight of `from`'s eye past the map, body first:
/// its torso's centre, its head, then its torso's sides (nine tenths of its
/// radius out, across the line of sight) at the top and the middle.
fn in_sight(world: &ArenaWorld, from: &PlayerState, to: &PlayerState) -> Option<Vec3> {
    let eye = from.eye_pos();
    let hitbox = Hitbox::of(to);
    let torso = hitbox.parts()[BodyPart::Torso.index()];
    let (top, centre) = (torso.b, torso.center());
    let across = (centre - eye).cross(Vec3::Y).normalize_or_zero() * torso.radius * 0.9;
    [centre, hitbox.head_center(), centre + across, centre - across, top + across, top - across]
        .into_iter()
        .find(|point| line_clear(world, eye, *point))
}

/// Runs `arena lab unlag` for each cap in `caps_ms`.
pub fn unlag(settings: LabSettings, caps_ms: &[u16]) -> Result<UnlagReport, LabError> {
    settings.validate()?;
    if caps_ms.is_empty() || caps_ms.len() > 32 || caps_ms.iter().any(|c| *c > arena_server::MAX_UNLAG_MS) {
        return Err(LabError::MaxUnlag(caps_ms.iter().copied().max().unwrap_or(0)));
    }
    let mut rows = Vec::new();
    let (mut rtt_ms, mut interp_ms) = (f64::NAN, f64::NAN);
    for &cap in caps_ms {
        let (row, rtt, interp) = one_cap(&LabSettings { max_unlag_ms: cap, ..settings.clone() })?;
        rows.push(row);
        (rtt_ms, interp_ms) = (rtt, interp);
    }
    let widest = rows.iter().max_by_key(|r| r.max_unlag_ms).map(|r| r.hit_ratio).unwrap_or(f64::NAN);
    for row in &mut rows {
        row.hits_kept = row.hit_ratio / widest;
    }
    Ok(UnlagReport {
        experiment: "unlag",
        settings,
        rtt_ms,
        interp_ms,
        caps: rows,
        frame_hz: LAB_FRAME_HZ,
        warmup_s: WARMUP_S,
    })
}

/// One cap: the row, the shooter's round trip and its interpolation delay.
fn one_cap(settings: &LabSettings) -> Result<(UnlagRow, f64, f64), LabError> {
    let mut lab = two_player_lab(settings, ["Shooter", "Target"])?;
    let (shooter, target) = (0, 1);
    lab.teleport("Shooter", SHOOTER_AT, 0.0);
    lab.teleport("Target", TARGET_AT, std::f32::consts::PI);
    lab.step(LAB_FRAME_HZ as usize);
    lab.server.world_mut().resource_mut::<arena_server::ShotLog>().0.clear();
    let capped_before = lab.server.world().resource::<arena_server::CombatStats>().rewinds_capped;
    let world = ArenaWorld::new(MapDef::foundry());
    let rate = arena_sim::TickRate::new(settings.tick);
    let mut east = true;
    let mut last_tick = lab.server.world().resource::<arena_server::ServerTick>().0;
    // Out of sight since the start until seen (it starts behind the slab).
    let mut last_in_sight = last_tick;
    let (mut shots, mut hits, mut behind_ms) = (0usize, 0usize, Vec::new());
    for _ in 0..frames_for(settings.seconds) {
        // The target runs east into the open and back west behind the slab.
        if let Some(me) = drawn_self(&lab.clients[target]) {
            if me.pos.x >= RUN_EAST_TO_X_M {
                east = false;
            } else if me.pos.x <= RUN_WEST_TO_X_M {
                east = true;
            }
            let mut input = lab.clients[target].world_mut().resource_mut::<LocalInput>();
            // Facing south, right is west.
            (input.yaw, input.pitch, input.right) = (std::f32::consts::PI, 0.0, if east { -1.0 } else { 1.0 });
        }
        // The shooter fires at what it draws in sight of the target, body first.
        let me = drawn_self(&lab.clients[shooter]);
        let them = lab.drawn_other(shooter);
        let mut input = lab.clients[shooter].world_mut().resource_mut::<LocalInput>();
        input.held = Buttons::default();
        if let (Some(me), Some(them)) = (me, them) {
            let seen = in_sight(&world, &me, &them);
            let (yaw, pitch) = look_at(me.eye_pos(), seen.unwrap_or(Hitbox::of(&them).body_center()));
            (input.yaw, input.pitch) = (yaw, pitch);
            if seen.is_some() {
                input.held = Buttons::FIRE;
            }
        }
        lab.keep_alive("Target");
        lab.step(1);
        // The present on the server: is the target in the shooter's sight?
        let tick = lab.server.world().resource::<arena_server::ServerTick>().0;
        if tick != last_tick
            && let (Some(from), Some(to)) = (lab.sim("Shooter"), lab.sim("Target"))
            && in_sight(&world, &from, &to).is_some()
        {
            last_in_sight = tick;
        }
        last_tick = tick;
        let records: Vec<arena_server::ShotRecord> =
            lab.server.world_mut().resource_mut::<arena_server::ShotLog>().0.drain(..).collect();
        for record in records {
            shots += 1;
            if record.hit.is_none() {
                continue;
            }
            hits += 1;
            // Resolved in this tick, against the present just computed.
            let out_of_sight_ticks = arena_sim::tick_diff(record.processed_tick, last_in_sight).max(0);
            behind_ms.push(rate.ticks_to_ms(f64::from(out_of_sight_ticks)));
        }
    }
    let behind = Summary::of(&behind_ms);
    let capped = lab.server.world().resource::<arena_server::CombatStats>().rewinds_capped - capped_before;
    let row = UnlagRow {
        max_unlag_ms: settings.max_unlag_ms,
        shots,
        hits,
        hit_ratio: if shots == 0 { f64::NAN } else { hits as f64 / shots as f64 },
        hits_kept: f64::NAN,
        behind_cover_mean_ms: behind.mean,
        behind_cover_p95_ms: behind.p95,
        behind_cover_max_ms: behind_ms.iter().copied().fold(f64::NAN, f64::max),
        hits_behind_cover: behind_ms.iter().filter(|ms| **ms > 0.0).count(),
        rewinds_capped: capped,
    };
    let rtt_ms = lab.clients[shooter].world().resource::<NetStats>().rtt_ms;
    Ok((row, rtt_ms, interp_ms_of(&lab.clients[shooter])))
}
