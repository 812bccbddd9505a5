//! Drawn lives: the frame a drawn body dies, comes back, goes through a
//! teleporter or is thrown by a jump pad, said once ([`DrawnDied`],
//! [`DrawnRespawned`], [`DrawnTeleported`], [`DrawnLaunched`]), after prediction and interpolation
//! have decided where everyone is drawn. Effects, ragdolls and sound follow
//! these, so a death is seen and heard when the body the player watches
//! falls, not when the server's word arrives (an interpolation delay
//! earlier for the others).

use arena_sim::PlayerState;
use bevy::prelude::*;

use crate::vocabulary::{
    ClientWorld, Drawn, DrawnDied, DrawnLaunched, DrawnRespawned, DrawnTeleported, LocalPlayer, NetPlayer,
};

/// How near a teleporter's destination a body that came back alive must be
/// for it to have come through the teleporter (not a respawn), metres.
const AT_DESTINATION_M: f32 = 1.5;
/// How long after coming out a body may first be drawn (a slow frame, a
/// lost snapshot): it has moved on from the destination that long, seconds.
const DRAWN_LATE_S: f32 = 0.25;
/// How far above or below a destination a body may be and have come through it, metres.
const AT_DESTINATION_UP_M: f32 = 3.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<DrawnDied>()
        .add_message::<DrawnRespawned>()
        .add_message::<DrawnTeleported>()
        .add_message::<DrawnLaunched>();
}

/// What a drawn body was last frame.
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct DrawnLife {
    alive: bool,
    /// Its spawn counter: a respawn changes it.
    life: u8,
    /// As last drawn alive.
    last_alive: PlayerState,
    /// On a jump pad last frame.
    on_pad: bool,
    /// Alive the frame before the last change was seen.
    was_alive_before: bool,
}

impl DrawnLife {
    fn of(state: &PlayerState) -> Self {
        Self {
            alive: state.alive,
            life: state.spawn_count,
            last_alive: *state,
            on_pad: false,
            was_alive_before: state.alive,
        }
    }
}

/// What changed in one body's life between two frames.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    Died { last_alive: PlayerState },
    Respawned,
}

/// Takes this frame's drawn state into `life`; says whether the body died
/// or came back since the last frame. A body first seen dead or alive is
/// neither (nobody saw it change).
fn follow(life: &mut DrawnLife, now: &PlayerState) -> Option<Change> {
    let change = match (life.alive, now.alive) {
        (true, false) => Some(Change::Died { last_alive: life.last_alive }),
        (false, true) => Some(Change::Respawned),
        // Back already (a death and a respawn between two frames, or a teleport).
        (true, true) if now.spawn_count != life.life => Some(Change::Respawned),
        _ => None,
    };
    life.was_alive_before = life.alive;
    life.alive = now.alive;
    life.life = now.spawn_count;
    if now.alive {
        life.last_alive = *now;
    }
    change
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn watch_lives(
    mut players: Query<(Entity, &NetPlayer, &Drawn, Has<LocalPlayer>, Option<&mut DrawnLife>)>,
    world: Res<ClientWorld>,
    mut died: MessageWriter<DrawnDied>,
    mut respawned: MessageWriter<DrawnRespawned>,
    mut teleported: MessageWriter<DrawnTeleported>,
    mut launched: MessageWriter<DrawnLaunched>,
    mut commands: Commands,
) {
    let map = world.map();
    for (entity, player, drawn, local, life) in &mut players {
        let Some(mut life) = life else {
            commands.entity(entity).insert(DrawnLife::of(&drawn.0));
            continue;
        };
        let from = life.last_alive.pos;
        let on_pad = drawn.0.alive && map.jump_pad_at(drawn.0.pos, drawn.0.height()).is_some();
        if on_pad && !life.on_pad {
            launched.write(DrawnLaunched { entity, id: player.id, local, at: drawn.0.pos });
        }
        life.on_pad = on_pad;
        match follow(&mut life, &drawn.0) {
            Some(Change::Died { last_alive }) => {
                died.write(DrawnDied { entity, id: player.id, local, last_alive, state: drawn.0 });
            }
            // Alive all along with a new spawn counter, at a teleporter's
            // destination: through it, not back from the dead.
            Some(Change::Respawned) if came_through(map, &drawn.0, life.was_alive_before) => {
                teleported.write(DrawnTeleported { entity, id: player.id, local, from, to: drawn.0.pos });
            }
            Some(Change::Respawned) => {
                respawned.write(DrawnRespawned { entity, id: player.id, local, state: drawn.0 });
            }
            None => {}
        }
    }
}

/// Whether a body back with a new spawn counter came through a teleporter:
/// alive the frame before, and at (or just past) a destination.
fn came_through(map: &arena_sim::MapDef, now: &PlayerState, was_alive: bool) -> bool {
    was_alive
        && map.teleporters.iter().any(|t| {
            let d = now.pos - t.dest;
            let across = Vec3::new(d.x, 0.0, d.z).length();
            across < AT_DESTINATION_M + now.ground_speed() * DRAWN_LATE_S && d.y.abs() < AT_DESTINATION_UP_M
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f32, alive: bool, spawn_count: u8) -> PlayerState {
        PlayerState { pos: Vec3::new(x, 0.0, 0.0), alive, spawn_count, ..PlayerState::default() }
    }

    #[test]
    fn a_death_and_a_respawn_are_each_said_once_with_the_last_live_body() {
        let mut life = DrawnLife::of(&at(0.0, true, 0));
        assert_eq!(follow(&mut life, &at(1.0, true, 0)), None);
        assert_eq!(follow(&mut life, &at(1.1, false, 0)), Some(Change::Died { last_alive: at(1.0, true, 0) }));
        assert_eq!(follow(&mut life, &at(1.1, false, 0)), None, "once");
        assert_eq!(follow(&mut life, &at(9.0, true, 1)), Some(Change::Respawned));
        assert_eq!(follow(&mut life, &at(9.1, true, 1)), None);
        // Gone and back between two frames: a respawn all the same.
        assert_eq!(follow(&mut life, &at(-5.0, true, 2)), Some(Change::Respawned));
        // Back alive with a new counter at a teleporter's destination: through
        // it; at a spawn point far from any: a respawn (both changes, once).
        let yard = arena_sim::MapDef::built_in("yard").expect("a built-in map");
        let gate = yard.teleporters[0];
        let mut life = DrawnLife::of(&at(0.0, true, 5));
        let through = PlayerState { pos: gate.dest, ..at(0.0, true, 6) };
        assert_eq!(follow(&mut life, &through), Some(Change::Respawned));
        assert!(came_through(&yard, &through, life.was_alive_before));
        let spawn = PlayerState { pos: yard.spawns[0].pos, ..at(0.0, true, 7) };
        assert_eq!(follow(&mut life, &spawn), Some(Change::Respawned));
        assert!(!came_through(&yard, &spawn, life.was_alive_before), "a spawn point is no destination");
        // First seen dead: no death to tell of.
        let mut corpse = DrawnLife::of(&at(3.0, false, 4));
        assert_eq!(follow(&mut corpse, &at(3.0, false, 4)), None);
    }
}
