//! Quantisation: the fixed grids positions, velocities, angles, timers and
//! command axes travel on. Every grid step is a power of two (angles apart),
//! so a value on its grid converts to an integer and back bit for bit.
//!
//! The server snaps every player's state to these grids after each tick
//! ([`snap_state`], called by `step_player`, the one function both sides
//! run), and the client snaps its predictions the same way: what the server
//! sends is exactly what it has, and prediction from it stays bit-exact.
//!
//! Grids and the worst error they make visible:
//! - position: 1/512 m (at most 1 mm off; the arena spans ~70 m, so a
//!   coordinate needs 17 bits);
//! - velocity: 1/256 m/s (at most 2 mm/s);
//! - yaw: 2π/65536 (0.0055°), pitch: 89°/32767 (0.0027°);
//! - timers: 1/4096 s (0.12 ms, far below one 15.6 ms tick);
//! - command axes: 1/127 of full intent.

use std::f32::consts::{PI, TAU};

use crate::cmd::{MAX_PITCH_RAD, UserCmd, wrap_angle};
use crate::player::PlayerState;

/// Position grid step, metres.
pub const POS_STEP_M: f32 = 1.0 / 512.0;
/// Velocity grid step, metres per second.
pub const VEL_STEP_MPS: f32 = 1.0 / 256.0;
/// Timer grid step, seconds.
pub const TIMER_STEP_S: f32 = 1.0 / 4096.0;
/// Distance (step phase) grid step, metres.
pub const DIST_STEP_M: f32 = 1.0 / 4096.0;
/// Steps of a full turn of yaw.
pub const YAW_STEPS: u32 = 1 << 16;
/// Steps of pitch from level to the limit, each way.
pub const PITCH_STEPS: i32 = i16::MAX as i32;
/// Steps of a command axis from still to full, each way.
pub const AXIS_STEPS: i32 = 127;
/// Steps of a tick in a command's render-time offset.
pub const RENDER_OFFSET_STEPS_PER_TICK: f64 = 256.0;

fn to_grid(value: f32, step: f32) -> i32 {
    if value.is_finite() { (value / step).round() as i32 } else { 0 }
}

pub fn pos_to_q(v: f32) -> i32 {
    to_grid(v, POS_STEP_M)
}

pub fn q_to_pos(q: i32) -> f32 {
    q as f32 * POS_STEP_M
}

pub fn vel_to_q(v: f32) -> i32 {
    to_grid(v, VEL_STEP_MPS)
}

pub fn q_to_vel(q: i32) -> f32 {
    q as f32 * VEL_STEP_MPS
}

/// A timer that may run up to a little below zero (the rifle's cooldown
/// carries part of a tick), seconds on the timer grid, within ±8 s.
pub fn signed_timer_to_q(t: f32) -> i16 {
    to_grid(t, TIMER_STEP_S).clamp(-i32::from(i16::MAX), i32::from(i16::MAX)) as i16
}

pub fn q_to_signed_timer(q: i16) -> f32 {
    f32::from(q) * TIMER_STEP_S
}

/// Steps of a click's fraction of a tick.
pub const CLICK_STEPS: f32 = 256.0;

/// A click's fraction on its grid: 0..=511 (two ticks in 1/256 steps).
pub fn click_fraction_to_q(f: f32) -> u16 {
    (if f.is_finite() { f } else { 0.0 } * CLICK_STEPS).round().clamp(0.0, 2.0 * CLICK_STEPS - 1.0) as u16
}

pub fn q_to_click_fraction(q: u16) -> f32 {
    f32::from(q.min(511)) / CLICK_STEPS
}

/// A non-negative timer (seconds) on its grid, up to 16 s.
pub fn timer_to_q(t: f32) -> u16 {
    to_grid(t, TIMER_STEP_S).clamp(0, i32::from(u16::MAX)) as u16
}

pub fn q_to_timer(q: u16) -> f32 {
    f32::from(q) * TIMER_STEP_S
}

/// The quad's time (seconds) on the timer grid, up to [`crate::items::MAX_QUAD_S`]: 18 bits.
pub fn powerup_to_q(t: f32) -> u32 {
    to_grid(t, TIMER_STEP_S).clamp(0, (crate::items::MAX_QUAD_S / TIMER_STEP_S) as i32) as u32
}

pub fn q_to_powerup(q: u32) -> f32 {
    q.min((crate::items::MAX_QUAD_S / TIMER_STEP_S) as u32) as f32 * TIMER_STEP_S
}

pub fn dist_to_q(d: f32) -> u16 {
    to_grid(d, DIST_STEP_M).clamp(0, i32::from(u16::MAX)) as u16
}

pub fn q_to_dist(q: u16) -> f32 {
    f32::from(q) * DIST_STEP_M
}

pub fn yaw_to_q(yaw: f32) -> u16 {
    let turns = (wrap_angle(if yaw.is_finite() { yaw } else { 0.0 }) + PI) / TAU;
    ((turns * YAW_STEPS as f32).round() as u32 % YAW_STEPS) as u16
}

