//! Poses: a player's body — head, spine, pelvis, arms holding the weapon,
//! legs in a gait cycle — as a pure function of what every client is told
//! of the player ([`PoseInput`]: feet, view, horizontal velocity, the gait
//! phase, crouched, on the ground). The server and every client compute the
//! same joints for the same inputs, so the hitboxes built on them
//! (`hitbox.rs`) are the same on the shooter's screen and in the server's
//! rewind. No state of its own: the gait's only memory is the distance into
//! the gait cycle, which the movement function keeps ([`crate::PlayerState::step_phase`]).
//!
//! The frame: the body faces the view's yaw; the head stays over the feet,
//! its top at the player's height, around the eye (a crouch or a look down bends the spine and moves the pelvis back,
//! never the eye); the hands hold the weapon along the view; each foot
//! swings along the velocity, half a cycle apart, lifted while it swings
//! forward, and the knees bend to reach it (two-bone inverse kinematics).

use glam::{Quat, Vec2, Vec3};
use serde::{Deserialize, Serialize};

use crate::cmd::{MAX_PITCH_RAD, lerp_angle};
pub use crate::player::GAIT_CYCLE_M;
use crate::player::{
    CROUCH_EYE_M, CROUCH_HEIGHT_M, MAX_TWIST_RAD, PlayerState, RUN_SPEED_MPS, STAND_EYE_M, STAND_HEIGHT_M, lerp_gait,
};
/// Radius of the head, metres: its top is the player's height.
pub const HEAD_RADIUS_M: f32 = 0.14;
/// Neck base to the head's centre, metres.
const NECK_M: f32 = 0.16;
/// Chest (shoulder line) to the neck base, metres.
const UPPER_SPINE_M: f32 = 0.10;
/// Pelvis to chest, metres.
const SPINE_M: f32 = 0.42;
/// Half the shoulders' width, metres.
const SHOULDER_HALF_WIDTH_M: f32 = 0.19;
/// Half the hips' width, and the hip joints below the pelvis's centre, metres.
const HIP_HALF_WIDTH_M: f32 = 0.11;
const HIP_DROP_M: f32 = 0.06;
/// Arm bones, metres.
const UPPER_ARM_M: f32 = 0.30;
const FOREARM_M: f32 = 0.28;
/// Leg bones, metres.
const THIGH_M: f32 = 0.44;
const SHIN_M: f32 = 0.43;
/// The ankle above the ground, metres.
const ANKLE_M: f32 = 0.08;
/// A foot's swing either side of the hip at full speed, metres.
const STRIDE_HALF_M: f32 = 0.42;
/// A swinging foot's lift at full speed, metres.
const LIFT_M: f32 = 0.24;
/// The spine's forward lean in a crouch, radians.
const CROUCH_LEAN_RAD: f32 = 0.35;
/// How much of the view's pitch the spine takes (the rest is the neck's).
const SPINE_PITCH_SHARE: f32 = 0.25;
const NECK_PITCH_SHARE: f32 = 0.35;
/// Where the hands hold the weapon, from the eye along the view (forward,
/// right, up), metres.
const TRIGGER_HAND: Vec3 = Vec3::new(0.13, -0.15, 0.34);
const GRIP_HAND: Vec3 = Vec3::new(0.04, -0.12, 0.45);
/// A crouch's top speed is this share of a run (the movement's crouch
/// factor): a crouched stride grows no longer past it, whatever the speed.
const CROUCH_STRIDE_SHARE: f32 = 0.45;
/// A crouch's feet ahead of the hips, metres.
const CROUCH_FEET_AHEAD_M: f32 = 0.22;
/// Feet and knees pulled up in the air, metres.
const AIR_TUCK_M: f32 = 0.30;

/// What a pose depends on: the state every client is told of a player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoseInput {
    /// Position of the feet, metres.
    pub feet: Vec3,
    /// View yaw and pitch, radians.
    pub yaw: f32,
    pub pitch: f32,
    /// Horizontal velocity (x, z), metres per second.
    pub vel: Vec2,
    /// Distance into the gait cycle, metres (`0..GAIT_CYCLE_M`).
    pub gait_m: f32,
    pub crouched: bool,
    pub on_ground: bool,
    /// The view's turn from the hips, radians ([`PlayerState::twist`]).
    #[serde(default)]
    pub twist: f32,
    /// How deep the knees are bent by a landing, 0..1 ([`PlayerState::landing`]).
    #[serde(default)]
    pub landing: f32,
}

