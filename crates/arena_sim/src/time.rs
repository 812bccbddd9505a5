//! Ticks: the rate the game runs at, and arithmetic on tick numbers that
//! wrap around.

use serde::{Deserialize, Serialize};

/// Default simulation rate of the whole game, in ticks per second.
pub const DEFAULT_TICK_HZ: u32 = 64;
/// Lowest and highest tick rates the game accepts, in ticks per second.
pub const TICK_HZ_RANGE: std::ops::RangeInclusive<u32> = 10..=128;

/// A rate in ticks (or snapshots) per second, never zero: every conversion
/// between ticks and time goes through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TickRate(u32);

impl Default for TickRate {
    fn default() -> Self {
        Self(DEFAULT_TICK_HZ)
    }
}

impl TickRate {
    /// A rate of `hz` per second; 0 counts as 1.
    pub const fn new(hz: u32) -> Self {
        Self(if hz == 0 { 1 } else { hz })
    }

    pub const fn hz(self) -> u32 {
        self.0
    }

    /// One tick's duration, seconds: the identical `f32` on server and client.
    pub fn dt_s(self) -> f32 {
        1.0 / self.0 as f32
    }

    pub fn ticks_to_s(self, ticks: f64) -> f64 {
        ticks / f64::from(self.0)
    }

    pub fn ticks_to_ms(self, ticks: f64) -> f64 {
        ticks * 1000.0 / f64::from(self.0)
    }

    pub fn s_to_ticks(self, seconds: f64) -> f64 {
        seconds * f64::from(self.0)
    }

    pub fn ms_to_ticks(self, ms: f64) -> f64 {
        ms * f64::from(self.0) / 1000.0
    }

    /// Whole ticks in `seconds`, rounded up (at least 0).
    pub fn ticks_in(self, seconds: f32) -> u32 {
        (seconds.max(0.0) * self.0 as f32).ceil() as u32
    }
}

/// Duration of one tick at `tick_hz`, seconds. Server and client both take the
/// tick length from here so that they simulate with the identical `f32`.
pub fn tick_dt_s(tick_hz: u32) -> f32 {
    TickRate::new(tick_hz).dt_s()
}

/// Whether tick `a` comes after tick `b`, allowing for wrap-around.
pub fn tick_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `a - b` in ticks, allowing for wrap-around.
pub fn tick_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

/// The tick whose low `bits` bits (1 to 31) are `low` nearest `near`: up
/// to half the span of those bits ahead of it, else behind. How a tick
/// sent as its low bits is read back by one who knows about when it is.
pub fn tick_near(low: u32, bits: u32, near: u32) -> u32 {
    let span = 1u32 << bits.clamp(1, 31);
    let ahead = low.wrapping_sub(near) & (span - 1);
    if ahead < span / 2 { near.wrapping_add(ahead) } else { near.wrapping_sub(span - ahead) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_sent_as_its_low_bits_is_placed_nearest_across_the_wrap() {
        for near in [0u32, 5, 2047, 2048, 4095, 100_000, u32::MAX - 3] {
            for off in [-2048i64, -1000, -1, 0, 1, 2047] {
                let tick = (i64::from(near) + off).rem_euclid(1 << 32) as u32;
                assert_eq!(tick_near(tick & 0xfff, 12, near), tick, "{near} {off}");
            }
        }
        // Past half the span it is read as the other side.
        assert_eq!(tick_near(2048 & 0xfff, 12, 0), 0u32.wrapping_sub(2048));
    }

    #[test]
    fn rates_convert_both_ways_and_are_never_zero() {
        let r = TickRate::new(64);
        assert_eq!(r.ticks_to_ms(32.0), 500.0);
        assert_eq!(r.ms_to_ticks(500.0), 32.0);
        assert_eq!(r.s_to_ticks(r.ticks_to_s(10.0)), 10.0);
        assert_eq!(TickRate::new(0).hz(), 1);
        assert_eq!(r.ticks_in(0.1), 7);
    }

    #[test]
    fn tick_order_wraps() {
        assert!(tick_after(0, u32::MAX));
        assert_eq!(tick_diff(1, u32::MAX), 2);
    }
}
