//! The shared rules of Arena: user commands, player state, the one movement
//! function that the server and the client both run, and the arena map.
//!
//! Nothing here renders, touches the network or depends on Bevy: the same code
//! runs in the authoritative server, in client-side prediction and in tests,
//! and gives bit-identical results for identical inputs on one machine.
//!
//! # Modules, bottom up
//!
//! - `time`: tick rates and wrapping tick arithmetic.
//! - `rng`: a small seeded random number generator.
//! - `cmd`: the user command and its sanitising.
//! - `player`: the player's state, sizes and view angles.
//! - `hitbox`: body and head, and rays against them.
//! - `weapon`: the rifle's rules.
//! - `map`, `world`: the arena's data and its collision world.
//! - `movement`: the shared movement function.
//! - `quant`: the grids states and commands travel on.
//! - `spawn`, `nav`: spawn choice and the bots' navigation graph.

pub mod cmd;
pub mod hitbox;
pub mod map;
pub mod movement;
pub mod nav;
pub mod player;
pub mod quant;
pub mod rng;
pub mod spawn;
pub mod time;
pub mod weapon;
pub mod world;

pub use cmd::{Buttons, UserCmd};
pub use hitbox::{HitZone, Hitbox};
pub use map::{MapDef, SpawnPoint};
pub use movement::{MoveEvents, move_player};
pub use player::{PlayerId, PlayerState, look_at, yaw_towards};
pub use spawn::pick_spawn;
pub use time::{DEFAULT_TICK_HZ, TICK_HZ_RANGE, TickRate, tick_after, tick_diff, tick_dt_s};
pub use weapon::{Shot, WeaponEvents};
pub use world::ArenaWorld;

/// Everything that happened to a player in one tick.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TickEvents {
    pub movement: MoveEvents,
    pub weapon: WeaponEvents,
}

impl TickEvents {
    /// Whether anything happened that could make a sound or an effect.
    pub fn any(&self) -> bool {
        let w = &self.weapon;
        self.movement != MoveEvents::default() || w.shot.is_some() || w.reload_started || w.reloaded || w.dry_fire
    }
}

/// One player, one tick: movement, then the rifle, then the result snapped to
/// the wire's grids. The dead do not move; they only look around. The server
/// runs this for every player and the client for its own (prediction): the
/// one function both call.
pub fn step_player(state: &PlayerState, cmd: &UserCmd, world: &ArenaWorld, dt_s: f32) -> (PlayerState, TickEvents) {
    let (mut next, movement) = if state.alive {
        move_player(state, cmd, world, dt_s)
    } else {
        (PlayerState { yaw: cmd.yaw, pitch: cmd.pitch, ..*state }, MoveEvents::default())
    };
    let weapon = weapon::update_weapon(&mut next, cmd, dt_s);
    // Spawn protection runs out, or ends with the first shot.
    next.protected_s = if weapon.shot.is_some() { 0.0 } else { (next.protected_s - dt_s).max(0.0) };
    // On the wire's grids, on both sides: what the server sends is exactly
    // what it has, and the client's prediction from it stays exact.
    (quant::snap_state(&next), TickEvents { movement, weapon })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> ArenaWorld {
        ArenaWorld::new(MapDef::foundry())
    }

    #[test]
    fn spawn_protection_runs_out_with_time() {
        let world = world();
        let dt = tick_dt_s(DEFAULT_TICK_HZ);
        let spawn = world.map().spawns[0];
        let mut state = PlayerState::default().respawned_at(spawn.pos, spawn.yaw());
        assert_eq!(state.protected_s, player::SPAWN_PROTECTION_S);
        let ticks = (player::SPAWN_PROTECTION_S / dt).ceil() as u32;
        for tick in 0..ticks + 1 {
            assert!(state.protected_s > 0.0 || tick >= ticks - 1, "ran out early, at tick {tick}");
            state = step_player(&state, &UserCmd { tick, ..Default::default() }, &world, dt).0;
        }
        assert_eq!(state.protected_s, 0.0);
    }

    #[test]
    fn firing_ends_spawn_protection_at_once() {
        let world = world();
        let dt = tick_dt_s(DEFAULT_TICK_HZ);
        let spawn = world.map().spawns[0];
        let state = PlayerState::default().respawned_at(spawn.pos, spawn.yaw());
        let cmd = UserCmd { tick: 1, buttons: Buttons::FIRE, ..Default::default() };
        let (next, events) = step_player(&state, &cmd, &world, dt);
        assert!(events.weapon.shot.is_some());
        assert_eq!(next.protected_s, 0.0);
        // Reloading does not end it: only firing does.
        let empty = PlayerState { ammo: 0, ..state };
        let reload = UserCmd { tick: 1, buttons: Buttons::RELOAD, ..Default::default() };
        let (next, events) = step_player(&empty, &reload, &world, dt);
        assert!(events.weapon.reload_started);
        assert!(next.protected_s > 0.0);
    }
}