impl PoseInput {
    pub fn of(state: &PlayerState) -> Self {
        Self {
            feet: state.pos,
            yaw: state.yaw,
            pitch: state.pitch,
            vel: Vec2::new(state.vel.x, state.vel.z),
            gait_m: state.step_phase,
            crouched: state.crouched,
            on_ground: state.on_ground,
            twist: state.twist,
            landing: state.landing,
        }
    }

    /// Blends two inputs as interpolation blends two states
    /// ([`PlayerState::blend`]): position, view, velocity and gait; the rest
    /// from the nearer one.
    pub fn lerp(&self, other: &PoseInput, t: f32) -> PoseInput {
        let nearer = if t < 0.5 { self } else { other };
        PoseInput {
            feet: self.feet.lerp(other.feet, t),
            yaw: lerp_angle(self.yaw, other.yaw, t),
            pitch: self.pitch + (other.pitch - self.pitch) * t,
            vel: self.vel.lerp(other.vel, t),
            gait_m: lerp_gait(self.gait_m, other.gait_m, t),
            twist: self.twist + (other.twist - self.twist) * t,
            landing: self.landing + (other.landing - self.landing) * t,
            ..*nearer
        }
    }
}

/// A side of the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::Left, Side::Right];

    /// -1 for the left, +1 for the right (along the body's right).
    pub fn sign(self) -> f32 {
        match self {
            Side::Left => -1.0,
            Side::Right => 1.0,
        }
    }
}

/// A limb's three joints: root (shoulder or hip), middle (elbow or knee),
/// end (hand or ankle).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limb {
    pub root: Vec3,
    pub middle: Vec3,
    pub end: Vec3,
}

/// Every joint of a body, in world space.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pose {
    pub pelvis: Vec3,
    pub chest: Vec3,
    pub neck: Vec3,
    pub head: Vec3,
    /// Left and right arms (shoulder, elbow, hand) and legs (hip, knee, ankle).
    pub arms: [Limb; 2],
    pub legs: [Limb; 2],
    /// The hips' orientation (the view's yaw less the twist).
    pub facing: Quat,
}

impl Pose {
    pub fn arm(&self, side: Side) -> Limb {
        self.arms[side as usize]
    }

    pub fn leg(&self, side: Side) -> Limb {
        self.legs[side as usize]
    }
}

/// The eye's height above the feet.
fn eye_height(crouched: bool) -> f32 {
    if crouched { CROUCH_EYE_M } else { STAND_EYE_M }
}

/// A finite number or zero: a pose never carries a NaN.
fn finite(x: f32) -> f32 {
    if x.is_finite() { x } else { 0.0 }
}

