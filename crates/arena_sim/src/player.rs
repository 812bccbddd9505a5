//! The authoritative state of one player, as the movement code sees it.

use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

/// A player's number on one server, small so snapshots stay small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlayerId(pub u8);

/// Radius of the collision cylinder, metres.
pub const PLAYER_RADIUS_M: f32 = 0.4;
/// Height of a standing player from the feet to the top of the head, metres.
pub const STAND_HEIGHT_M: f32 = 1.8;
/// Height of a crouching player, metres.
pub const CROUCH_HEIGHT_M: f32 = 1.2;
/// Eye height above the feet when standing, metres.
pub const STAND_EYE_M: f32 = 1.62;
/// Eye height above the feet when crouching, metres.
pub const CROUCH_EYE_M: f32 = 1.05;
/// Health of a fresh player.
pub const MAX_HEALTH: u8 = 100;
/// Rounds in a full magazine: a fresh player's rifle is full.
pub const MAGAZINE: u8 = 30;
/// One gait cycle (a step of each foot), metres walked: the movement counts
/// it in [`PlayerState::step_phase`], a footstep each half, and the pose
/// (`pose.rs`) swings the legs on it.
pub const GAIT_CYCLE_M: f32 = 3.2;
/// Top speed on the ground, metres per second: the movement's limit, and
/// the speed of a full stride.
pub const RUN_SPEED_MPS: f32 = 7.0;
/// How long a respawned player cannot be hurt, seconds (unless it fires).
pub const SPAWN_PROTECTION_S: f32 = 1.5;

/// The weapon in a player's hands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Weapon {
    /// The hitscan rifle (slot 1).
    #[default]
    Rifle,
    /// The rocket launcher (slot 2).
    Rocket,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlayerState {
    /// Position of the feet (bottom of the collision cylinder), metres.
    pub pos: Vec3,
    /// Velocity, metres per second.
    pub vel: Vec3,
    /// View yaw in radians (see [`crate::UserCmd::yaw`]).
    pub yaw: f32,
    /// View pitch in radians.
    pub pitch: f32,
    pub on_ground: bool,
    pub crouched: bool,
    /// Jump was held on the previous tick: a new jump needs a new press.
    pub jump_held: bool,
    /// Metres into the gait cycle ([`GAIT_CYCLE_M`]): a footstep at its
    /// start and half way. It keeps its value when the player stands still.
    pub step_phase: f32,
    pub alive: bool,
    pub health: u8,
    /// Rounds in the rifle.
    pub ammo: u8,
    /// The weapon in hand (a switch makes it wait [`crate::weapon::SWITCH_S`]).
    pub weapon: Weapon,
    /// Armour points, 0..=[`crate::items::MAX_ARMOUR`]: each takes a point
    /// of two thirds of the damage ([`crate::items::take_damage`]).
    pub armour: u8,
    /// Quad damage left, seconds (0: none).
    pub quad_s: f32,
    /// Time from the start of the next tick until the rifle can fire again,
    /// seconds; down to minus a tick while the trigger is held or was just
    /// let go (the part of a tick it has been ready), so that the rate of
    /// fire is exact at any tick rate.
    pub fire_cooldown_s: f32,
    /// Time until the reload in progress ends, seconds (0: not reloading).
    pub reload_s: f32,
    /// Fire and reload were held on the previous tick.
    pub fire_held: bool,
    pub reload_held: bool,
    /// Counts (wrapping) every respawn or teleport: a change means "do not
    /// slide from the old position to the new one".
    pub spawn_count: u8,
    /// Spawn protection left, seconds: no damage is taken while it lasts; it
    /// ends early when the player fires.
    pub protected_s: f32,
    /// How far the view is turned from the hips (yaw minus the lower body's
    /// yaw), radians, within ±[`MAX_TWIST_RAD`]: standing, the feet stay
    /// planted while the view turns less than that, and are dragged round
    /// past it; moving or in the air, the hips turn back to the view.
    pub twist: f32,
    /// How deep the knees are still bent by the last landing, 0..1 (1 for
    /// a fall of [`LANDING_FULL_MPS`] or more); it eases off over [`LANDING_S`].
    pub landing: f32,
}

