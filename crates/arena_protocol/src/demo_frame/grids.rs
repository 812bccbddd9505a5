//! The wire's grids as integer adapters for the varint coding; hit zones.
//!
//! Each grid of [`arena_sim::quant`] as a pair of functions (to a widened
//! integer, and back); a hit zone as a byte.

use arena_sim::HitZone;
use arena_sim::quant;

use super::model::FrameError;

// Each grid as a pair (to integer, back), the integers widened; a value
// whose integer does not fit its type goes as exact bits.
pub(super) fn pos_q(v: f32) -> i64 {
    i64::from(quant::pos_to_q(v))
}
pub(super) fn pos_f(q: i64) -> f32 {
    i32::try_from(q).map_or(f32::NAN, quant::q_to_pos)
}
pub(super) fn vel_q(v: f32) -> i64 {
    i64::from(quant::vel_to_q(v))
}
pub(super) fn vel_f(q: i64) -> f32 {
    i32::try_from(q).map_or(f32::NAN, quant::q_to_vel)
}
pub(super) fn yaw_q(v: f32) -> i64 {
    i64::from(quant::yaw_to_q(v))
}
pub(super) fn yaw_f(q: i64) -> f32 {
    u16::try_from(q).map_or(f32::NAN, quant::q_to_yaw)
}
pub(super) fn pitch_q(v: f32) -> i64 {
    i64::from(quant::pitch_to_q(v))
}
pub(super) fn pitch_f(q: i64) -> f32 {
    i16::try_from(q).map_or(f32::NAN, quant::q_to_pitch)
}
pub(super) fn dist_q(v: f32) -> i64 {
    i64::from(quant::dist_to_q(v))
}
pub(super) fn dist_f(q: i64) -> f32 {
    u16::try_from(q).map_or(f32::NAN, quant::q_to_dist)
}
pub(super) fn stimer_q(v: f32) -> i64 {
    i64::from(quant::signed_timer_to_q(v))
}
pub(super) fn stimer_f(q: i64) -> f32 {
    i16::try_from(q).map_or(f32::NAN, quant::q_to_signed_timer)
}
pub(super) fn timer_q(v: f32) -> i64 {
    i64::from(quant::timer_to_q(v))
}
pub(super) fn timer_f(q: i64) -> f32 {
    u16::try_from(q).map_or(f32::NAN, quant::q_to_timer)
}
pub(super) fn powerup_q(v: f32) -> i64 {
    i64::from(quant::powerup_to_q(v))
}
pub(super) fn powerup_f(q: i64) -> f32 {
    u32::try_from(q)
        .ok()
        .filter(|q| *q == quant::powerup_to_q(quant::q_to_powerup(*q)))
        .map_or(f32::NAN, quant::q_to_powerup)
}
pub(super) fn twist_q(v: f32) -> i64 {
    i64::from(quant::twist_to_q(v))
}
pub(super) fn twist_f(q: i64) -> f32 {
    i16::try_from(q).map_or(f32::NAN, quant::q_to_twist)
}
pub(super) fn landing_q(v: f32) -> i64 {
    i64::from(quant::landing_to_q(v))
}
pub(super) fn landing_f(q: i64) -> f32 {
    u8::try_from(q).map_or(f32::NAN, quant::q_to_landing)
}

pub(super) fn zone_byte(z: HitZone) -> u8 {
    match z {
        HitZone::Head => 0,
        HitZone::Body => 1,
        HitZone::Limb => 2,
    }
}

pub(super) fn zone_of(b: u8) -> Result<HitZone, FrameError> {
    match b {
        0 => Ok(HitZone::Head),
        1 => Ok(HitZone::Body),
        2 => Ok(HitZone::Limb),
        _ => Err(FrameError::Invalid { what: "hit zone" }),
    }
}
