//! The rule a remote player is drawn by, which the server's rewind follows
//! too ("what is drawn is what is tested"): between two snapshots, blended
//! ([`PlayerState::blend`], [`Hitbox::lerp`]); past the newest, carried on
//! along its velocity for at most [`MAX_EXTRAPOLATION_S`], as QuakeWorld
//! did, then held. And how much history both ends keep ([`HISTORY_S`]).

use glam::Vec3;

use crate::hitbox::Hitbox;
use crate::player::PlayerState;
use crate::time::{TickRate, tick_diff};

/// Longest a player is carried on past its newest snapshot, seconds.
pub const MAX_EXTRAPOLATION_S: f64 = 0.1;
/// How much of each player's past is kept, seconds: the client's
/// interpolation history and the server's lag-compensation history alike
/// (Source keeps one; a slow client's view, a frame old, reaches further
/// back).
pub const HISTORY_S: f64 = 2.5;

/// A player at one snapshot's tick, as far as the rule reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    pub tick: u32,
    pub pos: Vec3,
    /// The velocity the snapshot tells, metres per second (zero when it
    /// tells none).
    pub vel: Vec3,
    pub alive: bool,
    pub spawn_count: u8,
}

impl Keyframe {
    /// A player's state as a snapshot at `tick` gave it.
    pub fn of_state(tick: u32, state: &PlayerState) -> Self {
        Self { tick, pos: state.pos, vel: state.vel, alive: state.alive, spawn_count: state.spawn_count }
    }

    /// A player's hitbox as recorded at `tick`: its feet, and the
    /// horizontal velocity its pose knows.
    pub fn of_hitbox(tick: u32, hitbox: &Hitbox) -> Self {
        let vel = Vec3::new(hitbox.input.vel.x, 0.0, hitbox.input.vel.y);
        Self { tick, pos: hitbox.feet(), vel, alive: hitbox.alive, spawn_count: hitbox.spawn_count }
    }
}

/// How a player is drawn at a moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HowDrawn {
    /// `t` (0..1) of the way from the older snapshot to the newer: blend
    /// the two.
    Blended(f32),
    /// Past the newer snapshot: the newer as it is, but at `pos`.
    /// `extrapolated` while within [`MAX_EXTRAPOLATION_S`] of it; after
    /// that held where that limit left it.
    CarriedOn { pos: Vec3, extrapolated: bool },
}

