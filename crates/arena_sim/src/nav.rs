//! A navigation graph for bots, built from the collision world itself: a grid
//! of standing spots over every walkable surface, linked where a player can
//! walk from one to the next (floors, ramps, stairs) or drop down a ledge,
//! and where a jump pad throws or a teleporter sends one (a spot on the
//! trigger leads only there: a body standing on it goes nowhere else).

use std::collections::VecDeque;

use glam::Vec3;
use rapier3d::parry::query::ShapeCastOptions;
use rapier3d::prelude::*;

use crate::player::{PLAYER_RADIUS_M, STAND_HEIGHT_M};
use crate::world::ArenaWorld;

/// Distance between neighbouring spots, metres.
pub const NAV_SPACING_M: f32 = 2.0;
/// Largest rise between neighbouring spots a player walks up, metres (the
/// stairs rise 0.75 m over 2 m, the ramps 0.67 m).
const MAX_RISE_M: f32 = 0.8;
/// How far (in grid spacings) a spot may be from a trigger's own spot
/// and still walk onto it.
const TRIGGER_REACH_SPACINGS: f32 = 1.5;
/// Largest drop a bot will jump down, metres.
const MAX_DROP_M: f32 = 3.5;
/// Widest span the grid covers, metres (`map_check::MAX_SPAN_M`'s).
pub const MAX_GRID_SPAN_M: f32 = 256.0;
/// Height above the map's highest block from which surfaces are searched, metres.
const PROBE_ABOVE_M: f32 = 3.0;

/// Standing spots and which spots can be reached from each.
#[derive(Debug, Clone, Default)]
pub struct NavGraph {
    pub nodes: Vec<Vec3>,
    pub links: Vec<Vec<usize>>,
}

impl NavGraph {
    pub fn build(world: &ArenaWorld) -> Self {
        let (min, max) = world.map().bounds();
        // No blocks, or a span beyond any map's: no grid (`map_check` refuses both).
        if !(min.x <= max.x && min.z <= max.z) || (max - min).max_element() > MAX_GRID_SPAN_M {
            return NavGraph::default();
        }
        let mut nodes = Vec::new();
        let mut cells = Vec::new();
        let (nx, nz) = (((max.x - min.x) / NAV_SPACING_M) as i32, ((max.z - min.z) / NAV_SPACING_M) as i32);
        let mut index = vec![None; ((nx + 1) * (nz + 1)) as usize];
        for ix in 0..=nx {
            for iz in 0..=nz {
                let x = min.x + (ix as f32 + 0.5) * NAV_SPACING_M;
                let z = min.z + (iz as f32 + 0.5) * NAV_SPACING_M;
                let probe = max.y + PROBE_ABOVE_M;
                let Some(drop) = world.cast_ray(Vec3::new(x, probe, z), Vec3::NEG_Y, probe - min.y + 1.0) else {
                    continue;
                };
                let feet = Vec3::new(x, probe - drop, z);
                // Somewhere a player can stand, with room around it. Above a
                // step's height, so spots on ramps and stair edges count.
                let body_free = world.player_fits(feet + Vec3::Y * MAX_RISE_M, STAND_HEIGHT_M - MAX_RISE_M);
                if drop < 0.5 || !body_free || !level_ground(world, feet) {
                    continue;
                }
                index[(ix * (nz + 1) + iz) as usize] = Some(nodes.len());
                nodes.push(feet);
                cells.push((ix, iz));
            }
        }
        let mut links = vec![Vec::new(); nodes.len()];
        for (a, &(ix, iz)) in cells.iter().enumerate() {
            for (dx, dz) in [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)] {
                let (jx, jz) = (ix + dx, iz + dz);
                if jx < 0 || jz < 0 || jx > nx || jz > nz {
                    continue;
                }
                let Some(b) = index[(jx * (nz + 1) + jz) as usize] else { continue };
                let rise = nodes[b].y - nodes[a].y;
                if (-MAX_DROP_M..=MAX_RISE_M).contains(&rise) && passage_clear(world, nodes[a], nodes[b]) {
                    links[a].push(b);
                }
            }
        }
        let mut graph = NavGraph { nodes, links };
        graph.add_triggers(world);
        graph
    }

    /// Links for the map's jump pads and teleporters: a spot on each
    /// trigger (added if the grid has none), reached from the spots around
    /// it, leading only to where the trigger puts a player.
    fn add_triggers(&mut self, world: &ArenaWorld) {
        let map = world.map();
        // In the order movement gives them precedence backwards (pads, then
        // teleporters; each kind last listed first), so that where boxes
        // overlap, the trigger movement takes is the one whose link stays.
        let triggers: Vec<(Vec3, Vec3, Option<Vec3>)> = map
            .jump_pads
            .iter()
            .rev()
            .map(|p| (p.center, p.size, pad_landing(world, p)))
            .chain(map.teleporters.iter().rev().map(|t| (t.center, t.size, Some(t.dest))))
            .collect();
        // First every entry spot and the links into it, then (once no more
        // links are added) each trigger's spots lead only where it sends.
        let mut leads: Vec<(Vec<usize>, usize)> = Vec::new();
        for (center, size, to) in triggers {
            let Some(to) = to.and_then(|to| self.nearest(to)) else { continue };
            let floor = world
                .cast_ray(center + Vec3::Y * (size.y * 0.5), Vec3::NEG_Y, size.y + 1.0)
                .map(|d| center + Vec3::Y * (size.y * 0.5 - d));
            let mut on_trigger: Vec<usize> = (0..self.nodes.len())
                .filter(|&n| crate::map::body_in_box(center, size, self.nodes[n], STAND_HEIGHT_M))
                .collect();
            if on_trigger.is_empty() {
                let Some(feet) = floor else { continue };
                self.nodes.push(feet);
                self.links.push(Vec::new());
                let n = self.nodes.len() - 1;
                for m in 0..n {
                    let near = self.nodes[m].distance(feet) <= NAV_SPACING_M * TRIGGER_REACH_SPACINGS;
                    if near && passage_clear(world, self.nodes[m], feet) {
                        self.links[m].push(n);
                    }
                }
                on_trigger.push(n);
            }
            leads.push((on_trigger, to));
        }
        for (spots, to) in leads {
            for n in spots {
                self.links[n] = vec![to];
            }
        }
    }

    /// The spot nearest to `pos` (preferring spots at about its height).
    pub fn nearest(&self, pos: Vec3) -> Option<usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (i, n.distance_squared(pos) + (n.y - pos.y).powi(2) * 4.0))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }

    /// The spots from `from` to `to` along links (fewest hops), both included.
    pub fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let mut previous = vec![usize::MAX; self.nodes.len()];
        let mut queue = VecDeque::from([from]);
        previous.get_mut(from).map(|p| *p = from)?;
        while let Some(at) = queue.pop_front() {
            if at == to {
                let mut path = vec![to];
                let mut node = to;
                while node != from {
                    node = previous[node];
                    path.push(node);
                }
                path.reverse();
                return Some(path);
            }
            for &next in &self.links[at] {
                if previous[next] == usize::MAX {
                    previous[next] = at;
                    queue.push_back(next);
                }
            }
        }
        None
    }
}