pub fn q_to_yaw(q: u16) -> f32 {
    wrap_angle(f32::from(q) * (TAU / YAW_STEPS as f32) - PI)
}

pub fn pitch_to_q(pitch: f32) -> i16 {
    let p = if pitch.is_finite() { pitch.clamp(-MAX_PITCH_RAD, MAX_PITCH_RAD) } else { 0.0 };
    (p / MAX_PITCH_RAD * PITCH_STEPS as f32).round().clamp(-(PITCH_STEPS as f32), PITCH_STEPS as f32) as i16
}

pub fn q_to_pitch(q: i16) -> f32 {
    f32::from(q) / PITCH_STEPS as f32 * MAX_PITCH_RAD
}

pub fn axis_to_q(a: f32) -> i8 {
    let a = if a.is_finite() { a.clamp(-1.0, 1.0) } else { 0.0 };
    (a * AXIS_STEPS as f32).round() as i8
}

pub fn q_to_axis(q: i8) -> f32 {
    f32::from(q.max(-(AXIS_STEPS as i8))) / AXIS_STEPS as f32
}

/// The hips' twist grid: the yaw's step (2π/65536), so that a view turning
/// however slowly moves it (a coarser grid rounds slow turns away, and
/// overshoots a little faster ones); ±8344 steps at the limit.
pub const TWIST_STEP_RAD: f32 = std::f32::consts::TAU / YAW_STEPS as f32;

pub fn twist_to_q(twist: f32) -> i16 {
    let max = (crate::player::MAX_TWIST_RAD / TWIST_STEP_RAD).round();
    let q = if twist.is_finite() { (twist / TWIST_STEP_RAD).round() } else { 0.0 };
    q.clamp(-max, max) as i16
}

pub fn q_to_twist(q: i16) -> f32 {
    (f32::from(q) * TWIST_STEP_RAD).clamp(-crate::player::MAX_TWIST_RAD, crate::player::MAX_TWIST_RAD)
}

/// A landing's depth grid ([`PlayerState::landing`]): 255 steps, so that it
/// eases off by whole steps every tick at any tick rate (at 128 Hz a tick
/// takes 6.6 steps off).
pub const LANDING_STEPS: u8 = 255;

pub fn landing_to_q(landing: f32) -> u8 {
    let q = if landing.is_finite() { (landing * f32::from(LANDING_STEPS)).round() } else { 0.0 };
    q.clamp(0.0, f32::from(LANDING_STEPS)) as u8
}

pub fn q_to_landing(q: u8) -> f32 {
    f32::from(q) / f32::from(LANDING_STEPS)
}

/// A player's state with every float on its grid.
pub fn snap_state(s: &PlayerState) -> PlayerState {
    let pos = |v: f32| q_to_pos(pos_to_q(v));
    let vel = |v: f32| q_to_vel(vel_to_q(v));
    PlayerState {
        pos: glam::Vec3::new(pos(s.pos.x), pos(s.pos.y), pos(s.pos.z)),
        vel: glam::Vec3::new(vel(s.vel.x), vel(s.vel.y), vel(s.vel.z)),
        yaw: q_to_yaw(yaw_to_q(s.yaw)),
        pitch: q_to_pitch(pitch_to_q(s.pitch)),
        step_phase: q_to_dist(dist_to_q(s.step_phase)),
        fire_cooldown_s: q_to_signed_timer(signed_timer_to_q(s.fire_cooldown_s)),
        reload_s: q_to_timer(timer_to_q(s.reload_s)),
        protected_s: q_to_timer(timer_to_q(s.protected_s)),
        quad_s: q_to_powerup(powerup_to_q(s.quad_s)),
        twist: q_to_twist(twist_to_q(s.twist)),
        landing: q_to_landing(landing_to_q(s.landing)),
        ..*s
    }
}

impl UserCmd {
    /// Puts the command on the wire's grids (axes, angles, the render-time
    /// offset), keeping the move within the unit disc, so that sanitising it
    /// again changes nothing: the server runs exactly what the client
    /// predicted with. The render time is kept only with fire held (nothing
    /// else uses it).
    pub fn quantize(&mut self) {
        let (mut f, mut r) = (i32::from(axis_to_q(self.forward)), i32::from(axis_to_q(self.right)));
        // Rounding up can push a diagonal just outside the disc; step back in.
        while f * f + r * r > AXIS_STEPS * AXIS_STEPS {
            if f.abs() >= r.abs() {
                f -= f.signum();
            } else {
                r -= r.signum();
            }
        }
        self.forward = q_to_axis(f as i8);
        self.right = q_to_axis(r as i8);
        self.yaw = q_to_yaw(yaw_to_q(self.yaw));
        self.pitch = q_to_pitch(pitch_to_q(self.pitch));
        // Only a shot needs to know what was seen: without fire, no render
        // time and no click.
        let fire = self.held(crate::cmd::Buttons::FIRE);
        self.render_tick =
            if fire { render_tick_from_q(self.tick, render_offset_to_q(self.tick, self.render_tick)) } else { 0.0 };
        self.drawn_between = self.drawn_between.filter(|_| fire);
        self.click = self.click.filter(|_| fire).map(|c| crate::cmd::Click {
            fraction: q_to_click_fraction(click_fraction_to_q(c.fraction)),
            yaw: q_to_yaw(yaw_to_q(c.yaw)),
            pitch: q_to_pitch(pitch_to_q(c.pitch)),
        });
    }
}

