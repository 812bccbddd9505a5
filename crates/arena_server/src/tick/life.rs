//! Life and death: the one place a player dies (shot, or fallen out of the
//! world) and the one place a player is put back at a spawn point (after
//! the respawn delay, or when a new match starts), and how that spawn point
//! is chosen.

use arena_sim::{PlayerId, PlayerState, pick_spawn};
use bevy::prelude::*;

use crate::vocabulary::{Dead, Frag, ServerPlayer, ServerTick, Sim, SimWorld, TickRate};

/// Time from death to respawn, seconds.
pub const RESPAWN_DELAY_S: f32 = 2.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<SpawnRotation>();
}

/// Rotates through equally good spawn points.
#[derive(Resource, Default, Debug)]
pub(crate) struct SpawnRotation(usize);

/// A spawn point away from everyone at `occupied`, and its yaw.
pub(crate) fn choose_spawn(world: &SimWorld, occupied: &[Vec3], rotation: &mut SpawnRotation) -> (Vec3, f32) {
    let spawns = &world.map().spawns;
    rotation.0 = rotation.0.wrapping_add(1);
    match pick_spawn(spawns, occupied, rotation.0).and_then(|i| spawns.get(i)) {
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
    world: &SimWorld,
    rotation: &mut SpawnRotation,
    positions: &mut [(PlayerId, Vec3)],
    (entity, id, sim): (Entity, PlayerId, &mut PlayerState),
) {
    let occupied: Vec<Vec3> = positions.iter().filter(|(other, _)| *other != id).map(|(_, p)| *p).collect();
    let (pos, yaw) = choose_spawn(world, &occupied, rotation);
    *sim = sim.respawned_at(pos, yaw);
    if let Some(entry) = positions.iter_mut().find(|(other, _)| *other == id) {
        entry.1 = pos;
    }
    commands.entity(entity).remove::<Dead>();
}

/// Everyone's position, for choosing spawn points.
pub(crate) fn positions<'a>(players: impl Iterator<Item = (&'a ServerPlayer, &'a Sim)>) -> Vec<(PlayerId, Vec3)> {
    players.map(|(p, s)| (p.id, s.pos)).collect()
}

/// Brings back the dead whose delay has passed.
pub(crate) fn respawn_the_dead(
    tick: Res<ServerTick>,
    world: Res<SimWorld>,
    mut rotation: ResMut<SpawnRotation>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, Option<&Dead>)>,
    mut commands: Commands,
) {
    let mut at = positions(players.iter().map(|(_, p, s, _)| (p, s)));
    for (entity, player, mut sim, dead) in &mut players {
        if dead.is_some_and(|d| !arena_sim::tick_after(d.respawn_tick, tick.0)) {
            respawn(&mut commands, &world, &mut rotation, &mut at, (entity, player.id, &mut sim.0));
        }
    }
}
