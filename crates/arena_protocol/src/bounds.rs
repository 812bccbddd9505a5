//! What a value from the network (or a demo file) must be to be simulated
//! and drawn: the bounds on positions, speeds and poses, shared by the
//! messages, the demo frames and the kill-cam. A leaf: it imports nothing
//! of this crate.

use arena_sim::{Hitbox, PlayerState};

/// Farthest from the arena's centre a position may be, metres: far beyond
/// any map, near enough that the movement code's arithmetic stays exact.
pub const MAX_COORDINATE_M: f32 = 16_384.0;
/// Fastest a player may move, metres per second: far beyond anything the
/// movement code produces.
pub const MAX_SPEED_MPS: f32 = 1024.0;

/// Whether a player's state from the network can be simulated and drawn:
/// every float finite, the position within [`MAX_COORDINATE_M`] and the
/// velocity within [`MAX_SPEED_MPS`] on each axis.
pub fn state_is_sane(s: &PlayerState) -> bool {
    s.pos.is_finite()
        && s.vel.is_finite()
        && s.pos.abs().max_element() <= MAX_COORDINATE_M
        && s.vel.abs().max_element() <= MAX_SPEED_MPS
        && [s.yaw, s.pitch, s.step_phase, s.fire_cooldown_s, s.reload_s, s.protected_s, s.twist, s.landing, s.quad_s]
            .iter()
            .all(|v| v.is_finite())
}

/// A hitbox from a server, checked: a pose never sees a NaN, and an absurd
/// pace or gait is not drawn.
pub fn check_hitbox(h: &Hitbox) -> Result<(), String> {
    if !h.input.feet.is_finite() {
        return Err("a hitbox is not finite".into());
    }
    let p = h.input;
    let pose = [p.yaw, p.pitch, p.vel.x, p.vel.y, p.gait_m, p.twist, p.landing];
    if !pose.iter().all(|v| v.is_finite() && v.abs() <= MAX_SPEED_MPS) {
        return Err("a hitbox's pose out of bounds".into());
    }
    Ok(())
}
