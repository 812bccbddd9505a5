//! Arbitrary commands and player states from unstructured bytes: the
//! vocabulary the rule targets build their inputs from.

use arbitrary::{Arbitrary, Unstructured};
use arena_protocol::messages::state_is_sane;
use arena_sim::{Buttons, Click, PlayerState, UserCmd, Weapon};
use glam::Vec3;

/// An `f32` of any bits (NaN and the infinities too), 0 when the bytes run out.
pub fn f32_any(u: &mut Unstructured) -> f32 {
    f32::arbitrary(u).unwrap_or(0.0)
}

/// An arbitrary command, before sanitising.
pub fn any_cmd(u: &mut Unstructured) -> UserCmd {
    UserCmd {
        tick: u32::arbitrary(u).unwrap_or(0),
        forward: f32_any(u),
        right: f32_any(u),
        yaw: f32_any(u),
        pitch: f32_any(u),
        buttons: Buttons(u8::arbitrary(u).unwrap_or(0)),
        render_tick: f64::arbitrary(u).unwrap_or(0.0),
        click: if bool::arbitrary(u).unwrap_or(false) {
            Some(Click { fraction: f32_any(u), yaw: f32_any(u), pitch: f32_any(u) })
        } else {
            None
        },
        drawn_between: <Option<(u32, u32)>>::arbitrary(u).unwrap_or(None),
    }
}

/// An arbitrary player state (floats of any bits).
pub fn any_state(u: &mut Unstructured) -> PlayerState {
    let v = |u: &mut Unstructured| Vec3::new(f32_any(u), f32_any(u), f32_any(u));
    PlayerState {
        pos: v(u),
        vel: v(u),
        yaw: f32_any(u),
        pitch: f32_any(u),
        on_ground: bool::arbitrary(u).unwrap_or(true),
        crouched: bool::arbitrary(u).unwrap_or(false),
        jump_held: bool::arbitrary(u).unwrap_or(false),
        step_phase: f32_any(u),
        alive: bool::arbitrary(u).unwrap_or(true),
        health: u8::arbitrary(u).unwrap_or(100),
        ammo: u8::arbitrary(u).unwrap_or(30),
        weapon: if bool::arbitrary(u).unwrap_or(false) { Weapon::Rocket } else { Weapon::Rifle },
        fire_cooldown_s: f32_any(u),
        reload_s: f32_any(u),
        fire_held: bool::arbitrary(u).unwrap_or(false),
        reload_held: bool::arbitrary(u).unwrap_or(false),
        spawn_count: u8::arbitrary(u).unwrap_or(0),
        protected_s: f32_any(u),
        twist: f32_any(u),
        landing: f32_any(u),
        armour: u8::arbitrary(u).unwrap_or(0),
        quad_s: f32_any(u),
    }
}

/// A state the network could deliver to the client (one that passes
/// [`state_is_sane`]): arbitrary, pulled into bounds when it is not.
pub fn sane_state(u: &mut Unstructured) -> PlayerState {
    let mut s = any_state(u);
    if !state_is_sane(&s) {
        let squash = |x: f32, max: f32| if x.is_finite() { x.clamp(-max, max) } else { 0.0 };
        s.pos = Vec3::new(squash(s.pos.x, 200.0), squash(s.pos.y, 200.0), squash(s.pos.z, 200.0));
        s.vel = Vec3::new(squash(s.vel.x, 100.0), squash(s.vel.y, 100.0), squash(s.vel.z, 100.0));
        for v in [
            &mut s.yaw,
            &mut s.pitch,
            &mut s.step_phase,
            &mut s.fire_cooldown_s,
            &mut s.reload_s,
            &mut s.protected_s,
            &mut s.quad_s,
        ] {
            *v = squash(*v, 10.0);
        }
    }
    s
}