/// How long the knees take to straighten after a landing, seconds.
pub const LANDING_S: f32 = 0.3;
/// A landing at this downward speed (m/s) or faster bends the knees fully.
pub const LANDING_FULL_MPS: f32 = 10.0;
/// The least a landing bends them (a hop), 0..1.
pub const LANDING_LEAST: f32 = 0.25;
/// How far the hardest landing lowers the body (and the eyes), metres.
pub const LANDING_DROP_M: f32 = 0.22;

/// How far a landing of `landing` (0..1) lowers the body, metres: none in the air.
pub fn landing_drop(landing: f32, on_ground: bool) -> f32 {
    if on_ground && landing.is_finite() { LANDING_DROP_M * landing.clamp(0.0, 1.0) } else { 0.0 }
}

/// The landing's depth after a tick: a fresh landing at `impact_mps`
/// (downward speed) sets it; otherwise it eases off.
pub fn landing_after(landing: f32, impact_mps: Option<f32>, dt_s: f32) -> f32 {
    let eased = if landing.is_finite() { landing - dt_s.max(0.0) / LANDING_S } else { 0.0 };
    let fresh = impact_mps.map(|v| if v.is_finite() { (v / LANDING_FULL_MPS).max(LANDING_LEAST) } else { 0.0 });
    fresh.unwrap_or(eased).clamp(0.0, 1.0)
}

/// The most the upper body turns from the hips, radians (about 46°).
pub const MAX_TWIST_RAD: f32 = 0.8;
/// How fast the hips turn back under the view when the player moves, rad/s.
pub const TWIST_UNWIND_RAD_PER_S: f32 = 8.0;
/// Slower than this on the ground (m/s), the feet stay where they are.
pub const PLANTED_BELOW_MPS: f32 = 0.5;

/// The twist after a tick in which the view turned by `turned` radians:
/// planted feet keep their direction (the twist takes up the turn, up to its
/// limit); moving, the hips follow the view at [`TWIST_UNWIND_RAD_PER_S`].
pub fn twist_after(twist: f32, turned: f32, planted: bool, dt_s: f32) -> f32 {
    let mut t = if twist.is_finite() { twist } else { 0.0 } + if turned.is_finite() { turned } else { 0.0 };
    if !planted {
        t -= t.signum() * t.abs().min(TWIST_UNWIND_RAD_PER_S * dt_s.max(0.0));
    }
    t.clamp(-MAX_TWIST_RAD, MAX_TWIST_RAD)
}

impl PlayerState {
    /// A fresh, armed, healthy player standing at `pos`.
    pub fn spawned_at(pos: Vec3, yaw: f32) -> Self {
        Self { pos, yaw, on_ground: true, alive: true, health: MAX_HEALTH, ammo: MAGAZINE, ..Default::default() }
    }

    /// Where this player is drawn `fraction` (0..1) of the way from `before`
    /// (its state a tick earlier) to it: the position blended, the rest as
    /// it is now. The client draws its own player so between its last two
    /// predicted ticks, and the server fires a clicked shot from the eye of
    /// the same blend; across a death or a respawn there is nothing to blend.
    pub fn drawn_after(&self, before: &PlayerState, fraction: f32) -> PlayerState {
        if before.spawn_count != self.spawn_count || before.alive != self.alive || !fraction.is_finite() {
            return *self;
        }
        PlayerState { pos: before.pos.lerp(self.pos, fraction.clamp(0.0, 1.0)), ..*self }
    }

