//! A player's whole state coded (on its grids, or as its exact bits).
//!
//! Read back only within the bounds the shared rules can take; and
//! [`same_state`], two states' sameness bit for bit.

use arena_sim::{PlayerState, Weapon};
use glam::Vec3;

use super::grids::{
    dist_f, dist_q, landing_f, landing_q, pitch_f, pitch_q, pos_f, pos_q, powerup_f, powerup_q, stimer_f, stimer_q,
    timer_f, timer_q, twist_f, twist_q, vel_f, vel_q, yaw_f, yaw_q,
};
use super::model::FrameError;
use super::varint::{In, Out};

const S_ON_GROUND: u8 = 1 << 0;
const S_CROUCHED: u8 = 1 << 1;
const S_JUMP_HELD: u8 = 1 << 2;
const S_ALIVE: u8 = 1 << 3;
const S_FIRE_HELD: u8 = 1 << 4;
const S_RELOAD_HELD: u8 = 1 << 5;
const S_ROCKET: u8 = 1 << 6;
const S_ALL: u8 = (1 << 7) - 1;

pub(super) fn put_state(out: &mut Out, s: &PlayerState) {
    for v in s.pos.to_array() {
        out.grid(v, pos_q, pos_f);
    }
    for v in s.vel.to_array() {
        out.grid(v, vel_q, vel_f);
    }
    out.grid(s.yaw, yaw_q, yaw_f);
    out.grid(s.pitch, pitch_q, pitch_f);
    let flags = [
        (s.on_ground, S_ON_GROUND),
        (s.crouched, S_CROUCHED),
        (s.jump_held, S_JUMP_HELD),
        (s.alive, S_ALIVE),
        (s.fire_held, S_FIRE_HELD),
        (s.reload_held, S_RELOAD_HELD),
        (s.weapon == Weapon::Rocket, S_ROCKET),
    ];
    out.u8(flags.iter().filter(|(on, _)| *on).fold(0, |acc, (_, bit)| acc | bit));
    out.grid(s.step_phase, dist_q, dist_f);
    out.u8(s.health);
    out.u8(s.ammo);
    out.grid(s.fire_cooldown_s, stimer_q, stimer_f);
    out.grid(s.reload_s, timer_q, timer_f);
    out.u8(s.spawn_count);
    out.grid(s.protected_s, timer_q, timer_f);
    out.grid(s.twist, twist_q, twist_f);
    out.grid(s.landing, landing_q, landing_f);
    out.u8(s.armour);
    out.grid(s.quad_s, powerup_q, powerup_f);
}

pub(super) fn get_state(input: &mut In) -> Result<PlayerState, FrameError> {
    const W: &str = "player state";
    let mut p = [0.0; 3];
    for c in &mut p {
        *c = input.grid(W, pos_f)?;
    }
    let mut v = [0.0; 3];
    for c in &mut v {
        *c = input.grid(W, vel_f)?;
    }
    let yaw = input.grid(W, yaw_f)?;
    let pitch = input.grid(W, pitch_f)?;
    let flags = input.u8(W)?;
    if flags & !S_ALL != 0 {
        return Err(FrameError::Invalid { what: "player state's flags" });
    }
    let state = PlayerState {
        pos: Vec3::from_array(p),
        vel: Vec3::from_array(v),
        yaw,
        pitch,
        on_ground: flags & S_ON_GROUND != 0,
        crouched: flags & S_CROUCHED != 0,
        jump_held: flags & S_JUMP_HELD != 0,
        alive: flags & S_ALIVE != 0,
        fire_held: flags & S_FIRE_HELD != 0,
        reload_held: flags & S_RELOAD_HELD != 0,
        weapon: if flags & S_ROCKET != 0 { Weapon::Rocket } else { Weapon::Rifle },
        step_phase: input.grid(W, dist_f)?,
        health: input.u8(W)?,
        ammo: input.u8(W)?,
        fire_cooldown_s: input.grid(W, stimer_f)?,
        reload_s: input.grid(W, timer_f)?,
        spawn_count: input.u8(W)?,
        protected_s: input.grid(W, timer_f)?,
        twist: input.grid(W, twist_f)?,
        landing: input.grid(W, landing_f)?,
        armour: input.u8(W)?,
        quad_s: input.grid(W, powerup_f)?,
    };
    // A replay runs the shared rules on it: nothing they cannot take.
    if !crate::bounds::state_is_sane(&state) {
        return Err(FrameError::Invalid { what: "player state (out of bounds)" });
    }
    Ok(state)
}

/// Whether two states are the same bit for bit (what a replay must give).
pub fn same_state(a: &PlayerState, b: &PlayerState) -> bool {
    let (mut x, mut y) = (Out(Vec::with_capacity(48)), Out(Vec::with_capacity(48)));
    put_state(&mut x, a);
    put_state(&mut y, b);
    x.0 == y.0
}
