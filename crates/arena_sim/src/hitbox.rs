//! Hitboxes: a few capsules per body on its pose (`pose.rs`) — head,
//! torso, pelvis, upper and lower arms and legs — and exact ray tests
//! against them. A [`Hitbox`] is what the pose depends on, so lag
//! compensation records and blends it, and rewinds the pose with the
//! player.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::player::PlayerState;
use crate::pose::{Pose, PoseInput, Side, pose};

pub use crate::pose::HEAD_RADIUS_M;
/// Radius of the torso's capsule, metres.
pub const TORSO_RADIUS_M: f32 = 0.19;
/// Radius of the pelvis's capsule (lying across the hips), metres.
pub const PELVIS_RADIUS_M: f32 = 0.15;
/// Radii of the limbs' capsules, metres.
pub const UPPER_ARM_RADIUS_M: f32 = 0.065;
pub const FOREARM_RADIUS_M: f32 = 0.055;
pub const THIGH_RADIUS_M: f32 = 0.09;
pub const SHIN_RADIUS_M: f32 = 0.07;

/// Where a shot hit: what the damage depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HitZone {
    Head,
    /// Torso or pelvis.
    Body,
    /// An arm or a leg.
    Limb,
}

/// One capsule of a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyPart {
    Head,
    Torso,
    Pelvis,
    UpperArm(Side),
    Forearm(Side),
    Thigh(Side),
    Shin(Side),
}

/// How many capsules a body has.
pub const PARTS: usize = 11;

impl BodyPart {
    /// Every part, in the order [`Hitbox::parts`] gives them.
    pub const ALL: [BodyPart; PARTS] = [
        BodyPart::Head,
        BodyPart::Torso,
        BodyPart::Pelvis,
        BodyPart::UpperArm(Side::Left),
        BodyPart::UpperArm(Side::Right),
        BodyPart::Forearm(Side::Left),
        BodyPart::Forearm(Side::Right),
        BodyPart::Thigh(Side::Left),
        BodyPart::Thigh(Side::Right),
        BodyPart::Shin(Side::Left),
        BodyPart::Shin(Side::Right),
    ];

    pub fn zone(self) -> HitZone {
        match self {
            BodyPart::Head => HitZone::Head,
            BodyPart::Torso | BodyPart::Pelvis => HitZone::Body,
            _ => HitZone::Limb,
        }
    }

    /// A name for reports, snake_case.
    pub fn name(self) -> &'static str {
        match self {
            BodyPart::Head => "head",
            BodyPart::Torso => "torso",
            BodyPart::Pelvis => "pelvis",
            BodyPart::UpperArm(Side::Left) => "upper_arm_left",
            BodyPart::UpperArm(Side::Right) => "upper_arm_right",
            BodyPart::Forearm(Side::Left) => "forearm_left",
            BodyPart::Forearm(Side::Right) => "forearm_right",
            BodyPart::Thigh(Side::Left) => "thigh_left",
            BodyPart::Thigh(Side::Right) => "thigh_right",
            BodyPart::Shin(Side::Left) => "shin_left",
            BodyPart::Shin(Side::Right) => "shin_right",
        }
    }

    pub fn index(self) -> usize {
        BodyPart::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
}

/// A capsule: the segment `a`-`b` grown by `radius` (a sphere when `a == b`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Capsule {
    pub a: Vec3,
    pub b: Vec3,
    pub radius: f32,
}

impl Capsule {
    pub fn center(&self) -> Vec3 {
        (self.a + self.b) * 0.5
    }

    /// The point of the capsule nearest `p` (`p` itself if inside).
    pub fn nearest_point(&self, p: Vec3) -> Vec3 {
        let axis = self.b - self.a;
        let s = if axis.length_squared() > 1e-12 {
            ((p - self.a).dot(axis) / axis.length_squared()).clamp(0.0, 1.0)
        } else {
            0.0
        };
        surface_towards(self.a + axis * s, self.radius, p)
    }
}

