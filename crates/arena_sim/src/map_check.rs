//! `arena map check`: whether a map file is one a server may run and a
//! client may load, said in words. First what costs nothing (the file's
//! size, the numbers' bounds and counts, before any world is built from
//! them: a map with 10^6 blocks or a block 10^9 m long is refused here),
//! then [`MapDef::validate`]'s rules (steps, names, sizes), then what takes
//! the collision world: spawns inside geometry or in the air, and the
//! navigation graph the bots walk (islands of it, and spawns that cannot
//! reach one another), items, jump pads and teleporters (inside geometry,
//! over nothing, an arc into a wall or off the map, a destination in a wall
//! or facing one, a teleporter back into itself). The built-in maps pass;
//! CI runs it on every map in `assets/maps`.

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
/// Most items, jump pads and teleporters.
pub const MAX_ITEMS: usize = 64;
pub const MAX_JUMP_PADS: usize = 32;
pub const MAX_TELEPORTERS: usize = 32;
/// Nearest a teleporter's exit may face a wall, metres.
const MIN_EXIT_CLEARANCE_M: f32 = 1.0;
/// Highest an item may stand above the floor under it, metres.
const MAX_ITEM_DROP_M: f32 = 0.6;
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
    triggers_and_items(map, &world, &mut checked);
    if !checked.errors.is_empty() {
        return checked;
    }
    navigation(map, &world, &mut checked);
    checked
}

