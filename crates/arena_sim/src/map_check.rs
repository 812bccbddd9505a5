//! `arena map check`: whether a map file is one a server may run and a
//! client may load, said in words. First what costs nothing (the file's
//! size, the numbers' bounds and counts, before any world is built from
//! them: a map with 10^6 blocks or a block 10^9 m long is refused here),
//! then [`MapDef::validate`]'s rules (steps, names, sizes), then what takes
//! the collision world: spawns inside geometry or in the air, and the
//! navigation graph the bots walk (islands of it, and spawns that cannot
//! reach one another). The built-in maps pass; CI runs it on every map in
//! `assets/maps`.

use glam::Vec3;

use crate::map::{MapDef, MapError};
use crate::nav::NavGraph;
use crate::player::STAND_HEIGHT_M;
use crate::world::ArenaWorld;

/// Largest map file, bytes.
pub const MAX_MAP_BYTES: usize = 256 * 1024;
/// Farthest any point of a map may be from the origin on each axis, metres.
pub const MAX_EXTENT_M: f32 = 500.0;
/// Widest a map's blocks may span, metres (the bots' navigation grid covers it).
pub const MAX_SPAN_M: f32 = crate::nav::MAX_GRID_SPAN_M;
/// Most blocks, and most ramps, stairs and pillars, a map may have.
pub const MAX_BLOCKS: usize = 2048;
pub const MAX_SHAPES: usize = 512;
/// Most steps one flight of stairs may have.
pub const MAX_STEPS: u32 = 64;
/// Most spawn points and call-out areas.
pub const MAX_SPAWNS: usize = 64;
pub const MAX_AREAS: usize = 64;
/// Longest map name, characters.
pub const MAX_MAP_NAME_CHARS: usize = 32;
/// Highest a spawn may stand above the ground under it, metres (a spawn in
/// the air drops its player).
const MAX_SPAWN_DROP_M: f32 = 0.6;
/// Farthest a spawn may stand from its nearest navigation spot, metres
/// (the grid's spacing: a spawn farther is on ground the graph missed).
const MAX_SPAWN_TO_SPOT_M: f32 = 2.0;
/// A navigation island smaller than this many spots is a ledge or a crate
/// top, not a part of the map a player is cut off in.
const ISLAND_SPOTS: usize = 8;

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// What makes the map unplayable: each a sentence.
    pub errors: Vec<String>,
    /// What is odd but playable.
    pub warnings: Vec<String>,
    /// Standing spots of the bots' navigation graph (0 if it was not built).
    pub nav_spots: usize,
}