/// What a player's hitboxes depend on: everything lag compensation rewinds
/// (the pose's inputs, alive, the spawn counter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hitbox {
    /// What the pose is made from.
    pub input: PoseInput,
    pub alive: bool,
    /// The player's spawn counter: blending never crosses a respawn.
    pub spawn_count: u8,
}

impl Hitbox {
    pub fn of(state: &PlayerState) -> Self {
        Self { input: PoseInput::of(state), alive: state.alive, spawn_count: state.spawn_count }
    }

    /// A living player standing still at `feet`, facing -Z.
    pub fn standing_at(feet: Vec3) -> Self {
        Self { input: PoseInput { feet, on_ground: true, ..Default::default() }, alive: true, spawn_count: 0 }
    }

    /// Position of the feet.
    pub fn feet(&self) -> Vec3 {
        self.input.feet
    }

    pub fn pose(&self) -> Pose {
        pose(&self.input)
    }

    pub fn height(&self) -> f32 {
        if self.input.crouched { crate::player::CROUCH_HEIGHT_M } else { crate::player::STAND_HEIGHT_M }
    }

    /// The capsules of the body, in [`BodyPart::ALL`]'s order.
    pub fn parts(&self) -> [Capsule; PARTS] {
        parts_of(&self.pose())
    }

    /// Centre of the head.
    pub fn head_center(&self) -> Vec3 {
        self.pose().head
    }

    /// Centre of the torso: where an aimbot (or a lab) aims.
    pub fn body_center(&self) -> Vec3 {
        self.parts()[BodyPart::Torso.index()].center()
    }

    /// Blends two hitboxes as interpolation blends two states
    /// ([`PlayerState::blend`]): position, view, velocity and gait; the rest
    /// from the nearer one; across a respawn, no blending at all.
    pub fn lerp(&self, other: &Hitbox, t: f32) -> Hitbox {
        let nearer = if t < 0.5 { self } else { other };
        if self.spawn_count != other.spawn_count {
            return *nearer;
        }
        Hitbox { input: self.input.lerp(&other.input, t), alive: self.alive && other.alive, ..*nearer }
    }

    /// The nearest hit of a ray (unit `dir`) on this player within `max_dist_m`:
    /// distance and zone. A dead player cannot be hit.
    pub fn ray_test(&self, origin: Vec3, dir: Vec3, max_dist_m: f32) -> Option<(f32, HitZone)> {
        self.ray_part(origin, dir, max_dist_m).map(|(t, part)| (t, part.zone()))
    }

    /// The nearest hit of a ray (unit `dir`): distance and the part it hit.
    pub fn ray_part(&self, origin: Vec3, dir: Vec3, max_dist_m: f32) -> Option<(f32, BodyPart)> {
        self.inflated_test(origin, dir, max_dist_m, 0.0)
    }

    /// The nearest hit of a sphere of `radius_m` swept along a ray (unit
    /// `dir`) on this player within `max_dist_m`: how far it went.
    pub fn sweep_test(&self, origin: Vec3, dir: Vec3, max_dist_m: f32, radius_m: f32) -> Option<f32> {
        self.inflated_test(origin, dir, max_dist_m, radius_m).map(|(t, _)| t)
    }

    fn inflated_test(&self, origin: Vec3, dir: Vec3, max_dist_m: f32, extra_m: f32) -> Option<(f32, BodyPart)> {
        if !self.alive {
            return None;
        }
        // Nothing within reach of the ray's line can be skipped cheaply:
        // the whole body is inside a sphere of 1.5 m round its middle.
        let middle = self.input.feet + glam::Vec3::Y * (self.height() * 0.5);
        let to = middle - origin;
        let along = to.dot(dir);
        let reach = 1.5 + extra_m;
        if along < -reach || along > max_dist_m + reach || (to - dir * along).length_squared() > reach * reach {
            return None;
        }
        self.parts()
            .iter()
            .zip(BodyPart::ALL)
            .filter_map(|(c, part)| ray_capsule(origin, dir, c.a, c.b, c.radius + extra_m).map(|t| (t, part)))
            .filter(|(t, _)| *t <= max_dist_m)
            .min_by(|x, y| x.0.total_cmp(&y.0))
    }