    /// Two states `t` (0..1) of the way from `a` to `b`, as a remote player
    /// is drawn between two snapshots: position, velocity, view (yaw the
    /// short way round) and gait (the short way round its cycle) blended;
    /// the rest from the nearer state. Lag compensation blends hitboxes by
    /// the same rule ([`crate::Hitbox::lerp`]), so what a client draws and
    /// what the server rewinds agree between ticks as well.
    pub fn blend(a: &PlayerState, b: &PlayerState, t: f32) -> PlayerState {
        let mut s = if t < 0.5 { *a } else { *b };
        s.pos = a.pos.lerp(b.pos, t);
        s.vel = a.vel.lerp(b.vel, t);
        s.yaw = crate::cmd::lerp_angle(a.yaw, b.yaw, t);
        s.pitch = a.pitch + (b.pitch - a.pitch) * t;
        s.step_phase = lerp_gait(a.step_phase, b.step_phase, t);
        s.twist = a.twist + (b.twist - a.twist) * t;
        s.landing = a.landing + (b.landing - a.landing) * t;
        s
    }

    /// This player put back at a spawn point: a fresh state, briefly
    /// protected, that keeps the spawn counter going.
    pub fn respawned_at(&self, pos: Vec3, yaw: f32) -> Self {
        Self {
            spawn_count: self.spawn_count.wrapping_add(1),
            protected_s: SPAWN_PROTECTION_S,
            // Back with the weapon it had: no switch to wait for.
            weapon: self.weapon,
            ..Self::spawned_at(pos, yaw)
        }
    }

    pub fn height(&self) -> f32 {
        if self.crouched { CROUCH_HEIGHT_M } else { STAND_HEIGHT_M }
    }

    pub fn eye_height(&self) -> f32 {
        if self.crouched { CROUCH_EYE_M } else { STAND_EYE_M }
    }

    /// Whether a hit hurts this player: alive and not spawn protected (the
    /// server's rule, which the client's foreseen hits follow).
    pub fn hurtable(&self) -> bool {
        self.alive && self.protected_s <= 0.0
    }

    /// Where the eyes are: a landing lowers them with the head.
    pub fn eye_pos(&self) -> Vec3 {
        self.pos + Vec3::Y * (self.eye_height() - self.landing_drop())
    }

    /// How far a landing lowers the body now, metres (on the ground only).
    pub fn landing_drop(&self) -> f32 {
        landing_drop(self.landing, self.on_ground)
    }

    /// Orientation of the body (yaw only).
    pub fn body_rotation(&self) -> Quat {
        Quat::from_rotation_y(self.yaw)
    }

    /// Orientation of the view (yaw, then pitch).
    pub fn view_rotation(&self) -> Quat {
        view_rotation(self.yaw, self.pitch)
    }

    /// Horizontal speed, metres per second.
    pub fn ground_speed(&self) -> f32 {
        Vec3::new(self.vel.x, 0.0, self.vel.z).length()
    }
}

/// A gait distance blended the short way round the cycle.
pub fn lerp_gait(a: f32, b: f32, t: f32) -> f32 {
    let half = GAIT_CYCLE_M * 0.5;
    let d = (b - a + half).rem_euclid(GAIT_CYCLE_M) - half;
    let g = (a + d * t).rem_euclid(GAIT_CYCLE_M);
    if g.is_finite() { g } else { 0.0 }
}

/// Whether the gait passed a footstep (the cycle's start, or half way
/// round) going forward from `before` to `after`, metres into the cycle, the
/// short way round: what the movement reports as a footstep, and what the
/// view hears in another player's drawn gait.
pub fn footstep_between(before: f32, after: f32) -> bool {
    let half = GAIT_CYCLE_M * 0.5;
    let d = (after - before + half).rem_euclid(GAIT_CYCLE_M) - half;
    // The cycle's halves are numbered 0, 1 (2 is the next cycle's start).
    let half_of = |g: f32| (g / half).floor();
    d > 0.0 && half_of(before) != half_of(before + d)
}

/// The view orientation for a yaw and pitch: Bevy's cameras look along -Z.
pub fn view_rotation(yaw: f32, pitch: f32) -> Quat {
    Quat::from_rotation_y(yaw) * Quat::from_rotation_x(pitch)
}

/// Unit vector the player looks along for a yaw and pitch.
pub fn view_forward(yaw: f32, pitch: f32) -> Vec3 {
    view_rotation(yaw, pitch) * Vec3::NEG_Z
}

