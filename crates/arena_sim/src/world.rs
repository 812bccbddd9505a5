//! The arena's static collision world: rapier colliders built from the map,
//! queried (never stepped) by movement and by hitscan weapons.

use glam::{Quat, Vec3};
use rapier3d::parry::query::DefaultQueryDispatcher;
use rapier3d::prelude::*;

use crate::hitbox::{HitZone, Hitbox};
use crate::map::{MapDef, SolidShape};
use crate::player::{PLAYER_RADIUS_M, PlayerId};
use crate::weapon::{RANGE_M, Shot};

/// Static geometry of one map, ready for scene queries.
///
/// There are no rigid bodies and nothing is ever simulated: the colliders sit in
/// a bounding-volume tree and the movement code casts the player's shape
/// through it. Building it is cheap (a few dozen colliders), so the server and
/// each client build their own from the same [`MapDef`].
pub struct ArenaWorld {
    map: MapDef,
    bodies: RigidBodySet,
    colliders: ColliderSet,
    broad_phase: BroadPhaseBvh,
    dispatcher: DefaultQueryDispatcher,
}

impl std::fmt::Debug for ArenaWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArenaWorld").field("map", &self.map.name).field("colliders", &self.colliders.len()).finish()
    }
}

impl ArenaWorld {
    pub fn new(map: MapDef) -> Self {
        let mut colliders = ColliderSet::new();
        let mut broad_phase = BroadPhaseBvh::new();
        let params = IntegrationParameters::default();
        for solid in map.solids() {
            let builder = match solid.shape {
                SolidShape::Cuboid { half_extents } => {
                    ColliderBuilder::cuboid(half_extents.x, half_extents.y, half_extents.z)
                }
                SolidShape::Cylinder { radius, half_height } => ColliderBuilder::cylinder(half_height, radius),
            };
            let collider = builder.position(Pose::from_parts(solid.center, solid.rotation)).build();
            let aabb = collider.compute_aabb();
            let handle = colliders.insert(collider);
            broad_phase.set_aabb(&params, handle, aabb);
        }
        Self { map, bodies: RigidBodySet::new(), colliders, broad_phase, dispatcher: DefaultQueryDispatcher }
    }

    pub fn map(&self) -> &MapDef {
        &self.map
    }

    /// A query pipeline over the arena's static geometry.
    pub fn queries(&self) -> QueryPipeline<'_> {
        self.broad_phase.as_query_pipeline(&self.dispatcher, &self.bodies, &self.colliders, QueryFilter::default())
    }

    /// Distance along `dir` (unit length) from `origin` to the first solid, if
    /// any is nearer than `max_dist_m`. A ray starting inside a solid hits at 0.
    pub fn cast_ray(&self, origin: Vec3, dir: Vec3, max_dist_m: f32) -> Option<f32> {
        let ray = Ray::new(origin, dir);
        self.queries().cast_ray(&ray, max_dist_m, true).map(|(_, toi)| toi)
    }

    /// What a shot hits first, the one rule of the server's verdict and the
    /// client's prediction of it: nothing behind a wall; of `others`, the
    /// nearest hitbox hit (who, and where); and where the shot ends.
    pub fn first_hit(&self, shot: Shot, others: &[(PlayerId, Hitbox)]) -> (Option<(PlayerId, HitZone)>, Vec3) {
        let Shot { origin, dir } = shot;
        let wall = self.cast_ray(origin, dir, RANGE_M).unwrap_or(RANGE_M);
        let nearest = others
            .iter()
            .filter_map(|(id, hitbox)| hitbox.ray_test(origin, dir, wall).map(|(t, zone)| (*id, t, zone)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let end = origin + dir * nearest.map(|(_, t, _)| t).unwrap_or(wall);
        (nearest.map(|(id, _, zone)| (id, zone)), end)
    }

    /// Whether a player of `height_m` with its feet at `feet` overlaps no solid
    /// (with a small margin, so touching the floor counts as free).
    pub fn player_fits(&self, feet: Vec3, height_m: f32) -> bool {
        let (shape, pose) = player_shape(feet + Vec3::Y * 0.02, height_m - 0.04);
        self.queries().intersect_shape(pose, &shape).next().is_none()
    }
}

/// The collision shape of a player with its feet at `feet` (an upright
/// cylinder of [`PLAYER_RADIUS_M`]), and its pose.
pub fn player_shape(feet: Vec3, height_m: f32) -> (Cylinder, Pose) {
    let center = feet + Vec3::Y * (height_m * 0.5);
    (Cylinder::new(height_m * 0.5, PLAYER_RADIUS_M), Pose::from_parts(center, Quat::IDENTITY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_spawns_are_free_and_above_ground() {
        let world = ArenaWorld::new(MapDef::foundry());
        for (i, spawn) in world.map().spawns.iter().enumerate() {
            assert!(world.player_fits(spawn.pos, crate::player::STAND_HEIGHT_M), "spawn {i} is inside geometry");
            let below = world.cast_ray(spawn.pos + Vec3::Y * 0.5, Vec3::NEG_Y, 2.0);
            assert!(below.is_some_and(|d| (d - 0.5).abs() < 0.05), "spawn {i} does not stand on a floor: {below:?}");
        }
    }

    #[test]
    fn walls_block_rays() {
        let world = ArenaWorld::new(MapDef::foundry());
        // From the middle of the arena eastwards at head height: the east wall is at x = 30.
        let hit = world.cast_ray(Vec3::new(0.0, 5.0, 15.0), Vec3::X, 100.0);
        assert!(hit.is_some_and(|d| (d - 30.0).abs() < 0.01), "{hit:?}");
    }
}
