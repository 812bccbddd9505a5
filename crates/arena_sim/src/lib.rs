//! The shared rules of Arena: user commands, player state, the one movement
//! function that the server and the client both run, and the arena map.
//!
//! Nothing here renders, touches the network or depends on Bevy: the same code
//! runs in the authoritative server, in client-side prediction and in tests,
//! and gives bit-identical results for identical inputs on one machine.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `time`: tick rates and wrapping tick arithmetic.
//! - `rng`: a small seeded random number generator.
//! - `cmd`: the user command and its sanitising.
//! - `player`: the player's state, sizes and view angles.
//! - `pose`: the body's joints as a pure function of a player's state.
//! - `hitbox`: capsules on the pose (head, torso, pelvis, limbs), and rays
//!   against them.
//! - `interpolation`: how a remote player is drawn between and past its
//!   snapshots, the rule lag compensation rewinds by too; the history both
//!   keep.
//! - `weapon`: the two weapons' rules (rate, magazine, switching).
//! - `quant`: the grids states and commands travel on.
//! - `map`, `world`: the arena's data and its collision world.
//! - `movement`: the shared movement function.
//! - `rocket`: a rocket's flight, what it meets, its splash and knockback.
//! - `spawn`, `nav`: spawn choice and the bots' navigation graph.

pub mod cmd;
pub mod hitbox;
pub mod interpolation;
pub mod map;
pub mod movement;
pub mod nav;
pub mod player;
pub mod pose;
pub mod quant;
pub mod rng;
pub mod rocket;
pub mod spawn;
pub mod time;
pub mod weapon;
pub mod world;

pub use cmd::{Buttons, Click, UserCmd};
pub use hitbox::{BodyPart, HitZone, Hitbox};
pub use map::{MapDef, SpawnPoint};
pub use movement::{MoveEvents, move_player};
pub use player::{PlayerId, PlayerState, Weapon, look_at, yaw_towards};
pub use spawn::pick_spawn;
pub use time::{DEFAULT_TICK_HZ, TICK_HZ_RANGE, TickRate, tick_after, tick_diff, tick_dt_s};
pub use weapon::{Aim, Shot, WeaponEvents};
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
        self.movement != MoveEvents::default()
            || w.shot.is_some()
            || w.rocket.is_some()
            || w.switched
            || w.reload_started
            || w.reloaded
            || w.dry_fire
    }
}

