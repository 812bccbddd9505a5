//! Drawn lives: the frame a drawn body dies or comes back, said once
//! ([`DrawnDied`], [`DrawnRespawned`]), after prediction and interpolation
//! have decided where everyone is drawn. Effects, ragdolls and sound follow
//! these, so a death is seen and heard when the body the player watches
//! falls, not when the server's word arrives (an interpolation delay
//! earlier for the others).

use arena_sim::PlayerState;
use bevy::prelude::*;

use crate::vocabulary::{Drawn, DrawnDied, DrawnRespawned, LocalPlayer, NetPlayer};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<DrawnDied>().add_message::<DrawnRespawned>();
}

/// What a drawn body was last frame.
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct DrawnLife {
    alive: bool,
    /// Its spawn counter: a respawn changes it.
    life: u8,
    /// As last drawn alive.
    last_alive: PlayerState,
}

impl DrawnLife {
    fn of(state: &PlayerState) -> Self {
        Self { alive: state.alive, life: state.spawn_count, last_alive: *state }
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
    life.alive = now.alive;
    life.life = now.spawn_count;
    if now.alive {
        life.last_alive = *now;
    }
    change
}

pub(crate) fn watch_lives(
    mut players: Query<(Entity, &NetPlayer, &Drawn, Has<LocalPlayer>, Option<&mut DrawnLife>)>,
    mut died: MessageWriter<DrawnDied>,
    mut respawned: MessageWriter<DrawnRespawned>,
    mut commands: Commands,
) {
    for (entity, player, drawn, local, life) in &mut players {
        let Some(mut life) = life else {
            commands.entity(entity).insert(DrawnLife::of(&drawn.0));
            continue;
        };
        match follow(&mut life, &drawn.0) {
            Some(Change::Died { last_alive }) => {
                died.write(DrawnDied { entity, id: player.id, local, last_alive, state: drawn.0 });
            }
            Some(Change::Respawned) => {
                respawned.write(DrawnRespawned { entity, id: player.id, local, state: drawn.0 });
            }
            None => {}
        }
    }
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
        // First seen dead: no death to tell of.
        let mut corpse = DrawnLife::of(&at(3.0, false, 4));
        assert_eq!(follow(&mut corpse, &at(3.0, false, 4)), None);
    }
}