/// The pose for `input`.
pub fn pose(input: &PoseInput) -> Pose {
    let feet = if input.feet.is_finite() { input.feet } else { Vec3::ZERO };
    let yaw = finite(input.yaw);
    let pitch = finite(input.pitch).clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD);
    let up = Vec3::Y;
    // The upper body faces the view; the hips and legs face the lower
    // body's way, turned back from it by the twist.
    let view_facing = Quat::from_rotation_y(yaw);
    let forward = view_facing * Vec3::NEG_Z;
    let right = view_facing * Vec3::X;
    let twist = finite(input.twist).clamp(-MAX_TWIST_RAD, MAX_TWIST_RAD);
    let facing = Quat::from_rotation_y(yaw - twist);
    let (hips_forward, hips_right) = (facing * Vec3::NEG_Z, facing * Vec3::X);

    // The spine, from the head down: the head stays at the eye; looking down
    // (negative pitch) and crouching lean the spine forward, so the chest
    // and pelvis move back.
    let lean = if input.crouched { CROUCH_LEAN_RAD } else { 0.0 } - pitch * SPINE_PITCH_SHARE;
    let neck_lean = lean - pitch * NECK_PITCH_SHARE;
    let along = |angle: f32| up * angle.cos() + forward * angle.sin();
    let height = if input.crouched { CROUCH_HEIGHT_M } else { STAND_HEIGHT_M };
    // A landing lowers the whole body on bent knees (on the ground only),
    // the eyes with it (`PlayerState::eye_pos`).
    let drop = crate::player::landing_drop(input.landing, input.on_ground);
    let head = feet + up * (height - HEAD_RADIUS_M - drop);
    let neck = head - along(neck_lean) * NECK_M;
    let chest = neck - along(lean) * UPPER_SPINE_M;
    let pelvis = chest - along(lean) * SPINE_M;

    // The arms hold the weapon along the view.
    let eye = feet + up * (eye_height(input.crouched) - drop);
    let view = crate::player::view_rotation(yaw, pitch);
    let hold = |local: Vec3| eye + view * Vec3::new(local.x, local.y, -local.z);
    let arms = Side::BOTH.map(|side| {
        let shoulder = chest + right * (side.sign() * SHOULDER_HALF_WIDTH_M) - along(lean) * 0.03;
        let hand = hold(if side == Side::Right { TRIGGER_HAND } else { GRIP_HAND });
        // Elbows down and out.
        let pole = right * (side.sign() * 0.6) - up;
        two_bone(shoulder, hand, UPPER_ARM_M, FOREARM_M, pole)
    });

    // The legs: each foot on its point of the gait cycle.
    let speed = input.vel.length();
    let longest = if input.crouched { CROUCH_STRIDE_SHARE } else { 1.0 };
    let amplitude = if speed.is_finite() { (speed / RUN_SPEED_MPS).clamp(0.0, longest) } else { 0.0 };
    let moving =
        if speed > 1e-3 && speed.is_finite() { Vec3::new(input.vel.x, 0.0, input.vel.y) / speed } else { hips_forward };
    let cycle = finite(input.gait_m).rem_euclid(GAIT_CYCLE_M) / GAIT_CYCLE_M * std::f32::consts::TAU;
    let legs = Side::BOTH.map(|side| {
        let hip = pelvis + hips_right * (side.sign() * HIP_HALF_WIDTH_M) - up * HIP_DROP_M;
        // Feet under the hips (a lean moves both back), a crouch's ahead of them.
        let under_hips = Vec3::new(pelvis.x, feet.y, pelvis.z);
        let planted = under_hips + hips_right * (side.sign() * (HIP_HALF_WIDTH_M + 0.02)) + up * ANKLE_M;
        let ankle = if input.on_ground {
            // The left foot touches down at the cycle's start, the right
            // half a cycle later (the footsteps); a foot swings forward,
            // lifted, while the other carries the body.
            let angle = cycle + if side == Side::Right { std::f32::consts::PI } else { 0.0 };
            let crouch_set = if input.crouched { hips_forward * CROUCH_FEET_AHEAD_M } else { Vec3::ZERO };
            planted
                + crouch_set
                + moving * (STRIDE_HALF_M * amplitude * angle.cos())
                + up * (LIFT_M * amplitude * (-angle.sin()).max(0.0))
        } else {
            // In the air: knees up, one foot ahead of the other.
            planted + up * AIR_TUCK_M + hips_forward * (if side == Side::Left { 0.18 } else { -0.08 })
        };
        // Knees forward, and up when the foot is far ahead: never into the floor.
        two_bone(hip, ankle, THIGH_M, SHIN_M, hips_forward + up)
    });

    Pose { pelvis, chest, neck, head, arms, legs, facing }
}