/// One player, one tick: movement, then the rifle, then the result snapped to
/// the wire's grids. The dead do not move; they only look around. The server
/// runs this for every player and the client for its own (prediction): the
/// one function both call. `before` is the player's state a tick before
/// `state`: a clicked shot leaves the eye as drawn at the click's instant,
/// between `before` and `state`, or between `state` and the state after
/// this tick's movement (see [`PlayerState::drawn_after`]); without that
/// history, pass `state` again.
pub fn step_player(
    before: &PlayerState,
    state: &PlayerState,
    cmd: &UserCmd,
    world: &ArenaWorld,
    dt_s: f32,
) -> (PlayerState, TickEvents) {
    let (mut next, movement) = if state.alive {
        move_player(state, cmd, world, dt_s)
    } else {
        (PlayerState { yaw: cmd.yaw, pitch: cmd.pitch, ..*state }, MoveEvents::default())
    };
    let click = cmd.click.map(|click| {
        let drawn = if click.fraction < 1.0 {
            state.drawn_after(before, click.fraction)
        } else {
            next.drawn_after(state, click.fraction - 1.0)
        };
        let dir = player::view_forward(click.yaw, click.pitch);
        weapon::Aim { shot: Shot { origin: drawn.eye_pos(), dir }, at_s: (click.fraction - 1.0) * dt_s }
    });
    let weapon = weapon::update_weapon(&mut next, cmd, dt_s, click);
    // Spawn protection runs out, or ends with the first shot.
    next.protected_s =
        if weapon.shot.is_some() || weapon.rocket.is_some() { 0.0 } else { (next.protected_s - dt_s).max(0.0) };
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
    fn a_landing_straightens_in_its_time_and_a_slow_turn_twists_the_hips_at_any_tick_rate() {
        let world = world();
        let spawn = world.map().spawns[0];
        for hz in [10, 64, 128] {
            let dt = tick_dt_s(hz);
            // Jump, come down, and count the ticks the knees stay bent.
            let mut state = PlayerState::spawned_at(spawn.pos, spawn.yaw());
            let jump = UserCmd { yaw: spawn.yaw(), buttons: Buttons::JUMP, ..Default::default() };
            state = step_player(&state, &state, &jump, &world, dt).0;
            let still = UserCmd { yaw: spawn.yaw(), ..Default::default() };
            let (mut bent, mut depth) = (0, None);
            for _ in 0..(3.0 / dt) as usize {
                let (next, events) = step_player(&state, &state, &still, &world, dt);
                if events.movement.landed.is_some() {
                    depth = Some(next.landing);
                }
                bent += usize::from(depth.is_some() && next.landing > 0.0);
                state = next;
            }
            // Eased by a tick's share of LANDING_S from its depth at landing
            // (the grid rounds each tick's share a little: within a tenth).
            let depth = depth.expect("lands");
            assert!(depth > player::LANDING_LEAST, "{hz} Hz: a jump's landing {depth}");
            let expected = (depth * player::LANDING_S / dt).ceil() as usize;
            assert!(bent.abs_diff(expected) <= 1 + expected / 10, "{hz} Hz: bent {bent} ticks, not {expected}");
            assert_eq!(state.landing, 0.0);
            // Standing, a view turning at 10°/s turns the hips not at all:
            // the twist takes the turn up, tick by tick, to its limit.
            let rate = 10f32.to_radians();
            let mut yaw = spawn.yaw();
            for tick in 1..=(2.0 / dt) as u32 {
                yaw += rate * dt;
                let turn = UserCmd { tick, yaw, ..Default::default() };
                state = step_player(&state, &state, &turn, &world, dt).0;
            }
            let turned = crate::cmd::wrap_angle(state.yaw - spawn.yaw());
            assert!((state.twist - turned).abs() < 2e-3, "{hz} Hz: twist {} for a turn of {turned}", state.twist);
            assert!(state.twist > 0.3, "{hz} Hz: {}", state.twist);
        }
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
            state = step_player(&state, &state, &UserCmd { tick, ..Default::default() }, &world, dt).0;
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
        let (next, events) = step_player(&state, &state, &cmd, &world, dt);
        assert!(events.weapon.shot.is_some());
        assert_eq!(next.protected_s, 0.0);
        // Reloading does not end it: only firing does.
        let empty = PlayerState { ammo: 0, ..state };
        let reload = UserCmd { tick: 1, buttons: Buttons::RELOAD, ..Default::default() };
        let (next, events) = step_player(&empty, &empty, &reload, &world, dt);
        assert!(events.weapon.reload_started);
        assert!(next.protected_s > 0.0);
    }

    #[test]
    fn a_held_trigger_fires_ten_times_a_second_through_the_grids_at_any_tick_rate() {
        let world = world();
        let spawn = world.map().spawns[0];
        for hz in [20u32, 32, 64, 100, 128] {
            let dt = tick_dt_s(hz);
            let mut state = PlayerState::default().respawned_at(spawn.pos, spawn.yaw());
            let mut shots = 0;
            for tick in 0..2 * hz {
                let cmd = UserCmd { tick, buttons: Buttons::FIRE, ..Default::default() };
                let (next, events) = step_player(&state, &state, &cmd, &world, dt);
                shots += u32::from(events.weapon.shot.is_some());
                state = PlayerState { ammo: player::MAGAZINE, ..next };
            }
            assert_eq!(shots, 20, "two seconds at {hz} Hz");
        }
    }

    #[test]
    fn a_click_fires_from_the_eye_as_drawn_between_the_two_ticks_before() {
        let world = world();
        let dt = tick_dt_s(DEFAULT_TICK_HZ);
        let before = PlayerState::spawned_at(glam::Vec3::new(0.0, 0.0, 10.0), 0.0);
        let state = PlayerState { pos: glam::Vec3::new(0.1, 0.0, 10.0), ..before };
        let click = Click { fraction: 0.25, yaw: 0.5, pitch: -0.1 };
        let cmd = UserCmd { tick: 1, buttons: Buttons::FIRE, yaw: 2.0, click: Some(click), ..Default::default() };
        let shot = step_player(&before, &state, &cmd, &world, dt).1.weapon.shot.expect("fires");
        assert!(shot.origin.distance(glam::Vec3::new(0.025, player::STAND_EYE_M, 10.0)) < 1e-6, "{}", shot.origin);
        assert!(shot.dir.distance(player::view_forward(0.5, -0.1)) < 1e-6, "along the click's view, not the tick's");
        // Across a respawn there is nothing to blend: from where it is now.
        let respawned = PlayerState { spawn_count: 1, ..state };
        let shot = step_player(&before, &respawned, &cmd, &world, dt).1.weapon.shot.expect("fires");
        assert_eq!(shot.origin, respawned.eye_pos());
        // A click during the command's own tick: between now and after its movement.
        let walking = PlayerState { vel: glam::Vec3::new(0.0, 0.0, -4.0), ..state };
        let late = Click { fraction: 1.5, ..click };
        let cmd = UserCmd { forward: 1.0, click: Some(late), ..cmd };
        let (after, events) = step_player(&before, &walking, &cmd, &world, dt);
        let shot = events.weapon.shot.expect("fires");
        let halfway = walking.pos.lerp(after.pos, 0.5) + glam::Vec3::Y * player::STAND_EYE_M;
        assert!(shot.origin.distance(halfway) < 1e-3, "{} vs {halfway}", shot.origin);
    }
}
