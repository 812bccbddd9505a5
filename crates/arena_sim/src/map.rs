//! The arena map as data: loaded from RON, checked, and turned into a list of
//! solids that both the collision world and the client's meshes are built from.

use glam::{Quat, Vec2, Vec3};
use serde::{Deserialize, Serialize};

use crate::items::ItemKind;
use crate::player::{PLAYER_RADIUS_M, PlayerState};

/// The built-in maps, compiled into the binary so that a server and a client
/// of the same build always agree on the geometry.
pub const FOUNDRY_RON: &str = include_str!("../../../assets/maps/foundry.ron");
pub const SPIRE_RON: &str = include_str!("../../../assets/maps/spire.ron");
pub const YARD_RON: &str = include_str!("../../../assets/maps/yard.ron");
/// Every built-in map: its name and its file; the first is the default.
pub const BUILT_IN_MAPS: [(&str, &str); 3] = [("Foundry", FOUNDRY_RON), ("Spire", SPIRE_RON), ("Yard", YARD_RON)];

/// Highest rise of one stair step the map may use, metres. Must stay below the
/// movement code's step height so stairs are walkable.
pub const MAX_STAIR_STEP_M: f32 = 0.42;
/// Thickness of a ramp slab, metres.
pub const RAMP_THICKNESS_M: f32 = 0.4;