/// Most a render time may trail its command's tick, in grid steps (256
/// ticks: 2 s at 128 Hz, the view of a client drawing a frame a second at a
/// 250 ms round trip with room to spare; the server bounds every rewind
/// more tightly by its own rules).
pub const MAX_RENDER_OFFSET_Q: u32 = 256 * RENDER_OFFSET_STEPS_PER_TICK as u32;

/// How far the render time trails the command's tick, on its grid; 0 (the
/// tick itself) for an unknown render time, at most [`MAX_RENDER_OFFSET_Q`].
pub fn render_offset_to_q(tick: u32, render_tick: f64) -> u32 {
    if !(render_tick.is_finite() && render_tick > 0.0) {
        return u32::MAX;
    }
    let offset = (f64::from(tick) - render_tick) * RENDER_OFFSET_STEPS_PER_TICK;
    offset.round().clamp(0.0, f64::from(MAX_RENDER_OFFSET_Q)) as u32
}

/// The render time back from its grid offset ([`u32::MAX`]: unknown, 0).
pub fn render_tick_from_q(tick: u32, q: u32) -> f64 {
    if q == u32::MAX {
        return 0.0;
    }
    (f64::from(tick) - f64::from(q.min(MAX_RENDER_OFFSET_Q)) / RENDER_OFFSET_STEPS_PER_TICK).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::Buttons;

    #[test]
    fn snapping_is_idempotent_and_near() {
        let s = PlayerState {
            pos: glam::Vec3::new(12.3456, 0.789, -33.3333),
            vel: glam::Vec3::new(6.54321, -3.0, 0.001),
            yaw: 2.5,
            pitch: -0.4,
            step_phase: 1.234,
            fire_cooldown_s: 0.0937,
            reload_s: 1.2,
            protected_s: 0.5,
            twist: -0.3217,
            landing: 0.61,
            ..PlayerState::default()
        };
        let once = snap_state(&s);
        assert_eq!(snap_state(&once), once, "on the grid it stays put");
        assert!(once.pos.distance(s.pos) <= POS_STEP_M, "{:?}", once.pos);
        assert!((once.yaw - s.yaw).abs() < 1e-4 && (once.pitch - s.pitch).abs() < 1e-4);
        assert!((once.twist - s.twist).abs() <= TWIST_STEP_RAD && (once.landing - s.landing).abs() < 0.002);
    }

    #[test]
    fn a_quantized_command_survives_sanitising_bit_for_bit() {
        let mut rng = crate::rng::SplitMix64::new(4);
        for _ in 0..20_000 {
            let mut cmd = UserCmd {
                tick: 1000,
                forward: rng.range(-1.5, 1.5),
                right: rng.range(-1.5, 1.5),
                yaw: rng.range(-10.0, 10.0),
                pitch: rng.range(-2.0, 2.0),
                buttons: Buttons::FIRE,
                render_tick: 1000.0 - f64::from(rng.range(0.0, 40.0)),
                click: (rng.next_f32() < 0.5).then(|| crate::cmd::Click {
                    fraction: rng.range(-0.5, 1.5),
                    yaw: rng.range(-10.0, 10.0),
                    pitch: rng.range(-2.0, 2.0),
                }),
                // Sometimes a pair out of bounds (dropped), mostly a fair one.
                drawn_between: (rng.next_f32() < 0.7).then(|| {
                    let older = 1000 - (rng.range(0.0, 300.0) as u32);
                    (older, older + rng.range(0.0, 80.0) as u32)
                }),
            };
            cmd.sanitize();
            cmd.quantize();
            let quantized = cmd;
            assert!(!cmd.sanitize().any(), "{quantized:?}");
            assert_eq!(cmd, quantized);
            cmd.quantize();
            assert_eq!(cmd, quantized, "quantizing twice changes nothing");
        }
    }

    #[test]
    fn render_offsets_round_trip_and_unknown_stays_unknown() {
        assert_eq!(render_tick_from_q(100, render_offset_to_q(100, 97.5)), 97.5);
        assert_eq!(render_tick_from_q(100, render_offset_to_q(100, 0.0)), 0.0);
        assert_eq!(render_tick_from_q(100, render_offset_to_q(100, f64::NAN)), 0.0);
        assert_eq!(render_tick_from_q(100, render_offset_to_q(100, 200.0)), 100.0, "never ahead of its tick");
    }
}