/// Where a body thrown by `pad` from its middle lands (its feet), if it
/// lands within a few seconds: the arc of the shared movement, no input.
pub fn pad_landing(world: &ArenaWorld, pad: &crate::map::JumpPadDef) -> Option<Vec3> {
    pad_flight(world, pad).ok().map(|flight| flight.landed)
}

/// How a pad's arc ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flight {
    /// Where the feet came down.
    pub landed: Vec3,
    /// Seconds in the air.
    pub airborne_s: f32,
}

/// Why a pad's arc does not end on a floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlightFault {
    /// It ran into a wall at this point, before coming down.
    Wall(Vec3),
    /// It never came down on anything (over the void, or off the map).
    Nowhere,
}

/// Longest a pad's arc is followed, seconds.
const MAX_FLIGHT_S: f32 = 8.0;
/// A throw across slower than this (m/s) is straight up: no wall to meet.
const MIN_ACROSS_MPS: f32 = 1.0;
/// A flight that keeps less than this share of its speed across met a wall
/// (no input steers it; only a wall slows it).
const BLOCKED_SPEED_SHARE: f32 = 0.5;

/// The arc of a body launched from the middle of `pad`'s floor with no
/// input, through the shared movement at 64 Hz.
pub fn pad_flight(world: &ArenaWorld, pad: &crate::map::JumpPadDef) -> Result<Flight, FlightFault> {
    use crate::cmd::UserCmd;
    use crate::player::PlayerState;
    let dt = crate::time::tick_dt_s(crate::time::DEFAULT_TICK_HZ);
    let top = pad.center + Vec3::Y * (pad.size.y * 0.5);
    let feet = world.cast_ray(top, Vec3::NEG_Y, pad.size.y + 1.0).map_or(pad.center, |d| top - Vec3::Y * d);
    let mut s = PlayerState::spawned_at(feet, 0.0);
    let across = |v: Vec3| Vec3::new(v.x, 0.0, v.z).length();
    let launched = across(pad.launch);
    let mut airborne = 0usize;
    for _ in 0..(MAX_FLIGHT_S / dt) as usize {
        let (next, events) = crate::movement::move_player(&s, &UserCmd::default(), world, dt);
        if events.fell_out || events.teleported {
            return if events.teleported {
                Ok(Flight { landed: next.pos, airborne_s: airborne as f32 * dt })
            } else {
                Err(FlightFault::Nowhere)
            };
        }
        let on_pad = world.map().jump_pad_at(next.pos, next.height()).is_some();
        if !next.on_ground || on_pad {
            airborne += usize::from(!next.on_ground);
            // Blocked across while still flying: a wall in the way.
            let blocked = across(next.vel) < launched * BLOCKED_SPEED_SHARE;
            if airborne > 1 && launched > MIN_ACROSS_MPS && blocked && !next.on_ground {
                return Err(FlightFault::Wall(next.pos));
            }
            s = next;
            continue;
        }
        return Ok(Flight { landed: next.pos, airborne_s: airborne as f32 * dt });
    }
    Err(FlightFault::Nowhere)
}