/// Which material a solid is drawn with. Gameplay ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SurfaceKind {
    Floor,
    Wall,
    Platform,
    Cover,
    Pillar,
    Trim,
    Ramp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockDef {
    pub kind: SurfaceKind,
    pub center: Vec3,
    /// Full size along x, y, z, metres.
    pub size: Vec3,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RampDef {
    /// Middle of the low edge of the walking surface.
    pub bottom: Vec3,
    /// Middle of the high edge of the walking surface.
    pub top: Vec3,
    pub width: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StairsDef {
    pub bottom: Vec3,
    pub top: Vec3,
    pub width: f32,
    pub steps: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PillarDef {
    /// Centre of the bottom face.
    pub base: Vec3,
    pub radius: f32,
    pub height: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpawnPoint {
    /// Where the feet go.
    pub pos: Vec3,
    pub yaw_deg: f32,
}

impl SpawnPoint {
    pub fn yaw(&self) -> f32 {
        self.yaw_deg.to_radians()
    }
}

/// A named part of the map, for call-outs ("two in North Ramp"): a
/// rectangle on the ground plan, a colour the view marks it with, and where
/// its name is put up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AreaDef {
    pub name: String,
    /// The rectangle's smallest and largest x and z, metres.
    pub min: Vec2,
    pub max: Vec2,
    /// sRGB, each 0..1.
    pub color: Vec3,
    /// Signs with the name: each a point on a wall's face and the direction
    /// (yaw, degrees, as for spawns) the sign faces.
    #[serde(default)]
    pub signs: Vec<SignDef>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignDef {
    /// The sign's centre, metres.
    pub at: Vec3,
    pub yaw_deg: f32,
}

impl SignDef {
    /// The way the sign's face looks (horizontal, unit).
    pub fn facing(&self) -> Vec3 {
        let yaw = self.yaw_deg.to_radians();
        Vec3::new(-yaw.sin(), 0.0, -yaw.cos())
    }
}

/// An item standing on the floor, taken by touching it ([`crate::items`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ItemDef {
    pub kind: ItemKind,
    /// The point of the floor it stands on, metres.
    pub pos: Vec3,
}

/// A jump pad (Quake 3's `trigger_push`, `BG_TouchJumpPad`): a body
/// touching its box is given its launch velocity, in the shared movement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct JumpPadDef {
    /// Centre of the box that launches, metres.
    pub center: Vec3,
    /// Full size of that box, metres.
    pub size: Vec3,
    /// The velocity it gives, metres per second (up, and at most
    /// [`MAX_PAD_HORIZONTAL_MPS`] across).
    pub launch: Vec3,
}

/// A teleporter (Quake 3's `trigger_teleport`): a body touching its entry
/// box is put at the destination, facing its yaw, in one tick.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeleporterDef {
    /// Centre of the entry box, metres.
    pub center: Vec3,
    /// Full size of the entry box, metres.
    pub size: Vec3,
    /// Where the feet come out, metres.
    pub dest: Vec3,
    /// The way the player faces coming out, degrees (as for spawns).
    pub yaw_deg: f32,
    /// Speed coming out along that yaw, m/s; none keeps the speed it went in with.
    #[serde(default)]
    pub exit_speed_mps: Option<f32>,
}

impl TeleporterDef {
    pub fn yaw(&self) -> f32 {
        self.yaw_deg.to_radians()
    }
}

/// Fastest a jump pad may launch across, m/s (the movement's horizontal cap).
pub const MAX_PAD_HORIZONTAL_MPS: f32 = 20.0;
/// Fastest a jump pad may launch upwards, m/s (the movement's fastest fall).
pub const MAX_PAD_UP_MPS: f32 = 40.0;
/// Fastest a teleporter may send a player out, m/s.
pub const MAX_EXIT_SPEED_MPS: f32 = 20.0;
/// Largest side of a pad's or a teleporter's box, metres.
pub const MAX_TRIGGER_SIDE_M: f32 = 16.0;

/// Whether a standing body (an upright cylinder of [`PLAYER_RADIUS_M`])
/// with its feet at `feet` and `height_m` tall overlaps the box.
pub fn body_in_box(center: Vec3, size: Vec3, feet: Vec3, height_m: f32) -> bool {
    let half = size * 0.5;
    (feet.x - center.x).abs() <= half.x + PLAYER_RADIUS_M
        && (feet.z - center.z).abs() <= half.z + PLAYER_RADIUS_M
        && feet.y <= center.y + half.y
        && feet.y + height_m >= center.y - half.y
}

/// Longest area name, characters (it is painted on signs and shown on the HUD).
pub const MAX_AREA_NAME_CHARS: usize = 16;
/// Most signs an area may put up.
pub const MAX_SIGNS_PER_AREA: usize = 4;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapDef {
    pub name: String,
    pub blocks: Vec<BlockDef>,
    #[serde(default)]
    pub ramps: Vec<RampDef>,
    #[serde(default)]
    pub stairs: Vec<StairsDef>,
    #[serde(default)]
    pub pillars: Vec<PillarDef>,
    pub spawns: Vec<SpawnPoint>,
    /// Call-out areas; where they overlap, the first listed wins.
    #[serde(default)]
    pub areas: Vec<AreaDef>,
    #[serde(default)]
    pub items: Vec<ItemDef>,
    #[serde(default)]
    pub jump_pads: Vec<JumpPadDef>,
    #[serde(default)]
    pub teleporters: Vec<TeleporterDef>,
}

/// A piece of static geometry, ready for a collider or a mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Solid {
    pub kind: SurfaceKind,
    pub shape: SolidShape,
    /// Centre of the shape.
    pub center: Vec3,
    pub rotation: Quat,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SolidShape {
    Cuboid {
        half_extents: Vec3,
    },
    /// Vertical (along local Y) cylinder.
    Cylinder {
        radius: f32,
        half_height: f32,
    },
}

#[derive(Debug)]
pub enum MapError {
    Parse(String),
    Invalid(String),
}

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapError::Parse(e) => write!(f, "the map file does not parse: {e}"),
            MapError::Invalid(e) => write!(f, "the map is not playable: {e}"),
        }
    }
}

impl std::error::Error for MapError {}

impl MapDef {
    /// Parses and checks a map written in RON.
    pub fn from_ron(text: &str) -> Result<Self, MapError> {
        let map: MapDef = ron::from_str(text).map_err(|e| MapError::Parse(e.to_string()))?;
        map.validate()?;
        Ok(map)
    }