impl Checked {
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Checks a map file's text: its size, then the map in it ([`check`]).
pub fn check_text(text: &str) -> (Option<MapDef>, Checked) {
    if text.len() > MAX_MAP_BYTES {
        let error = format!("the file is {} bytes; a map is at most {MAX_MAP_BYTES}", text.len());
        return (None, Checked { errors: vec![error], ..Checked::default() });
    }
    let map: MapDef = match ron::from_str(text) {
        Ok(map) => map,
        Err(e) => {
            return (None, Checked { errors: vec![MapError::Parse(e.to_string()).to_string()], ..Checked::default() });
        }
    };
    let checked = check(&map);
    (Some(map), checked)
}

/// Checks a map: bounds and counts first, then its rules, then what its
/// collision world and navigation graph say.
pub fn check(map: &MapDef) -> Checked {
    let mut checked = Checked { errors: check_numbers(map), ..Checked::default() };
    if !checked.errors.is_empty() {
        // Nothing is built from numbers out of bounds.
        return checked;
    }
    let world = ArenaWorld::new(map.clone());
    for (i, spawn) in map.spawns.iter().enumerate() {
        if !world.player_fits(spawn.pos, STAND_HEIGHT_M) {
            checked.errors.push(format!("spawn {i} at {} is inside geometry: a player there is stuck", at(spawn.pos)));
            continue;
        }
        let from = spawn.pos + Vec3::Y * 0.1;
        match world.cast_ray(from, Vec3::NEG_Y, MAX_EXTENT_M * 2.0) {
            Some(drop) if drop - 0.1 <= MAX_SPAWN_DROP_M => {}
            Some(drop) => checked.errors.push(format!(
                "spawn {i} at {} is {:.1} m above the ground (at most {MAX_SPAWN_DROP_M})",
                at(spawn.pos),
                drop - 0.1
            )),
            None => checked.errors.push(format!("spawn {i} at {} has no ground under it", at(spawn.pos))),
        }
        if map
            .areas
            .iter()
            .all(|a| !((a.min.x..=a.max.x).contains(&spawn.pos.x) && (a.min.y..=a.max.y).contains(&spawn.pos.z)))
            && !map.areas.is_empty()
        {
            checked.warnings.push(format!("spawn {i} at {} is in no call-out area", at(spawn.pos)));
        }
    }
    if !checked.errors.is_empty() {
        return checked;
    }
    navigation(map, &world, &mut checked);
    checked
}

/// What a map's numbers alone say, building nothing: counts and bounds,
/// then [`MapDef::validate`]'s rules (the parser's fuzz target runs this).
pub fn check_numbers(map: &MapDef) -> Vec<String> {
    let mut errors = Vec::new();
    bounds(map, &mut errors);
    if errors.is_empty()
        && let Err(MapError::Invalid(why) | MapError::Parse(why)) = map.validate()
    {
        errors.push(why);
    }
    errors
}

/// Every number within [`MAX_EXTENT_M`], every count within its cap.
fn bounds(map: &MapDef, errors: &mut Vec<String>) {
    let counts = [
        ("blocks", map.blocks.len(), MAX_BLOCKS),
        ("ramps", map.ramps.len(), MAX_SHAPES),
        ("stairs", map.stairs.len(), MAX_SHAPES),
        ("pillars", map.pillars.len(), MAX_SHAPES),
        ("spawns", map.spawns.len(), MAX_SPAWNS),
        ("areas", map.areas.len(), MAX_AREAS),
    ];
    for (what, n, max) in counts {
        if n > max {
            errors.push(format!("{n} {what}: a map has at most {max}"));
        }
    }
    if !errors.is_empty() {
        return;
    }
    if map.name.trim().is_empty() || map.name.chars().count() > MAX_MAP_NAME_CHARS {
        errors.push(format!("the map's name must be 1 to {MAX_MAP_NAME_CHARS} characters"));
    }
    let point = |p: Vec3| p.is_finite() && p.abs().max_element() <= MAX_EXTENT_M;
    let length = |v: f32| v.is_finite() && v.abs() <= MAX_EXTENT_M * 2.0;
    let mut bad = |what: String| errors.push(format!("{what}: numbers must be finite and within {MAX_EXTENT_M} m"));
    for (i, b) in map.blocks.iter().enumerate() {
        if !(point(b.center) && length(b.size.x) && length(b.size.y) && length(b.size.z)) {
            bad(format!("block {i}"));
        }
    }
    for (i, r) in map.ramps.iter().enumerate() {
        if !point(r.bottom) || !point(r.top) || !length(r.width) {
            bad(format!("ramp {i}"));
        }
    }
    for (i, s) in map.stairs.iter().enumerate() {
        if !point(s.bottom) || !point(s.top) || !length(s.width) {
            bad(format!("stairs {i}"));
        }
    }
    for (i, p) in map.pillars.iter().enumerate() {
        if !point(p.base) || !length(p.radius) || !length(p.height) {
            bad(format!("pillar {i}"));
        }
    }
    for (i, s) in map.spawns.iter().enumerate() {
        if !point(s.pos) || !s.yaw_deg.is_finite() {
            bad(format!("spawn {i}"));
        }
    }
    for a in &map.areas {
        let corner = |v: glam::Vec2| v.is_finite() && v.abs().max_element() <= MAX_EXTENT_M;
        if !corner(a.min) || !corner(a.max) || a.signs.iter().any(|s| !point(s.at)) {
            bad(format!("area {}", a.name.chars().take(20).collect::<String>()));
        }
    }
    for (i, s) in map.stairs.iter().enumerate() {
        if s.steps > MAX_STEPS {
            errors.push(format!("stairs {i} have {} steps (at most {MAX_STEPS})", s.steps));
        }
    }
    if errors.is_empty() && !map.blocks.is_empty() {
        let (min, max) = map.bounds();
        let span = (max - min).max_element();
        if span > MAX_SPAN_M {
            errors.push(format!("the map's blocks span {span:.0} m; a map spans at most {MAX_SPAN_M} m"));
        }
    }
}

/// The bots' navigation graph: islands, and spawns that cannot reach each other.
fn navigation(map: &MapDef, world: &ArenaWorld, checked: &mut Checked) {
    let nav = NavGraph::build(world);
    checked.nav_spots = nav.nodes.len();
    if nav.nodes.is_empty() {
        checked.errors.push("the bots' navigation graph is empty: no floor a player can stand on".into());
        return;
    }
    // Islands: spots linked either way.
    let mut either: Vec<Vec<usize>> = nav.links.clone();
    for (from, links) in nav.links.iter().enumerate() {
        for &to in links {
            either[to].push(from);
        }
    }
    let mut island = vec![usize::MAX; nav.nodes.len()];
    let mut sizes = Vec::new();
    for start in 0..nav.nodes.len() {
        if island[start] != usize::MAX {
            continue;
        }
        let id = sizes.len();
        let mut stack = vec![start];
        island[start] = id;
        let mut size = 0;
        while let Some(at) = stack.pop() {
            size += 1;
            for &next in &either[at] {
                if island[next] == usize::MAX {
                    island[next] = id;
                    stack.push(next);
                }
            }
        }
        sizes.push(size);
    }
    let (main, largest) = sizes.iter().copied().enumerate().max_by_key(|(_, n)| *n).unwrap_or((0, 0));
    for (id, size) in sizes.iter().enumerate() {
        if *size >= ISLAND_SPOTS && id != main {
            let spot = island.iter().position(|&i| i == id).map_or(Vec3::ZERO, |n| nav.nodes[n]);
            checked.errors.push(format!(
                "a navigation island of {size} spots near {} cannot be walked to or from the rest ({largest} spots)",
                at(spot)
            ));
        }
    }
    // Every spawn reaches every other along the links (ledges go one way).
    let spots: Vec<Option<usize>> = map.spawns.iter().map(|s| nav.nearest(s.pos)).collect();
    for (i, (spawn, spot)) in map.spawns.iter().zip(&spots).enumerate() {
        let Some(spot) = spot else { continue };
        let d = nav.nodes[*spot] - spawn.pos;
        if Vec3::new(d.x, 0.0, d.z).length() > MAX_SPAWN_TO_SPOT_M || d.y.abs() > 1.0 {
            checked.errors.push(format!(
                "spawn {i} at {} is on no walkable ground the bots know (the nearest spot is {:.1} m away)",
                at(spawn.pos),
                d.length()
            ));
        }
    }
    let Some(Some(first)) = spots.first().copied() else { return };
    for (i, spot) in spots.iter().enumerate().skip(1) {
        let Some(spot) = *spot else { continue };
        let there = nav.path(first, spot).is_some();
        let back = nav.path(spot, first).is_some();
        if !there || !back {
            checked.errors.push(format!(
                "spawn {i} at {} cannot {} spawn 0: a player there is cut off",
                at(map.spawns[i].pos),
                if there { "walk back to" } else { "be walked to from" }
            ));
        }
    }
}

fn at(p: Vec3) -> String {
    format!("({:.1}, {:.1}, {:.1})", p.x, p.y, p.z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_map_passes() {
        let (map, checked) = check_text(crate::map::FOUNDRY_RON);
        assert!(map.is_some());
        assert!(checked.ok(), "{:?}", checked.errors);
        assert!(checked.nav_spots > 100);
    }

    /// Foundry with `edit` applied to its text.
    fn foundry_with(edit: impl Fn(&str) -> String) -> Checked {
        check_text(&edit(crate::map::FOUNDRY_RON)).1
    }

    #[test]
    fn absurd_numbers_are_refused_before_anything_is_built() {
        let checked = foundry_with(|t| t.replacen("center: (0.0, -0.5, 0.0)", "center: (0.0, -0.5, 1000000000.0)", 1));
        assert!(
            checked.errors.iter().any(|e| e.starts_with("block 0: numbers must be finite")),
            "{:?}",
            checked.errors
        );
        let checked = foundry_with(|t| t.replacen("center: (0.0, -0.5, 0.0)", "center: (NaN, -0.5, 0.0)", 1));
        assert!(!checked.ok());
        let many = format!(
            "(name: \"Many\", blocks: [{}], spawns: [(pos: (0.0, 0.0, 0.0), yaw_deg: 0.0)])",
            "(kind: Floor, center: (0.0, -0.5, 0.0), size: (1.0, 1.0, 1.0)),".repeat(MAX_BLOCKS + 1)
        );
        let (_, checked) = check_text(&many);
        assert_eq!(checked.errors, vec![format!("{} blocks: a map has at most {MAX_BLOCKS}", MAX_BLOCKS + 1)]);
        let (_, checked) = check_text(&" ".repeat(MAX_MAP_BYTES + 1));
        assert!(checked.errors[0].contains("a map is at most"));
        // No blocks at all (the grid would have no bounds), stairs that only rise.
        let (_, checked) = check_text(
            "(name: \"P\", blocks: [], pillars: [(base: (0.0, 0.0, 0.0), radius: 3.0, height: 1.0)], \
             spawns: [(pos: (0.0, 1.0, 0.0), yaw_deg: 0.0)])",
        );
        assert_eq!(checked.errors, vec!["it has no blocks (a floor is one)".to_string()]);
        let checked = foundry_with(|t| {
            t.replacen(
                "stairs: [",
                "stairs: [(bottom: (0.0, 0.0, 0.0), top: (0.0, 0.4, 0.0), width: 1.0, steps: 1),",
                1,
            )
        });
        assert!(checked.errors.iter().any(|e| e.contains("must run at least 0.5 m")), "{:?}", checked.errors);
        let checked = foundry_with(|t| t.replacen("size: (62.0, 1.0, 62.0)", "size: (900.0, 1.0, 62.0)", 1));
        assert!(checked.errors.iter().any(|e| e.contains("a map spans at most 256")), "{:?}", checked.errors);
    }
}