/// Items, jump pads and teleporters where a player can use them: none
/// inside geometry or over nothing, every pad's arc coming down on a floor,
/// every teleporter's exit free, on ground and not facing a wall.
fn triggers_and_items(map: &MapDef, world: &ArenaWorld, checked: &mut Checked) {
    let ground_below = |p: Vec3| world.cast_ray(p + Vec3::Y * 0.1, Vec3::NEG_Y, MAX_EXTENT_M * 2.0).map(|d| d - 0.1);
    for (i, item) in map.items.iter().enumerate() {
        let name = item.kind.name();
        if !world.player_fits(item.pos, crate::items::PICKUP_HEIGHT_M) {
            checked
                .errors
                .push(format!("item {i} ({name}) at {} is inside geometry: nobody can take it", at(item.pos)));
            continue;
        }
        if let Some(t) = map
            .teleporters
            .iter()
            .position(|t| crate::map::body_in_box(t.center, t.size, item.pos, crate::items::PICKUP_HEIGHT_M))
        {
            checked.errors.push(format!(
                "item {i} ({name}) at {} is inside teleporter {t}'s entry: whoever reaches it is sent away first",
                at(item.pos)
            ));
            continue;
        }
        match ground_below(item.pos) {
            Some(drop) if drop <= MAX_ITEM_DROP_M => {}
            Some(drop) => checked.errors.push(format!(
                "item {i} ({name}) at {} floats {drop:.1} m above the ground (at most {MAX_ITEM_DROP_M})",
                at(item.pos)
            )),
            None => checked.errors.push(format!("item {i} ({name}) at {} is over nothing", at(item.pos))),
        }
    }
    for (i, pad) in map.jump_pads.iter().enumerate() {
        let top = pad.center + Vec3::Y * (pad.size.y * 0.5);
        let floor = world.cast_ray(top, Vec3::NEG_Y, pad.size.y + 1.0).map(|d| top - Vec3::Y * d);
        let Some(feet) = floor else {
            checked.errors.push(format!("jump pad {i} at {} is over nothing", at(pad.center)));
            continue;
        };
        if !world.player_fits(feet, STAND_HEIGHT_M) {
            checked.errors.push(format!("jump pad {i} at {} is inside geometry", at(pad.center)));
            continue;
        }
        let (min, max) = map.bounds();
        match crate::nav::pad_flight(world, pad) {
            Ok(flight) if (min.x..=max.x).contains(&flight.landed.x) && (min.z..=max.z).contains(&flight.landed.z) => {}
            Ok(flight) => checked.errors.push(format!("jump pad {i}'s arc ends off the map, at {}", at(flight.landed))),
            Err(crate::nav::FlightFault::Wall(hit)) => {
                checked.errors.push(format!("jump pad {i}'s arc ends in a wall at {}", at(hit)))
            }
            Err(crate::nav::FlightFault::Nowhere) => {
                checked.errors.push(format!("jump pad {i}'s arc ends off the map: it never comes down on a floor"))
            }
        }
    }
    for (i, t) in map.teleporters.iter().enumerate() {
        if !world.player_fits(t.dest, STAND_HEIGHT_M) {
            checked.errors.push(format!("teleporter {i}'s destination {} is inside geometry", at(t.dest)));
            continue;
        }
        match ground_below(t.dest) {
            Some(_) => {}
            None => checked.errors.push(format!("teleporter {i}'s destination {} is over nothing", at(t.dest))),
        }
        let eye = t.dest + Vec3::Y * crate::player::STAND_EYE_M;
        let ahead = crate::player::view_forward(t.yaw(), 0.0);
        if let Some(d) = world.cast_ray(eye, ahead, MIN_EXIT_CLEARANCE_M) {
            checked.errors.push(format!(
                "teleporter {i}'s destination {} faces a wall {d:.1} m away (at least {MIN_EXIT_CLEARANCE_M} m)",
                at(t.dest)
            ));
        }
        let top = t.center + Vec3::Y * (t.size.y * 0.5);
        if world.cast_ray(top, Vec3::NEG_Y, t.size.y + 1.0).is_none() {
            checked.errors.push(format!("teleporter {i}'s entry at {} is over nothing", at(t.center)));
        }
    }
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
        ("items", map.items.len(), MAX_ITEMS),
        ("jump pads", map.jump_pads.len(), MAX_JUMP_PADS),
        ("teleporters", map.teleporters.len(), MAX_TELEPORTERS),
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
    for (i, item) in map.items.iter().enumerate() {
        if !point(item.pos) {
            bad(format!("item {i}"));
        }
    }
    for (i, p) in map.jump_pads.iter().enumerate() {
        if !point(p.center) || !point(p.launch) || !point(p.size) {
            bad(format!("jump pad {i}"));
        }
    }
    for (i, t) in map.teleporters.iter().enumerate() {
        if !point(t.center) || !point(t.size) || !point(t.dest) || !t.yaw_deg.is_finite() {
            bad(format!("teleporter {i}"));
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
    fn every_built_in_map_passes() {
        for (name, text) in crate::map::BUILT_IN_MAPS {
            let (map, checked) = check_text(text);
            assert_eq!(map.map(|m| m.name), Some(name.to_string()));
            assert!(checked.ok(), "{name}: {:#?}", checked.errors);
            assert!(checked.warnings.is_empty(), "{name}: {:#?}", checked.warnings);
            assert!(checked.nav_spots > 100, "{name}: {} spots", checked.nav_spots);
        }
    }

    /// How many items of `kind` the map has.
    fn count(map: &MapDef, kind: crate::items::ItemKind) -> usize {
        map.items.iter().filter(|i| i.kind == kind).count()
    }

    #[test]
    fn built_in_items_stand_on_a_floor_clear_of_walls() {
        use crate::items::ItemKind;
        for (name, text) in crate::map::BUILT_IN_MAPS {
            let map = MapDef::from_ron(text).expect(name);
            let world = ArenaWorld::new(map.clone());
            for item in &map.items {
                let what = format!("{name}: {} at {}", item.kind.name(), item.pos);
                let under = world.cast_ray(item.pos + Vec3::Y * 0.1, Vec3::NEG_Y, 1.0);
                assert!(under.is_some_and(|d| (d - 0.1).abs() < 0.02), "{what} is not on a floor: {under:?}");
                // Nothing within 0.5 m of it, all round, up its metre of height.
                for height in [0.1, 0.5, 0.9] {
                    for k in 0..16 {
                        let angle = k as f32 * std::f32::consts::TAU / 16.0;
                        let dir = Vec3::new(angle.cos(), 0.0, angle.sin());
                        let hit = world.cast_ray(item.pos + Vec3::Y * height, dir, 0.5);
                        assert!(hit.is_none(), "{what} has a wall {hit:?} m away towards {dir}");
                    }
                }
            }
            for prize in [ItemKind::MegaHealth, ItemKind::RedArmour] {
                assert_eq!(count(&map, prize), 1, "{name}: one {}", prize.name());
            }
            let quads = if name == "Foundry" { 0 } else { 1 };
            assert_eq!(count(&map, ItemKind::QuadDamage), quads, "{name}'s quads");
            assert!(count(&map, ItemKind::Health) + count(&map, ItemKind::LargeHealth) >= 4, "{name}: health");
        }
    }

    #[test]
    fn yard_is_slabs_over_the_void_joined_by_pads_and_teleporters() {
        let map = MapDef::from_ron(crate::map::YARD_RON).expect("yard.ron");
        assert!(map.jump_pads.len() >= 2, "{} jump pads", map.jump_pads.len());
        assert!(map.teleporters.len() >= 2, "{} teleporters", map.teleporters.len());
        assert!(!map.items.is_empty());
        assert!(map.spawns.len() >= 8, "{} spawns", map.spawns.len());
        let (min, max) = map.bounds();
        let across = (max - min).max_element();
        assert!((60.0..=90.0).contains(&across), "Yard is {across} m across");
        let world = ArenaWorld::new(map.clone());
        // Nothing under the gaps: straight down between the Deck and the
        // North Isle, or the Deck and the East Perch, falls out of the world.
        for gap in [Vec3::new(0.0, 20.0, -17.0), Vec3::new(18.0, 20.0, 0.0)] {
            assert_eq!(world.cast_ray(gap, Vec3::NEG_Y, 100.0), None, "a floor under {gap}");
        }
        // Every pad's arc comes down on a slab, none on a pad.
        for (i, pad) in map.jump_pads.iter().enumerate() {
            let flight = crate::nav::pad_flight(&world, pad).unwrap_or_else(|e| panic!("pad {i}: {e:?}"));
            assert!(map.jump_pad_at(flight.landed, STAND_HEIGHT_M).is_none(), "pad {i} lands on a pad");
            assert!(world.cast_ray(flight.landed + Vec3::Y * 0.1, Vec3::NEG_Y, 0.5).is_some(), "pad {i}");
        }
        // Every spawn has a call-out name.
        for spawn in &map.spawns {
            assert!(map.area_at(spawn.pos).is_some(), "spawn at {} has no area", spawn.pos);
        }
    }

    /// The broken maps in `tests/maps` that items, jump pads and
    /// teleporters brought: each refused with one error, the sentence that
    /// says what is wrong (the parser's list of kinds follows it for the
    /// unknown item). tests/map_check.rs runs the same files through `arena
    /// map check`.
    #[test]
    fn broken_maps_say_what_is_wrong() {
        macro_rules! broken {
            ($file:literal, $says:literal) => {
                ($file, include_str!(concat!("../../../tests/maps/", $file)), $says)
            };
        }
        for (file, text, says) in [
            broken!(
                "item_in_wall.ron",
                "item 0 (Mega Health) at (4.0, 0.0, 0.0) is inside geometry: nobody can take it"
            ),
            broken!("item_over_nothing.ron", "item 0 (Health) at (14.0, 0.0, 0.0) is over nothing"),
            broken!("pad_into_wall.ron", "jump pad 0's arc ends in a wall at (5.6, 2.5, 0.0)"),
            broken!("pad_off_map.ron", "jump pad 0's arc ends off the map: it never comes down on a floor"),
            broken!("teleport_into_wall.ron", "teleporter 0's destination (-6.0, 0.0, 0.0) is inside geometry"),
            broken!(
                "teleport_facing_wall.ron",
                "teleporter 0's destination (0.0, 0.0, -8.4) faces a wall 0.6 m away (at least 1 m)"
            ),
            broken!(
                "teleport_into_itself.ron",
                "teleporter 0 sends a player only back into itself: its destination is inside its entry"
            ),
            broken!(
                "teleport_loop.ron",
                "teleporter 0's destination is inside teleporter 1's entry: a chain of teleporters can loop"
            ),
            broken!("pad_nan.ron", "jump pad 0: numbers must be finite and within 500 m"),
            broken!(
                "unknown_item.ron",
                "the map file does not parse: 7:20-7:34: Unexpected variant named `Rocketlauncher` in enum `ItemKind`"
            ),
            broken!("thousand_items.ron", "1000 items: a map has at most 64"),
        ] {
            let (_, checked) = check_text(text);
            assert!(
                checked.errors.len() == 1 && checked.errors[0].starts_with(says),
                "{file} does not say \"{says}\" alone: {:#?}",
                checked.errors
            );
        }
    }

    /// Foundry with `edit` applied to its text.
    fn foundry_with(edit: impl Fn(&str) -> String) -> Checked {
        check_text(&edit(crate::map::FOUNDRY_RON)).1
    }

    /// The other faults of items, jump pads and teleporters, each on a
    /// bare 20 m floor: each refused with one error, its sentence.
    #[test]
    fn bad_items_pads_and_teleporters_say_what_is_wrong() {
        let small = |extra: &str| {
            let text = format!(
                "(name: \"Small\", blocks: [(kind: Floor, center: (0.0, -0.5, 0.0), size: (20.0, 1.0, 20.0)), \
                 (kind: Cover, center: (-6.0, 1.0, -6.0), size: (4.0, 0.5, 4.0))], \
                 spawns: [(pos: (-5.0, 0.0, 5.0), yaw_deg: 0.0)], {extra})"
            );
            check_text(&text).1.errors
        };
        let pad = |center: &str, size: &str, launch: &str| {
            small(&format!("jump_pads: [(center: {center}, size: {size}, launch: {launch})]"))
        };
        let teleporter = |center: &str, size: &str, dest: &str, exit: &str| {
            small(&format!(
                "teleporters: [(center: {center}, size: {size}, dest: {dest}, yaw_deg: 0.0, exit_speed_mps: {exit})]"
            ))
        };
        let (floor, box_, up) = ("(0.0, 0.1, 0.0)", "(2.0, 0.2, 2.0)", "(0.0, 10.0, 0.0)");
        let entry = ("(5.0, 1.25, 0.0)", "(1.0, 2.5, 2.0)");
        for (errors, says) in [
            (pad(floor, "(0.0, 0.2, 2.0)", up), "jump pad 0's box must have sides above 0 and up to 16 m"),
            (pad(floor, box_, "(0.0, -1.0, 0.0)"), "jump pad 0 must launch upwards at up to 40 m/s"),
            (pad(floor, box_, "(25.0, 10.0, 0.0)"), "jump pad 0 launches at 25.0 m/s across; at most 20 m/s"),
            (pad("(0.0, 3.0, 0.0)", box_, up), "jump pad 0 at (0.0, 3.0, 0.0) is over nothing"),
            (pad("(-6.0, 0.1, -6.0)", box_, up), "jump pad 0 at (-6.0, 0.1, -6.0) is inside geometry"),
            (
                teleporter(entry.0, entry.1, "(0.0, 0.0, -5.0)", "Some(30.0)"),
                "teleporter 0's exit speed must be 0 to 20 m/s",
            ),
            (
                teleporter(entry.0, entry.1, "(0.0, 0.0, 40.0)", "None"),
                "teleporter 0's destination (0.0, 0.0, 40.0) is over nothing",
            ),
            (
                teleporter("(0.0, 5.0, 0.0)", "(2.0, 2.0, 2.0)", "(5.0, 0.0, 5.0)", "None"),
                "teleporter 0's entry at (0.0, 5.0, 0.0) is over nothing",
            ),
            (
                small("items: [(kind: Health, pos: (0.0, 2.0, 0.0))]"),
                "item 0 (Health) at (0.0, 2.0, 0.0) floats 2.0 m above the ground (at most 0.6)",
            ),
            (
                small(
                    "items: [(kind: Health, pos: (5.0, 0.0, 0.0))], teleporters: [(center: (5.0, 1.25, 0.0), \
                     size: (1.0, 2.5, 2.0), dest: (0.0, 0.0, -5.0), yaw_deg: 0.0)]",
                ),
                "item 0 (Health) at (5.0, 0.0, 0.0) is inside teleporter 0's entry: whoever reaches it is sent away first",
            ),
        ] {
            assert_eq!(errors, vec![says.to_string()]);
        }
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