    /// The built-in map called `name` (any case).
    pub fn built_in(name: &str) -> Option<Self> {
        let (_, text) = BUILT_IN_MAPS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))?;
        Self::from_ron(text).ok()
    }

    /// The built-in maps' names, the default first.
    pub fn built_in_names() -> Vec<&'static str> {
        BUILT_IN_MAPS.iter().map(|(n, _)| *n).collect()
    }

    /// The first built-in map, the default.
    pub fn foundry() -> Self {
        // The built-in map is checked by a unit test, so this cannot fail in a
        // released build; fall back to a bare floor rather than panic anyway.
        Self::from_ron(FOUNDRY_RON).unwrap_or_else(|_| Self::fallback())
    }

    fn fallback() -> Self {
        MapDef {
            name: "Fallback".into(),
            blocks: vec![BlockDef {
                kind: SurfaceKind::Floor,
                center: Vec3::new(0.0, -0.5, 0.0),
                size: Vec3::new(60.0, 1.0, 60.0),
            }],
            ramps: vec![],
            stairs: vec![],
            pillars: vec![],
            spawns: vec![SpawnPoint { pos: Vec3::ZERO, yaw_deg: 0.0 }],
            areas: vec![],
            items: vec![],
            jump_pads: vec![],
            teleporters: vec![],
        }
    }

    pub fn validate(&self) -> Result<(), MapError> {
        let bad = |what: String| Err(MapError::Invalid(what));
        if self.spawns.is_empty() {
            return bad("it has no spawn points".into());
        }
        if self.blocks.is_empty() {
            return bad("it has no blocks (a floor is one)".into());
        }
        for (i, b) in self.blocks.iter().enumerate() {
            if !b.center.is_finite() || !b.size.is_finite() || b.size.min_element() <= 0.0 {
                return bad(format!("block {i} has a non-positive or non-finite size"));
            }
        }
        for (i, r) in self.ramps.iter().enumerate() {
            let d = r.top - r.bottom;
            if !d.is_finite() || r.width <= 0.0 || d.y <= 0.0 || Vec3::new(d.x, 0.0, d.z).length() < 0.5 {
                return bad(format!("ramp {i} must rise from bottom to top over some run"));
            }
        }
        for (i, s) in self.stairs.iter().enumerate() {
            let d = s.top - s.bottom;
            if s.steps == 0 || s.width <= 0.0 || d.y <= 0.0 || !d.is_finite() {
                return bad(format!("stairs {i} must rise from bottom to top in at least one step"));
            }
            if Vec3::new(d.x, 0.0, d.z).length() < 0.5 {
                return bad(format!("stairs {i} must run at least 0.5 m across as they rise"));
            }
            if d.y / s.steps as f32 > MAX_STAIR_STEP_M {
                return bad(format!(
                    "stairs {i} have {:.2} m steps; at most {MAX_STAIR_STEP_M} m can be walked up",
                    d.y / s.steps as f32
                ));
            }
        }
        for (i, p) in self.pillars.iter().enumerate() {
            if p.radius <= 0.0 || p.height <= 0.0 || !p.base.is_finite() {
                return bad(format!("pillar {i} has a non-positive size"));
            }
        }
        for (i, s) in self.spawns.iter().enumerate() {
            if !s.pos.is_finite() || !s.yaw_deg.is_finite() {
                return bad(format!("spawn {i} is not a finite position"));
            }
        }
        for (i, a) in self.areas.iter().enumerate() {
            let name_ok = !a.name.trim().is_empty()
                && a.name.chars().count() <= MAX_AREA_NAME_CHARS
                && a.name.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ');
            if !name_ok {
                return bad(format!("area {i}'s name must be 1 to {MAX_AREA_NAME_CHARS} letters, digits and spaces"));
            }
            if !(a.min.is_finite() && a.max.is_finite() && a.min.x < a.max.x && a.min.y < a.max.y) {
                return bad(format!("area {} ({i}) must have min below max", a.name));
            }
            if !a.color.is_finite() || a.color.min_element() < 0.0 || a.color.max_element() > 1.0 {
                return bad(format!("area {}'s colour must be three numbers from 0 to 1", a.name));
            }
            if a.signs.len() > MAX_SIGNS_PER_AREA || a.signs.iter().any(|s| !s.at.is_finite() || !s.yaw_deg.is_finite())
            {
                return bad(format!("area {} may have up to {MAX_SIGNS_PER_AREA} signs at finite places", a.name));
            }
        }
        for (i, item) in self.items.iter().enumerate() {
            if !item.pos.is_finite() {
                return bad(format!("item {i} ({}) is not at a finite position", item.kind.name()));
            }
        }
        let trigger = |center: Vec3, size: Vec3| {
            center.is_finite()
                && size.is_finite()
                && size.min_element() > 0.0
                && size.max_element() <= MAX_TRIGGER_SIDE_M
        };
        for (i, pad) in self.jump_pads.iter().enumerate() {
            if !trigger(pad.center, pad.size) {
                return bad(format!("jump pad {i}'s box must have sides above 0 and up to {MAX_TRIGGER_SIDE_M} m"));
            }
            let across = Vec2::new(pad.launch.x, pad.launch.z).length();
            if !pad.launch.is_finite() || pad.launch.y <= 0.0 || pad.launch.y > MAX_PAD_UP_MPS {
                return bad(format!("jump pad {i} must launch upwards at up to {MAX_PAD_UP_MPS} m/s"));
            }
            if across > MAX_PAD_HORIZONTAL_MPS {
                return bad(format!(
                    "jump pad {i} launches at {across:.1} m/s across; at most {MAX_PAD_HORIZONTAL_MPS} m/s"
                ));
            }
        }
        for (i, t) in self.teleporters.iter().enumerate() {
            if !trigger(t.center, t.size) {
                return bad(format!("teleporter {i}'s entry must have sides above 0 and up to {MAX_TRIGGER_SIDE_M} m"));
            }
            if !t.dest.is_finite() || !t.yaw_deg.is_finite() {
                return bad(format!("teleporter {i}'s destination is not a finite position and yaw"));
            }
            if t.exit_speed_mps.is_some_and(|v| !(0.0..=MAX_EXIT_SPEED_MPS).contains(&v)) {
                return bad(format!("teleporter {i}'s exit speed must be 0 to {MAX_EXIT_SPEED_MPS} m/s"));
            }
            let height = crate::player::STAND_HEIGHT_M;
            if body_in_box(t.center, t.size, t.dest, height) {
                return bad(format!(
                    "teleporter {i} sends a player only back into itself: its destination is inside its entry"
                ));
            }
            if let Some(j) = self.teleporters.iter().position(|o| body_in_box(o.center, o.size, t.dest, height)) {
                return bad(format!(
                    "teleporter {i}'s destination is inside teleporter {j}'s entry: a chain of teleporters can loop"
                ));
            }
        }
        Ok(())
    }

    /// The teleporter a body with its feet at `feet` is in, if any (the first listed).
    pub fn teleporter_at(&self, feet: Vec3, height_m: f32) -> Option<&TeleporterDef> {
        self.teleporters.iter().find(|t| body_in_box(t.center, t.size, feet, height_m))
    }

    /// The jump pad a body with its feet at `feet` is on, if any (the first listed).
    pub fn jump_pad_at(&self, feet: Vec3, height_m: f32) -> Option<&JumpPadDef> {
        self.jump_pads.iter().find(|p| body_in_box(p.center, p.size, feet, height_m))
    }

    /// The item `state` takes now, if any: of the items `available` says
    /// are there, the nearest it touches and may take ([`crate::items::can_grab`]).
    pub fn item_touched(&self, state: &PlayerState, available: impl Fn(usize) -> bool) -> Option<usize> {
        if !state.alive {
            return None;
        }
        self.items
            .iter()
            .enumerate()
            .filter(|(i, item)| {
                crate::items::touches(item.pos, state.pos, state.height())
                    && crate::items::can_grab(item.kind, state)
                    && available(*i)
            })
            .min_by(|a, b| a.1.pos.distance_squared(state.pos).total_cmp(&b.1.pos.distance_squared(state.pos)))
            .map(|(i, _)| i)
    }

    /// Every solid of the map: the one list that colliders and meshes are built from.
    pub fn solids(&self) -> Vec<Solid> {
        let mut solids = Vec::new();
        for b in &self.blocks {
            solids.push(Solid {
                kind: b.kind,
                shape: SolidShape::Cuboid { half_extents: b.size * 0.5 },
                center: b.center,
                rotation: Quat::IDENTITY,
            });
        }
        for r in &self.ramps {
            solids.push(ramp_solid(r));
        }
        for s in &self.stairs {
            solids.extend(stair_solids(s));
        }
        for p in &self.pillars {
            let half_height = p.height * 0.5;
            solids.push(Solid {
                kind: SurfaceKind::Pillar,
                shape: SolidShape::Cylinder { radius: p.radius, half_height },
                center: p.base + Vec3::Y * half_height,
                rotation: Quat::IDENTITY,
            });
        }
        solids
    }

    /// The call-out area `pos` is in, if any (the first listed that holds it).
    pub fn area_at(&self, pos: Vec3) -> Option<&AreaDef> {
        self.areas.iter().find(|a| (a.min.x..=a.max.x).contains(&pos.x) && (a.min.y..=a.max.y).contains(&pos.z))
    }

    /// Horizontal extent of the map: the smallest and largest x and z of any block.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        let mut min = Vec3::splat(f32::MAX);
        let mut max = Vec3::splat(f32::MIN);
        for b in &self.blocks {
            min = min.min(b.center - b.size * 0.5);
            max = max.max(b.center + b.size * 0.5);
        }
        (min, max)
    }
}

