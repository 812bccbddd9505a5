//! Hitboxes: a body capsule and a head sphere per player, whose heights follow
//! crouching, and exact ray tests against them.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::player::PlayerState;

/// Radius of the body capsule, metres.
pub const BODY_RADIUS_M: f32 = 0.36;
/// Radius of the head sphere, metres.
pub const HEAD_RADIUS_M: f32 = 0.21;
/// Gap between the top of the body capsule and the bottom of the head, metres.
const NECK_M: f32 = 0.03;

/// Where a shot hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HitZone {
    Head,
    Body,
}

/// What a player's hitboxes depend on: everything lag compensation rewinds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hitbox {
    /// Position of the feet, metres.
    pub feet: Vec3,
    pub crouched: bool,
    pub alive: bool,
    /// The player's spawn counter: blending never crosses a respawn.
    pub spawn_count: u8,
}

impl Hitbox {
    pub fn of(state: &PlayerState) -> Self {
        Self { feet: state.pos, crouched: state.crouched, alive: state.alive, spawn_count: state.spawn_count }
    }

    pub fn height(&self) -> f32 {
        if self.crouched { crate::player::CROUCH_HEIGHT_M } else { crate::player::STAND_HEIGHT_M }
    }

    /// Centre of the head sphere.
    pub fn head_center(&self) -> Vec3 {
        self.feet + Vec3::Y * (self.height() - HEAD_RADIUS_M)
    }

    /// The body capsule's segment (bottom and top centres of its end spheres).
    pub fn body_segment(&self) -> (Vec3, Vec3) {
        let top = self.height() - 2.0 * HEAD_RADIUS_M - NECK_M - BODY_RADIUS_M;
        (self.feet + Vec3::Y * BODY_RADIUS_M, self.feet + Vec3::Y * top.max(BODY_RADIUS_M))
    }

    /// Centre of the body: where an aimbot (or a lab) aims.
    pub fn body_center(&self) -> Vec3 {
        let (a, b) = self.body_segment();
        (a + b) * 0.5
    }

    /// Blends two hitboxes: position linearly, the rest from the nearer one;
    /// across a respawn, no blending at all.
    pub fn lerp(&self, other: &Hitbox, t: f32) -> Hitbox {
        let nearer = if t < 0.5 { self } else { other };
        if self.spawn_count != other.spawn_count {
            return *nearer;
        }
        Hitbox { feet: self.feet.lerp(other.feet, t), alive: self.alive && other.alive, ..*nearer }
    }

    /// The nearest hit of a ray (unit `dir`) on this player within `max_dist_m`:
    /// distance and zone. A dead player cannot be hit.
    pub fn ray_test(&self, origin: Vec3, dir: Vec3, max_dist_m: f32) -> Option<(f32, HitZone)> {
        self.inflated_test(origin, dir, max_dist_m, 0.0)
    }

    /// The nearest hit of a sphere of `radius_m` swept along a ray (unit
    /// `dir`) on this player within `max_dist_m`: how far it went.
    pub fn sweep_test(&self, origin: Vec3, dir: Vec3, max_dist_m: f32, radius_m: f32) -> Option<f32> {
        self.inflated_test(origin, dir, max_dist_m, radius_m).map(|(t, _)| t)
    }

    fn inflated_test(&self, origin: Vec3, dir: Vec3, max_dist_m: f32, extra_m: f32) -> Option<(f32, HitZone)> {
        if !self.alive {
            return None;
        }
        let head = ray_sphere(origin, dir, self.head_center(), HEAD_RADIUS_M + extra_m).map(|t| (t, HitZone::Head));
        let (a, b) = self.body_segment();
        let body = ray_capsule(origin, dir, a, b, BODY_RADIUS_M + extra_m).map(|t| (t, HitZone::Body));
        [head, body].into_iter().flatten().filter(|(t, _)| *t <= max_dist_m).min_by(|x, y| x.0.total_cmp(&y.0))
    }

    /// The point of the body or head nearest `p` (`p` itself if inside).
    pub fn nearest_point(&self, p: Vec3) -> Vec3 {
        let (a, b) = self.body_segment();
        let axis = b - a;
        let s = if axis.length_squared() > 1e-12 {
            ((p - a).dot(axis) / axis.length_squared()).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let on_body = surface_towards(a + axis * s, BODY_RADIUS_M, p);
        let on_head = surface_towards(self.head_center(), HEAD_RADIUS_M, p);
        if on_head.distance_squared(p) < on_body.distance_squared(p) { on_head } else { on_body }
    }
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
        Hitbox { feet: Vec3::new(x, 0.0, z), crouched: false, alive: true, spawn_count: 0 }
    }

    #[test]
    fn rays_hit_the_body_and_the_head_at_the_right_distance() {
        let target = standing_at(0.0, -10.0);
        let body = target.body_center();
        let from = Vec3::new(0.0, body.y, 0.0);
        let (t, zone) = target.ray_test(from, Vec3::NEG_Z, 100.0).expect("hits the body");
        assert_eq!(zone, HitZone::Body);
        assert!((t - (10.0 - BODY_RADIUS_M)).abs() < 1e-4, "{t}");
        let head = target.head_center();
        let (t, zone) = target.ray_test(Vec3::new(0.0, head.y, 0.0), Vec3::NEG_Z, 100.0).expect("hits the head");
        assert_eq!(zone, HitZone::Head);
        assert!((t - (10.0 - HEAD_RADIUS_M)).abs() < 1e-4, "{t}");
    }

    #[test]
    fn near_misses_miss_and_edges_hit() {
        let target = standing_at(0.0, -10.0);
        let y = target.body_center().y;
        let graze = BODY_RADIUS_M - 0.01;
        assert!(target.ray_test(Vec3::new(graze, y, 0.0), Vec3::NEG_Z, 100.0).is_some());
        assert!(target.ray_test(Vec3::new(BODY_RADIUS_M + 0.01, y, 0.0), Vec3::NEG_Z, 100.0).is_none());
        // Over the head, and short of the target.
        assert!(target.ray_test(Vec3::new(0.0, 1.85, 0.0), Vec3::NEG_Z, 100.0).is_none());
        assert!(target.ray_test(Vec3::new(0.0, y, 0.0), Vec3::NEG_Z, 5.0).is_none());
        // Pointing away.
        assert!(target.ray_test(Vec3::new(0.0, y, 0.0), Vec3::Z, 100.0).is_none());
    }

    #[test]
    fn crouching_lowers_the_head_and_the_dead_cannot_be_hit() {
        let mut target = standing_at(0.0, -10.0);
        let standing_head_y = target.head_center().y;
        target.crouched = true;
        assert!(target.ray_test(Vec3::new(0.0, standing_head_y, 0.0), Vec3::NEG_Z, 100.0).is_none());
        let (_, zone) =
            target.ray_test(Vec3::new(0.0, target.head_center().y, 0.0), Vec3::NEG_Z, 100.0).expect("crouched head");
        assert_eq!(zone, HitZone::Head);
        target.alive = false;
        assert!(target.ray_test(Vec3::new(0.0, target.body_center().y, 0.0), Vec3::NEG_Z, 100.0).is_none());
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