/// How a player with snapshots `older` (if any) and `newer` is drawn at
/// server time `tick` (fractional): blended between the two up to the
/// newer; past it, carried on at the velocity the newer tells, else at the
/// one between the two (none across a death or a respawn), for at most
/// [`MAX_EXTRAPOLATION_S`]; the dead stay where they are. None for a pair
/// not in order, with no older one before the newer, or at no time (NaN).
pub fn drawn_at(older: Option<Keyframe>, newer: Keyframe, tick: f64, rate: TickRate) -> Option<HowDrawn> {
    if tick.is_nan() {
        return None;
    }
    let span = match older {
        Some(older) => Some(f64::from(tick_diff(newer.tick, older.tick))).filter(|span| *span > 0.0)?,
        None => 0.0,
    };
    if tick <= f64::from(newer.tick) {
        let older = older?;
        let t = ((tick - f64::from(older.tick)) / span).max(0.0);
        return Some(HowDrawn::Blended(t as f32));
    }
    let span_s = rate.ticks_to_s(span) as f32;
    let vel = match older {
        _ if newer.vel != Vec3::ZERO => newer.vel,
        Some(older) if older.alive && older.spawn_count == newer.spawn_count && span_s > 0.0 => {
            (newer.pos - older.pos) / span_s
        }
        _ => Vec3::ZERO,
    };
    let ahead_s = rate.ticks_to_s(tick - f64::from(newer.tick));
    let pos = if newer.alive { newer.pos + vel * ahead_s.clamp(0.0, MAX_EXTRAPOLATION_S) as f32 } else { newer.pos };
    Some(HowDrawn::CarriedOn { pos, extrapolated: ahead_s <= MAX_EXTRAPOLATION_S })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: TickRate = TickRate::new(64);

    fn key(tick: u32, x: f32, vx: f32) -> Keyframe {
        Keyframe { tick, pos: Vec3::new(x, 0.0, 0.0), vel: Vec3::new(vx, 0.0, 0.0), alive: true, spawn_count: 0 }
    }

    fn carried(drawn: Option<HowDrawn>) -> (f32, bool) {
        match drawn {
            Some(HowDrawn::CarriedOn { pos, extrapolated }) => (pos.x, extrapolated),
            other => panic!("not carried on: {other:?}"),
        }
    }

    #[test]
    fn between_two_snapshots_the_fraction_of_the_way() {
        let (a, b) = (key(10, 0.0, 0.0), key(14, 4.0, 0.0));
        assert_eq!(drawn_at(Some(a), b, 11.0, RATE), Some(HowDrawn::Blended(0.25)));
        assert_eq!(drawn_at(Some(a), b, 14.0, RATE), Some(HowDrawn::Blended(1.0)), "on the newer: still a blend");
        assert_eq!(drawn_at(Some(a), b, 9.0, RATE), Some(HowDrawn::Blended(0.0)), "before the older: the older");
    }

    #[test]
    fn past_the_newest_along_the_told_velocity_for_at_most_100_ms_then_held() {
        let (a, b) = (key(10, 0.0, 0.0), key(14, 4.0, 6.4));
        let (x, extrapolated) = carried(drawn_at(Some(a), b, 14.0 + 3.2, RATE)); // 50 ms
        assert!(extrapolated);
        assert!((x - (4.0 + 6.4 * 0.05)).abs() < 1e-5, "{x}");
        let (x, extrapolated) = carried(drawn_at(Some(a), b, 14.0 + 32.0, RATE)); // 500 ms
        assert!(!extrapolated, "held");
        assert!((x - (4.0 + 6.4 * 0.1)).abs() < 1e-5, "held at the 100 ms mark: {x}");
        let (x, extrapolated) = carried(drawn_at(None, b, f64::INFINITY, RATE));
        assert!(!extrapolated && (x - (4.0 + 6.4 * 0.1)).abs() < 1e-5, "{x}");
    }

    #[test]
    fn told_no_velocity_the_pace_between_the_two() {
        // 1 m a tick between the two, 64 ticks a second: 6.4 ticks is 100 ms.
        let (a, b) = (key(10, 0.0, 0.0), key(11, 1.0, 0.0));
        assert!((carried(drawn_at(Some(a), b, 13.0, RATE)).0 - 3.0).abs() < 1e-4);
        assert!((carried(drawn_at(Some(a), b, 40.0, RATE)).0 - 7.4).abs() < 1e-4);
        // Nothing to take a pace from: held where the newer is.
        assert_eq!(carried(drawn_at(None, b, 13.0, RATE)), (1.0, true));
        let dead = Keyframe { alive: false, ..a };
        assert_eq!(carried(drawn_at(Some(dead), b, 13.0, RATE)).0, 1.0, "no pace from the dead");
        let respawned = Keyframe { spawn_count: 1, ..b };
        assert_eq!(carried(drawn_at(Some(a), respawned, 13.0, RATE)).0, 1.0, "none across a respawn");
    }

    #[test]
    fn the_dead_stay_where_they_are() {
        let b = Keyframe { alive: false, ..key(14, 4.0, 6.4) };
        assert_eq!(carried(drawn_at(Some(key(10, 0.0, 0.0)), b, 16.0, RATE)), (4.0, true));
    }

    #[test]
    fn nonsense_pairs_and_nothing_to_blend_give_none() {
        let (a, b) = (key(10, 0.0, 0.0), key(14, 4.0, 0.0));
        assert_eq!(drawn_at(Some(b), a, 12.0, RATE), None, "out of order");
        assert_eq!(drawn_at(Some(a), a, 10.0, RATE), None, "one tick twice");
        assert_eq!(drawn_at(None, b, 14.0, RATE), None, "on the only one: nothing to blend");
        assert_eq!(drawn_at(None, b, f64::NAN, RATE), None);
    }

    #[test]
    fn both_ends_read_the_same_keyframe_from_a_state_and_its_hitbox() {
        let state =
            PlayerState { vel: Vec3::new(3.0, 0.0, -2.0), ..PlayerState::spawned_at(Vec3::new(1.0, 2.0, 3.0), 0.5) };
        assert_eq!(Keyframe::of_state(7, &state), Keyframe::of_hitbox(7, &Hitbox::of(&state)));
    }
}