/// Whether the ground under a spot is level enough to stand on (not the edge
/// of a ledge): the floor is there a little to every side.
fn level_ground(world: &ArenaWorld, feet: Vec3) -> bool {
    let reach = PLAYER_RADIUS_M * 0.8;
    [Vec3::X, Vec3::NEG_X, Vec3::Z, Vec3::NEG_Z].iter().all(|d| {
        let from = feet + *d * reach + Vec3::Y * 0.6;
        world.cast_ray(from, Vec3::NEG_Y, 1.2).is_some()
    })
}

/// Whether a player's body, lifted a step's height, can move from `a` to `b`
/// without hitting anything.
fn passage_clear(world: &ArenaWorld, a: Vec3, b: Vec3) -> bool {
    let lift = Vec3::Y * 0.5;
    // Down a ledge: over the edge at the upper height, then falling.
    let over = if b.y < a.y { Vec3::new(b.x, a.y, b.z) } else { b };
    let (from, to) = (a + lift, over + lift);
    let shape = Cylinder::new(0.6, PLAYER_RADIUS_M * 0.9);
    let start = Pose::from_translation(from + Vec3::Y * 0.6);
    let travel = to - from;
    let distance = travel.length();
    if distance < 1e-3 {
        return true;
    }
    let options = ShapeCastOptions { max_time_of_impact: distance, ..ShapeCastOptions::default() };
    world.queries().cast_shape(&start, travel / distance, &shape, options).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::MapDef;

    #[test]
    fn the_arena_is_one_connected_network_up_to_the_platforms() {
        let world = ArenaWorld::new(MapDef::foundry());
        let nav = NavGraph::build(&world);
        assert!(nav.nodes.len() > 400, "{} spots", nav.nodes.len());
        let centre = nav.nearest(Vec3::new(0.0, 0.0, 6.0)).expect("a spot in the middle");
        for (what, pos) in [
            ("north platform", Vec3::new(0.0, 3.0, -25.0)),
            ("south platform", Vec3::new(0.0, 3.0, 25.0)),
            ("east lane", Vec3::new(25.0, 0.0, 0.0)),
            ("west lane", Vec3::new(-25.0, 0.0, 0.0)),
        ] {
            let goal = nav.nearest(pos).expect("a spot");
            assert!((nav.nodes[goal].y - pos.y).abs() < 0.1, "{what}: nearest spot {}", nav.nodes[goal]);
            let there = nav.path(centre, goal).unwrap_or_else(|| panic!("no way to the {what}"));
            assert!(nav.path(goal, centre).is_some(), "no way back from the {what}");
            // Every hop is short.
            for hop in there.windows(2) {
                assert!(nav.nodes[hop[0]].distance(nav.nodes[hop[1]]) < NAV_SPACING_M * 1.5 + MAX_DROP_M);
            }
        }
    }

    #[test]
    fn no_spot_is_inside_a_wall_or_a_crate() {
        let world = ArenaWorld::new(MapDef::foundry());
        let nav = NavGraph::build(&world);
        for node in &nav.nodes {
            assert!(world.player_fits(*node + Vec3::Y * MAX_RISE_M, STAND_HEIGHT_M - MAX_RISE_M), "{node}");
            // And it is on the surface, not under it: the top of what is below.
            assert!(world.cast_ray(*node + Vec3::Y * 0.3, Vec3::NEG_Y, 0.6).is_some(), "{node} floats");
        }
    }
}