/// A slab whose top face runs from `bottom` to `top`.
fn ramp_solid(r: &RampDef) -> Solid {
    let along = (r.top - r.bottom).normalize();
    let across = along.cross(Vec3::Y).normalize();
    let up = across.cross(along).normalize();
    let length = (r.top - r.bottom).length();
    let rotation = Quat::from_mat3(&glam::Mat3::from_cols(along, up, across));
    let center = (r.top + r.bottom) * 0.5 - up * (RAMP_THICKNESS_M * 0.5);
    Solid {
        kind: SurfaceKind::Ramp,
        shape: SolidShape::Cuboid { half_extents: Vec3::new(length * 0.5, RAMP_THICKNESS_M * 0.5, r.width * 0.5) },
        center,
        rotation,
    }
}

/// Solid steps, each a box from the lower floor up to its tread.
fn stair_solids(s: &StairsDef) -> Vec<Solid> {
    let run = Vec3::new(s.top.x - s.bottom.x, 0.0, s.top.z - s.bottom.z);
    let dir = run.normalize();
    let yaw = crate::player::yaw_towards(dir);
    let rotation = Quat::from_rotation_y(yaw);
    let steps = s.steps as f32;
    let rise = (s.top.y - s.bottom.y) / steps;
    let tread = run.length() / steps;
    (0..s.steps)
        .map(|i| {
            let height = rise * (i as f32 + 1.0);
            let along = tread * (i as f32 + 0.5);
            let center = s.bottom + dir * along + Vec3::Y * (height * 0.5);
            Solid {
                kind: SurfaceKind::Ramp,
                shape: SolidShape::Cuboid {
                    // Local -Z is the climbing direction after the yaw rotation.
                    half_extents: Vec3::new(s.width * 0.5, height * 0.5, tread * 0.5),
                },
                center,
                rotation,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_map_loads_under_its_name() {
        for (name, _) in BUILT_IN_MAPS {
            let map = MapDef::built_in(&name.to_lowercase()).expect(name);
            assert_eq!(map.name, name);
        }
        assert!(MapDef::built_in("nowhere").is_none());
    }

    #[test]
    fn builtin_map_parses_and_is_playable() {
        let map = MapDef::from_ron(FOUNDRY_RON).expect("foundry.ron");
        assert!(map.spawns.len() >= 8, "at least 8 spawn points");
        assert!(map.ramps.len() + map.stairs.len() >= 2, "platforms are reachable");
        let (min, max) = map.bounds();
        let across = (max - min).max_element();
        assert!((50.0..=70.0).contains(&across), "map is {across} m across");
    }

    #[test]
    fn every_place_on_the_builtin_map_has_one_call_out_name() {
        let map = MapDef::from_ron(FOUNDRY_RON).expect("foundry.ron");
        assert!(map.areas.len() >= 8, "{} areas", map.areas.len());
        // Every spawn, and a grid over the whole floor, is in exactly one area.
        for spawn in &map.spawns {
            assert!(map.area_at(spawn.pos).is_some(), "spawn at {} has no area", spawn.pos);
        }
        for x in -29..=29 {
            for z in -29..=29 {
                let p = Vec3::new(x as f32 + 0.5, 0.0, z as f32 + 0.5);
                let holding = map.areas.iter().filter(|a| map.area_at(p) == Some(*a)).count();
                let overlapping = map
                    .areas
                    .iter()
                    .filter(|a| a.min.x < p.x && p.x < a.max.x && a.min.y < p.z && p.z < a.max.y)
                    .count();
                assert_eq!((holding, overlapping), (1, 1), "{p}: {holding} areas hold it, {overlapping} overlap");
            }
        }
        // Names differ, and every area puts its name up somewhere.
        let names: std::collections::HashSet<&str> = map.areas.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names.len(), map.areas.len());
        assert!(map.areas.iter().all(|a| !a.signs.is_empty()), "an area without a sign");
        assert_eq!(map.area_at(Vec3::new(0.0, 3.0, -25.0)).map(|a| a.name.as_str()), Some("North Deck"));
    }

    #[test]
    fn bad_areas_are_refused_by_name() {
        let mut map = MapDef::foundry();
        map.areas[0].name = "<script>".into();
        assert!(matches!(map.validate(), Err(MapError::Invalid(e)) if e.contains("letters")));
        let mut map = MapDef::foundry();
        map.areas[0].max = map.areas[0].min;
        assert!(matches!(map.validate(), Err(MapError::Invalid(e)) if e.contains("min below max")));
        let mut map = MapDef::foundry();
        map.areas[0].color = Vec3::new(2.0, 0.0, f32::NAN);
        assert!(matches!(map.validate(), Err(MapError::Invalid(e)) if e.contains("colour")));
    }

    #[test]
    fn ramp_top_face_meets_its_end_points() {
        let r = RampDef { bottom: Vec3::new(10.0, 0.0, 0.0), top: Vec3::new(0.0, 3.0, 0.0), width: 4.0 };
        let s = ramp_solid(&r);
        let SolidShape::Cuboid { half_extents } = s.shape else { unreachable!() };
        let top_bottom_end = s.center + s.rotation * Vec3::new(-half_extents.x, half_extents.y, 0.0);
        let top_top_end = s.center + s.rotation * Vec3::new(half_extents.x, half_extents.y, 0.0);
        assert!(top_bottom_end.distance(r.bottom) < 1e-4, "{top_bottom_end}");
        assert!(top_top_end.distance(r.top) < 1e-4, "{top_top_end}");
    }

    #[test]
    fn bad_maps_are_reported_not_panicked() {
        assert!(matches!(MapDef::from_ron("("), Err(MapError::Parse(_))));
        let steep = FOUNDRY_RON.replace("steps: 8", "steps: 2");
        assert!(matches!(MapDef::from_ron(&steep), Err(MapError::Invalid(_))));
    }
}