    /// The point of the body nearest `p` (`p` itself if inside).
    pub fn nearest_point(&self, p: Vec3) -> Vec3 {
        self.parts()
            .iter()
            .map(|c| c.nearest_point(p))
            .min_by(|x, y| x.distance_squared(p).total_cmp(&y.distance_squared(p)))
            .unwrap_or(p)
    }
}

/// The capsules on a pose, in [`BodyPart::ALL`]'s order.
pub fn parts_of(p: &Pose) -> [Capsule; PARTS] {
    let right = p.facing * Vec3::X;
    let capsule = |a: Vec3, b: Vec3, radius: f32| Capsule { a, b, radius };
    let (al, ar, ll, lr) = (p.arm(Side::Left), p.arm(Side::Right), p.leg(Side::Left), p.leg(Side::Right));
    let spine = (p.chest - p.pelvis).normalize_or_zero();
    [
        capsule(p.head, p.head, HEAD_RADIUS_M),
        capsule(p.pelvis + spine * 0.16, p.chest - spine * 0.02, TORSO_RADIUS_M),
        capsule(p.pelvis - right * 0.06, p.pelvis + right * 0.06, PELVIS_RADIUS_M),
        capsule(al.root, al.middle, UPPER_ARM_RADIUS_M),
        capsule(ar.root, ar.middle, UPPER_ARM_RADIUS_M),
        capsule(al.middle, al.end, FOREARM_RADIUS_M),
        capsule(ar.middle, ar.end, FOREARM_RADIUS_M),
        capsule(ll.root, ll.middle, THIGH_RADIUS_M),
        capsule(lr.root, lr.middle, THIGH_RADIUS_M),
        capsule(ll.middle, ll.end, SHIN_RADIUS_M),
        capsule(lr.middle, lr.end, SHIN_RADIUS_M),
    ]
}

/// The point of a sphere's surface nearest `p` (`p` itself if inside).
fn surface_towards(center: Vec3, radius: f32, p: Vec3) -> Vec3 {
    let to = p - center;
    let d = to.length();
    if d <= radius { p } else { center + to * (radius / d) }
}

/// Distance along a ray (unit `dir`) to a sphere, if it hits; 0 if it starts inside.
pub fn ray_sphere(origin: Vec3, dir: Vec3, center: Vec3, radius: f32) -> Option<f32> {
    let m = origin - center;
    let b = m.dot(dir);
    let c = m.length_squared() - radius * radius;
    if c <= 0.0 {
        return Some(0.0);
    }
    if b > 0.0 {
        return None; // outside and pointing away
    }
    let discriminant = b * b - c;
    if discriminant < 0.0 {
        return None;
    }
    Some(-b - discriminant.sqrt())
}

