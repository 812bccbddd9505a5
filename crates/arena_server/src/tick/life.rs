//! Life and death: the one place a player dies (shot, or fallen out of the
//! world) and the one place a player is put back at a spawn point (after
//! the respawn delay, or when a new match starts), and how that spawn point
//! is chosen (away from the enemy).

use arena_sim::{PlayerId, PlayerState, pick_spawn};
use bevy::prelude::*;

use arena_protocol::modes::Side;

use crate::vocabulary::{AwaitingMap, Dead, Frag, Roster, ServerPlayer, ServerTick, Sim, SimWorld, TickRate};

/// Time from death to respawn, seconds.
pub const RESPAWN_DELAY_S: f32 = 2.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<SpawnRotation>();
}

/// Rotates through equally good spawn points.
#[derive(Resource, Default, Debug)]
pub(crate) struct SpawnRotation(usize);

/// How far a teammate must be from a spawn point for it to be free, metres.
const MATE_CLEARANCE_M: f32 = 2.0;

/// A spawn point for a player on `side`, and its yaw, given everyone else
/// at `others`: as far as can be from the nearest enemy (in team
/// deathmatch, a teammate is no enemy, but a point a teammate stands on is
/// not free); in free-for-all and duel, from the nearest anyone.
pub(crate) fn choose_spawn(
    world: &SimWorld,
    roster: &Roster,
    side: Side,
    others: &[(PlayerId, Vec3)],
    rotation: &mut SpawnRotation,
) -> (Vec3, f32) {
    let spawns = &world.map().spawns;
    rotation.0 = rotation.0.wrapping_add(1);
    let (mut enemies, mut mates) = (Vec::new(), Vec::new());
    for (id, pos) in others {
        match side.team() {
            Some(team) if roster.side(*id).team() == Some(team) => mates.push(*pos),
            _ => enemies.push(*pos),
        }
    }
    let free: Vec<usize> =
        (0..spawns.len()).filter(|&i| mates.iter().all(|m| m.distance(spawns[i].pos) > MATE_CLEARANCE_M)).collect();
    let candidates: Vec<usize> = if free.is_empty() { (0..spawns.len()).collect() } else { free };
    let points: Vec<_> = candidates.iter().map(|&i| spawns[i]).collect();
    let occupied = if enemies.is_empty() { std::mem::take(&mut mates) } else { enemies };
    match pick_spawn(&points, &occupied, rotation.0).and_then(|i| points.get(i)) {
        Some(spawn) => (spawn.pos, spawn.yaw()),
        None => (Vec3::ZERO, 0.0),
    }
}

/// Kills the player of `entity` (state `sim`): dead until the respawn delay
/// has passed, with a frag for `killer` (itself, for a fall).
pub(crate) fn kill(
    commands: &mut Commands,
    entity: Entity,
    sim: &mut PlayerState,
    frag: Frag,
    tick: ServerTick,
    rate: TickRate,
    frags: &mut MessageWriter<Frag>,
) {
    sim.alive = false;
    if frag.killer == frag.victim {
        // A fall ends where it ends: the body does not slide on.
        sim.vel = Vec3::ZERO;
    }
    let respawn_tick = tick.0.wrapping_add((RESPAWN_DELAY_S * rate.hz() as f32) as u32);
    commands.entity(entity).insert(Dead { respawn_tick });
    frags.write(frag);
}

/// Puts the player of `entity` back at the best spawn point against the
/// others at `positions` (which then holds its new place), fresh and briefly
/// protected.
pub(crate) fn respawn(
    commands: &mut Commands,
    (world, roster): (&SimWorld, &Roster),
    rotation: &mut SpawnRotation,
    positions: &mut [(PlayerId, Vec3)],
    (entity, id, sim): (Entity, PlayerId, &mut PlayerState),
) {
    let others: Vec<(PlayerId, Vec3)> = positions.iter().filter(|(other, _)| *other != id).copied().collect();
    let (pos, yaw) = choose_spawn(world, roster, roster.side(id), &others, rotation);
    *sim = sim.respawned_at(pos, yaw);
    if let Some(entry) = positions.iter_mut().find(|(other, _)| *other == id) {
        entry.1 = pos;
    }
    commands.entity(entity).remove::<Dead>();
}

/// Holds the player of `entity` out of the world (not alive, not coming
/// back by itself) while its client loads the map: `let_in` ends it.
pub(crate) fn hold(commands: &mut Commands, entity: Entity, sim: &mut PlayerState) {
    sim.alive = false;
    sim.vel = Vec3::ZERO;
    commands.entity(entity).remove::<Dead>();
}

/// Lets a held player in: one that plays respawns at the next tick.
pub(crate) fn let_in(commands: &mut Commands, entity: Entity, tick: ServerTick, plays: bool) {
    let mut entity = commands.entity(entity);
    entity.remove::<AwaitingMap>();
    if plays {
        entity.insert(Dead { respawn_tick: tick.0 });
    }
}

/// Everyone's position, for choosing spawn points.
pub(crate) fn positions<'a>(players: impl Iterator<Item = (&'a ServerPlayer, &'a Sim)>) -> Vec<(PlayerId, Vec3)> {
    players.map(|(p, s)| (p.id, s.pos)).collect()
}

/// Brings back the dead whose delay has passed.
pub(crate) fn respawn_the_dead(
    tick: Res<ServerTick>,
    world: Res<SimWorld>,
    roster: Res<Roster>,
    mut rotation: ResMut<SpawnRotation>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, Option<&Dead>), Without<AwaitingMap>>,
    mut commands: Commands,
) {
    let mut at = positions(players.iter().map(|(_, p, s, _)| (p, s)));
    for (entity, player, mut sim, dead) in &mut players {
        if dead.is_some_and(|d| !arena_sim::tick_after(d.respawn_tick, tick.0)) {
            respawn(&mut commands, (&world, &roster), &mut rotation, &mut at, (entity, player.id, &mut sim.0));
        }
    }
}