/// The yaw that faces along `dir` (its horizontal part): the inverse of
/// [`view_forward`]'s yaw.
pub fn yaw_towards(dir: Vec3) -> f32 {
    (-dir.x).atan2(-dir.z)
}

/// The yaw and pitch that look from `eye` at `target` (pitch within
/// ±[`crate::cmd::MAX_PITCH_RAD`]): the inverse of [`view_forward`].
pub fn look_at(eye: Vec3, target: Vec3) -> (f32, f32) {
    let dir = (target - eye).normalize_or_zero();
    let max = crate::cmd::MAX_PITCH_RAD;
    (yaw_towards(dir), dir.y.clamp(-1.0, 1.0).asin().clamp(-max, max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_at_is_the_inverse_of_view_forward() {
        for (yaw, pitch) in [(0.0, 0.0), (1.0, 0.3), (-2.5, -0.7), (3.0, 1.2)] {
            let eye = Vec3::new(1.0, 2.0, 3.0);
            let (y, p) = look_at(eye, eye + view_forward(yaw, pitch) * 7.0);
            assert!((y - yaw).abs() < 1e-5 && (p - pitch).abs() < 1e-5, "{yaw},{pitch} -> {y},{p}");
        }
    }

    #[test]
    fn planted_feet_hold_until_the_twist_runs_out_and_moving_hips_follow_the_view() {
        let dt = 1.0 / 64.0;
        // Small turns standing: the hips stay, the twist takes them up.
        let t = twist_after(0.0, 0.3, true, dt);
        assert_eq!(t, 0.3);
        assert!((twist_after(t, -0.5, true, dt) + 0.2).abs() < 1e-6);
        // A big turn drags the feet round: never more than the limit.
        assert_eq!(twist_after(0.7, 0.4, true, dt), MAX_TWIST_RAD);
        assert_eq!(twist_after(-0.7, -3.0, true, dt), -MAX_TWIST_RAD);
        // Moving: back under the view within a tenth of a second from the limit.
        let mut t = MAX_TWIST_RAD;
        for _ in 0..7 {
            t = twist_after(t, 0.0, false, dt);
        }
        assert_eq!(t, 0.0);
        // Garbage in, a twist within bounds out.
        assert_eq!(twist_after(f32::NAN, f32::INFINITY, false, dt), 0.0);
    }

    #[test]
    fn a_landing_bends_the_knees_by_the_fall_and_they_straighten() {
        let dt = 1.0 / 64.0;
        assert_eq!(landing_after(0.0, Some(5.0), dt), 0.5);
        assert_eq!(landing_after(0.0, Some(30.0), dt), 1.0);
        assert_eq!(landing_after(0.0, Some(0.5), dt), LANDING_LEAST);
        let mut l = 1.0;
        let mut ticks = 0;
        while l > 0.0 {
            l = landing_after(l, None, dt);
            ticks += 1;
        }
        assert_eq!(ticks, (LANDING_S / dt).ceil() as usize);
        assert_eq!(landing_after(f32::NAN, Some(f32::NAN), dt), 0.0);
    }

    #[test]
    fn a_footstep_falls_on_each_half_of_the_gait_going_forward_only() {
        // Walked in small pieces, two footsteps a cycle, whatever the piece.
        for piece in [0.01, 0.07, 0.13, 0.9] {
            let (mut g, mut steps) = (0.05f32, 0);
            for _ in 0..((GAIT_CYCLE_M * 5.0 / piece) as usize) {
                let next = (g + piece).rem_euclid(GAIT_CYCLE_M);
                steps += usize::from(footstep_between(g, next));
                g = next;
            }
            assert!((9..=10).contains(&steps), "{steps} footsteps in 5 cycles in {piece} m pieces");
        }
        // Across the cycle's start and its half; not backwards; not standing.
        assert!(footstep_between(3.1, 0.1));
        assert!(footstep_between(1.5, 1.7));
        assert!(!footstep_between(1.7, 1.5));
        assert!(!footstep_between(0.1, 3.1));
        assert!(!footstep_between(1.0, 1.0));
        assert!(!footstep_between(0.2, 1.4));
    }
}