/// Distance along a ray (unit `dir`) to a capsule (segment `a`-`b`, `radius`),
/// if it hits; 0 if it starts inside.
pub fn ray_capsule(origin: Vec3, dir: Vec3, a: Vec3, b: Vec3, radius: f32) -> Option<f32> {
    let axis = b - a;
    let length_sq = axis.length_squared();
    if length_sq < 1e-12 {
        return ray_sphere(origin, dir, a, radius);
    }
    // Inside already?
    let along = ((origin - a).dot(axis) / length_sq).clamp(0.0, 1.0);
    if (a + axis * along).distance_squared(origin) <= radius * radius {
        return Some(0.0);
    }
    let mut best: Option<f32> = None;
    let mut consider = |t: f32| {
        if t >= 0.0 && best.is_none_or(|b| t < b) {
            best = Some(t);
        }
    };
    // The cylinder between the end spheres: solve |(o + t d - a) x axiŝ|² = r².
    let axis_n = axis / length_sq.sqrt();
    let m = origin - a;
    let d_perp = dir - axis_n * dir.dot(axis_n);
    let m_perp = m - axis_n * m.dot(axis_n);
    let qa = d_perp.length_squared();
    if qa > 1e-12 {
        let qb = 2.0 * d_perp.dot(m_perp);
        let qc = m_perp.length_squared() - radius * radius;
        let discriminant = qb * qb - 4.0 * qa * qc;
        if discriminant >= 0.0 {
            let t = (-qb - discriminant.sqrt()) / (2.0 * qa);
            let s = (origin + dir * t - a).dot(axis) / length_sq;
            if (0.0..=1.0).contains(&s) {
                consider(t);
            }
        }
    }
    // The end caps.
    for center in [a, b] {
        if let Some(t) = ray_sphere(origin, dir, center, radius) {
            consider(t);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing_at(x: f32, z: f32) -> Hitbox {
        Hitbox::standing_at(Vec3::new(x, 0.0, z))
    }

    /// A ray from the shooter at z = 0 straight down -Z at `point`'s height
    /// and side: what it hits first.
    fn shot_at(target: &Hitbox, point: Vec3) -> Option<(f32, BodyPart)> {
        target.ray_part(Vec3::new(point.x, point.y, 0.0), Vec3::NEG_Z, 100.0)
    }

    #[test]
    fn rays_hit_the_part_they_aim_at_at_the_right_distance() {
        // Facing the shooter (yaw pi: -Z turned round), arms held forward.
        let mut target = standing_at(0.0, -10.0);
        target.input.yaw = std::f32::consts::PI;
        let parts = target.parts();
        let head = parts[BodyPart::Head.index()];
        let (t, part) = shot_at(&target, head.center()).expect("hits the head");
        assert_eq!(part, BodyPart::Head);
        assert!((t - (-head.a.z - HEAD_RADIUS_M)).abs() < 1e-4, "{t}");
        // The torso, below the arms, and each leg.
        let torso = parts[BodyPart::Torso.index()];
        let (t, part) = shot_at(&target, torso.a).expect("hits the torso");
        assert_eq!(part, BodyPart::Torso);
        assert!((t - (-torso.a.z - TORSO_RADIUS_M)).abs() < 1e-3, "{t}");
        for side in Side::BOTH {
            let shin = parts[BodyPart::Shin(side).index()];
            assert_eq!(shot_at(&target, shin.center()).map(|(_, p)| p), Some(BodyPart::Shin(side)));
            let thigh = parts[BodyPart::Thigh(side).index()];
            assert_eq!(shot_at(&target, thigh.center()).map(|(_, p)| p.zone()), Some(HitZone::Limb));
        }
        // Zones: head, body, limb.
        assert_eq!(BodyPart::Head.zone(), HitZone::Head);
        assert_eq!(BodyPart::Pelvis.zone(), HitZone::Body);
        assert_eq!(BodyPart::Forearm(Side::Left).zone(), HitZone::Limb);
    }

    #[test]
    fn near_misses_miss_and_edges_hit() {
        let target = standing_at(0.0, -10.0);
        let head = target.head_center();
        let graze = HEAD_RADIUS_M - 0.01;
        assert!(shot_at(&target, head + Vec3::X * graze).is_some());
        assert!(shot_at(&target, head + Vec3::X * (HEAD_RADIUS_M + 0.01)).is_none());
        // Between the legs, over the head, and short of the target.
        assert!(shot_at(&target, Vec3::new(0.0, 0.3, 0.0)).is_none());
        assert!(shot_at(&target, Vec3::new(0.0, 1.85, 0.0)).is_none());
        let y = target.body_center().y;
        assert!(target.ray_test(Vec3::new(0.0, y, 0.0), Vec3::NEG_Z, 5.0).is_none());
        // Pointing away.
        assert!(target.ray_test(Vec3::new(0.0, y, 0.0), Vec3::Z, 100.0).is_none());
    }

    #[test]
    fn crouching_lowers_the_head_and_the_dead_cannot_be_hit() {
        let mut target = standing_at(0.0, -10.0);
        let standing_head = target.head_center();
        target.input.crouched = true;
        assert!(shot_at(&target, standing_head).is_none());
        let (_, part) = shot_at(&target, target.head_center()).expect("crouched head");
        assert_eq!(part, BodyPart::Head);
        target.alive = false;
        assert!(shot_at(&target, target.body_center()).is_none());
    }

    #[test]
    fn hitboxes_blend_as_drawn_states_blend() {
        // What the server rewinds between two ticks is what a client draws
        // between the same two snapshots: one rule.
        let a = PlayerState {
            pos: Vec3::new(1.0, 0.0, 2.0),
            vel: Vec3::new(6.0, 0.0, -2.0),
            yaw: 3.0,
            pitch: -0.4,
            step_phase: 3.0,
            on_ground: true,
            alive: true,
            ..Default::default()
        };
        let b = PlayerState {
            pos: Vec3::new(1.2, 0.0, 1.9),
            vel: Vec3::new(5.0, 0.0, -3.0),
            yaw: -3.0,
            pitch: 0.3,
            step_phase: 0.1,
            crouched: true,
            ..a
        };
        for t in [0.0, 0.2, 0.5, 0.9, 1.0] {
            let drawn = Hitbox::of(&PlayerState::blend(&a, &b, t));
            let rewound = Hitbox::of(&a).lerp(&Hitbox::of(&b), t);
            for (x, y) in drawn.parts().iter().zip(rewound.parts()) {
                assert!(x.a.distance(y.a) < 1e-5 && x.b.distance(y.b) < 1e-5, "t {t}: {x:?} vs {y:?}");
            }
        }
        // The gait goes forward across the cycle's end, not back through it.
        let mid = Hitbox::of(&a).lerp(&Hitbox::of(&b), 0.5).input.gait_m;
        assert!((mid - 0.15).abs() < 1e-4 || (mid - 3.15).abs() < 1e-4, "{mid}");
    }

    #[test]
    fn the_nearest_point_is_on_the_nearest_part() {
        let target = standing_at(0.0, 0.0);
        let above = target.nearest_point(Vec3::new(0.0, 3.0, 0.0));
        assert!((above.y - (target.head_center().y + HEAD_RADIUS_M)).abs() < 1e-4, "{above}");
        let inside = target.body_center();
        assert_eq!(target.nearest_point(inside), inside);
    }

    #[test]
    fn ray_capsule_agrees_with_sampling() {
        // Compare the analytic test with a brute-force march for many rays.
        let (a, b, r) = (Vec3::new(0.2, 0.5, -5.0), Vec3::new(-0.1, 1.6, -5.3), 0.4);
        let mut seed = 12345u32;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as f32 / u32::MAX as f32 * 2.0 - 1.0
        };
        for _ in 0..2000 {
            let origin = Vec3::new(rnd() * 2.0, 1.0 + rnd(), 1.0);
            let dir =
                (Vec3::new(rnd() * 1.2, rnd() * 1.2, -5.5) - origin).normalize() + Vec3::new(rnd(), rnd(), 0.0) * 0.05;
            let dir = dir.normalize();
            let analytic = ray_capsule(origin, dir, a, b, r);
            let distance_to_segment = |p: Vec3| {
                let s = ((p - a).dot(b - a) / (b - a).length_squared()).clamp(0.0, 1.0);
                p.distance(a + (b - a) * s)
            };
            let marched = (0..20_000).map(|i| i as f32 * 0.001).find(|t| distance_to_segment(origin + dir * *t) <= r);
            match (analytic, marched) {
                (Some(x), Some(y)) => assert!((x - y).abs() < 0.003, "{x} vs {y}"),
                (None, None) => {}
                // Rays grazing the surface can differ by the march's step.
                (x, y) => {
                    let t = x.or(y).unwrap_or(0.0);
                    assert!((distance_to_segment(origin + dir * t) - r).abs() < 0.01, "{x:?} vs {y:?}");
                }
            }
        }
    }
}