/// A two-bone limb from `root` reaching for `target` (inverse kinematics):
/// the middle joint bends towards `pole`; a target out of reach is reached
/// for along the line, the limb straight.
pub fn two_bone(root: Vec3, target: Vec3, upper: f32, lower: f32, pole: Vec3) -> Limb {
    let to = target - root;
    let distance = to.length();
    let reach = upper + lower;
    if distance.is_nan() || distance <= 1e-5 {
        let dir = pole.try_normalize().unwrap_or(Vec3::NEG_Y);
        let middle = root + dir * upper;
        return Limb { root, middle, end: middle - dir * lower };
    }
    let dir = to / distance;
    let d = distance.clamp((upper - lower).abs() + 1e-4, reach - 1e-4);
    let end = root + dir * d.min(distance);
    // Law of cosines: how far along the line the middle joint sits, and how
    // far off it.
    let along = (upper * upper - lower * lower + d * d) / (2.0 * d);
    let off = (upper * upper - along * along).max(0.0).sqrt();
    let bend = (pole - dir * pole.dot(dir)).try_normalize().unwrap_or_else(|| dir.any_orthonormal_vector());
    Limb { root, middle: root + dir * along + bend * off, end }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing() -> PoseInput {
        PoseInput { on_ground: true, ..Default::default() }
    }

    fn running(gait_m: f32) -> PoseInput {
        PoseInput { vel: Vec2::new(0.0, -RUN_SPEED_MPS), gait_m, ..standing() }
    }

    fn joints(p: &Pose) -> Vec<Vec3> {
        let mut all = vec![p.pelvis, p.chest, p.neck, p.head];
        for limb in p.arms.iter().chain(&p.legs) {
            all.extend([limb.root, limb.middle, limb.end]);
        }
        all
    }

    #[test]
    fn bones_keep_their_lengths() {
        for input in [standing(), running(0.7), PoseInput { crouched: true, pitch: 1.2, ..running(2.0) }] {
            let p = pose(&input);
            for side in Side::BOTH {
                let (arm, leg) = (p.arm(side), p.leg(side));
                assert!((arm.root.distance(arm.middle) - UPPER_ARM_M).abs() < 1e-3, "{input:?}");
                assert!((arm.middle.distance(arm.end) - FOREARM_M).abs() < 1e-3, "{input:?}");
                assert!((leg.root.distance(leg.middle) - THIGH_M).abs() < 1e-3, "{input:?}");
                assert!((leg.middle.distance(leg.end) - SHIN_M).abs() < 1e-3, "{input:?}");
            }
            assert!((p.pelvis.distance(p.chest) - SPINE_M).abs() < 1e-4);
        }
    }

    #[test]
    fn a_gait_cycle_is_continuous_and_comes_back_to_its_start() {
        // Sampled over two cycles: the largest move of any joint from one
        // sample to the next halves when the samples double (no jump
        // anywhere), and stays a few cm for 1.6 cm of running.
        let largest_step = |samples: usize| {
            let step = 2.0 * GAIT_CYCLE_M / samples as f32;
            let mut previous = joints(&pose(&running(0.0)));
            let mut largest = 0.0f32;
            for i in 1..=samples {
                let now = joints(&pose(&running(i as f32 * step)));
                for (a, b) in previous.iter().zip(&now) {
                    largest = largest.max(a.distance(*b));
                }
                previous = now;
            }
            largest
        };
        let (coarse, fine) = (largest_step(400), largest_step(800));
        assert!(coarse < 0.05, "a joint moved {coarse} m for 1.6 cm of running");
        assert!(fine < coarse * 0.6, "no jump: {fine} m at twice the samples against {coarse} m");
        for (a, b) in joints(&pose(&running(0.0))).iter().zip(&joints(&pose(&running(GAIT_CYCLE_M)))) {
            assert!(a.distance(*b) < 1e-4);
        }
    }

    #[test]
    fn feet_swing_along_the_velocity_and_touch_down_on_the_footsteps() {
        // The left foot is furthest forward (along the velocity) where it
        // touches down, at the cycle's start; the right half a cycle later.
        let ahead = |input: PoseInput, side: Side| {
            let p = pose(&input);
            (p.leg(side).end - input.feet).dot(Vec3::new(input.vel.x, 0.0, input.vel.y).normalize())
        };
        assert!(ahead(running(0.0), Side::Left) > 0.35);
        assert!(ahead(running(0.0), Side::Right) < -0.35);
        assert!(ahead(running(GAIT_CYCLE_M / 2.0), Side::Right) > 0.35);
        // A foot in its swing is lifted; the other is on the ground.
        let p = pose(&running(GAIT_CYCLE_M * 0.75));
        assert!(p.leg(Side::Left).end.y > ANKLE_M + 0.15, "{:?}", p.leg(Side::Left));
        assert!((p.leg(Side::Right).end.y - ANKLE_M).abs() < 1e-3);
        // Standing still: both feet under the hips, on the ground.
        let p = pose(&standing());
        for side in Side::BOTH {
            assert!((p.leg(side).end.y - ANKLE_M).abs() < 1e-3);
            assert!(p.leg(side).end.z.abs() < 1e-3, "{:?}", p.leg(side));
        }
        // Strafing right swings the feet along x.
        let strafing = PoseInput { vel: Vec2::new(RUN_SPEED_MPS, 0.0), ..running(0.0) };
        assert!(pose(&strafing).leg(Side::Left).end.x > 0.25);
    }

    #[test]
    fn a_crouch_stays_within_its_height_and_bends_the_knees() {
        for (crouched, height) in [(false, STAND_HEIGHT_M), (true, CROUCH_HEIGHT_M)] {
            for pitch in [-MAX_PITCH_RAD, -0.5, 0.0, 0.5, MAX_PITCH_RAD] {
                for gait in [0.0, 0.8, 1.6, 2.4] {
                    let input = PoseInput { crouched, pitch, ..running(gait) };
                    let p = pose(&input);
                    // The spine and legs within the player's height (the
                    // arms may reach above the head, aiming up).
                    let mut body = vec![p.pelvis, p.chest, p.neck, p.head];
                    for leg in p.legs {
                        body.extend([leg.root, leg.middle, leg.end]);
                    }
                    for j in body {
                        assert!(j.y >= -1e-4, "below the feet: {j} {input:?}");
                        assert!(j.y <= height - 0.1, "above the head's top: {j} {input:?}");
                    }
                    assert!(p.arms.iter().all(|a| a.end.y > 0.0), "{input:?}");
                    assert!((p.head.y + HEAD_RADIUS_M - height).abs() < 1e-4, "{input:?}");
                }
            }
        }
        let (stand, crouch) = (pose(&standing()), pose(&PoseInput { crouched: true, ..standing() }));
        let knee_bend = |p: &Pose| {
            let leg = p.leg(Side::Left);
            (leg.root - leg.middle).angle_between(leg.end - leg.middle)
        };
        assert!(knee_bend(&stand) > 2.5, "nearly straight standing: {}", knee_bend(&stand));
        assert!(knee_bend(&crouch) < 2.0, "bent in a crouch: {}", knee_bend(&crouch));
        assert!(crouch.pelvis.y < stand.pelvis.y - 0.35);
    }

    #[test]
    fn pitch_bends_the_spine_within_its_limits_and_the_hands_follow_the_view() {
        let look = |pitch: f32| pose(&PoseInput { pitch, ..standing() });
        let (up, level, down) = (look(MAX_PITCH_RAD), look(0.0), look(-MAX_PITCH_RAD));
        let forward_of = |p: &Pose| -(p.chest - p.pelvis).z;
        assert!(forward_of(&down) > forward_of(&level) && forward_of(&level) > forward_of(&up));
        // Beyond the limit is the limit (and garbage is level).
        assert_eq!(look(10.0), up);
        assert_eq!(look(f32::NAN), level);
        // The spine never bends more than the crouch lean and its share of the pitch.
        let lean = |p: &Pose| (p.chest - p.pelvis).angle_between(Vec3::Y);
        assert!(lean(&down) <= SPINE_PITCH_SHARE * MAX_PITCH_RAD + 1e-3);
        // The weapon hands go where the view goes.
        for p in [up, level, down] {
            let hand = p.arm(Side::Right).end;
            assert!(hand.distance(Vec3::Y * STAND_EYE_M) < 0.5);
        }
        assert!(up.arm(Side::Left).end.y > level.arm(Side::Left).end.y + 0.3);
        assert!(down.arm(Side::Left).end.y < level.arm(Side::Left).end.y - 0.3);
    }

    #[test]
    fn the_body_faces_the_yaw_and_moves_with_the_feet() {
        let base = pose(&running(1.0));
        let v = Quat::from_rotation_y(1.0) * Vec3::NEG_Z * RUN_SPEED_MPS;
        let vel = Vec2::new(v.x, v.z);
        let turned = pose(&PoseInput { yaw: 1.0, vel, ..running(1.0) });
        let rot = Quat::from_rotation_y(1.0);
        for (a, b) in joints(&base).iter().zip(&joints(&turned)) {
            assert!((rot * *a).distance(*b) < 1e-4, "{a} turned is not {b}");
        }
        let moved = pose(&PoseInput { feet: Vec3::new(3.0, 1.0, -2.0), ..running(1.0) });
        for (a, b) in joints(&base).iter().zip(&joints(&moved)) {
            assert!((*a + Vec3::new(3.0, 1.0, -2.0)).distance(*b) < 1e-4);
        }
    }

    #[test]
    fn a_twist_turns_the_hips_and_legs_and_leaves_the_upper_body_on_the_view() {
        let straight = pose(&standing());
        let twisted = pose(&PoseInput { twist: MAX_TWIST_RAD, ..standing() });
        // Head, chest and hands as before: the view did not move.
        assert_eq!((straight.head, straight.chest, straight.arms), (twisted.head, twisted.chest, twisted.arms));
        // The hips and feet are turned back by the twist about the pelvis.
        let hip_line = |p: &Pose| (p.legs[1].root - p.legs[0].root).normalize();
        let turned = hip_line(&straight).angle_between(hip_line(&twisted));
        assert!((turned - MAX_TWIST_RAD).abs() < 1e-3, "the hips turned {turned} rad");
        let feet_line = |p: &Pose| (p.legs[1].end - p.legs[0].end).normalize();
        assert!((feet_line(&straight).angle_between(feet_line(&twisted)) - MAX_TWIST_RAD).abs() < 1e-3);
        // A twist past the limit is the limit.
        assert_eq!(pose(&PoseInput { twist: 5.0, ..standing() }), twisted);
    }

    #[test]
    fn a_landing_bends_the_knees_and_lowers_the_body_within_reach() {
        let stand = pose(&standing());
        let landed = pose(&PoseInput { landing: 1.0, ..standing() });
        let drop = stand.head.y - landed.head.y;
        assert!((drop - crate::player::LANDING_DROP_M).abs() < 1e-4, "the head dropped {drop}");
        assert!((stand.pelvis.y - landed.pelvis.y - crate::player::LANDING_DROP_M).abs() < 1e-4);
        // Feet stay on the floor; knees bend forward, and the limbs keep their lengths.
        for side in 0..2 {
            let (a, b) = (stand.legs[side], landed.legs[side]);
            assert!((a.end.y - b.end.y).abs() < 1e-4, "a foot left the floor");
            assert!(b.middle.distance(b.root) - THIGH_M < 1e-3 && b.end.distance(b.middle) - SHIN_M < 1e-3);
            let ahead = |l: Limb| (l.middle - (l.root + l.end) * 0.5).dot(Vec3::NEG_Z);
            assert!(ahead(b) > ahead(a) + 0.05, "knee {side} bends forward");
        }
        // Only on the ground: in the air there is no landing to show.
        let air = PoseInput { on_ground: false, ..standing() };
        assert_eq!(pose(&PoseInput { landing: 1.0, ..air }), pose(&air));
    }

    #[test]
    fn garbage_in_gives_a_finite_pose() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30] {
            let input = PoseInput {
                feet: Vec3::splat(bad),
                yaw: bad,
                pitch: bad,
                vel: Vec2::splat(bad),
                gait_m: bad,
                crouched: false,
                on_ground: true,
                twist: bad,
                landing: bad,
            };
            assert!(joints(&pose(&input)).iter().all(|j| j.is_finite()), "{bad}");
        }
    }

    #[test]
    fn two_bone_reaches_what_it_can_and_bends_towards_the_pole() {
        let limb = two_bone(Vec3::ZERO, Vec3::new(0.0, -0.5, 0.0), 0.4, 0.4, Vec3::Z);
        assert!(limb.end.distance(Vec3::new(0.0, -0.5, 0.0)) < 1e-3);
        assert!(limb.middle.z > 0.2, "{limb:?}");
        let far = two_bone(Vec3::ZERO, Vec3::new(0.0, -5.0, 0.0), 0.4, 0.4, Vec3::Z);
        assert!((far.end.y + 0.8).abs() < 1e-3, "out of reach: straight toward it {far:?}");
    }
}
