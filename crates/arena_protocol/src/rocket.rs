//! Rockets on the wire: fire data, not an entity per tick (as Photon's
//! samples and Fiedler advise). A launch says who fired, which command,
//! when within it, from where and along what, and how far the server
//! brought it on at once (lag compensation's catch-up); every client flies
//! it from that with the shared flight rule. A blast says where it
//! exploded, whom it hit, and the tick its shooter's own splash lands on.
//! Both are fixed-size bit packs; nothing about a rocket travels per tick.

use arena_sim::PlayerId;
use arena_sim::quant::{pitch_to_q, q_to_pitch, q_to_yaw, yaw_to_q};
use arena_sim::rocket::Launch;
use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::bits::{BitsIn, BitsOut};

/// Position grid of rockets and blasts, metres (at most 2 mm off).
pub const ROCKET_POS_STEP_M: f32 = 1.0 / 256.0;
/// Bits of a rocket coordinate: ±2048 m on its grid, far past any map.
const POS_BITS: u32 = 20;
/// Steps of a tick in a launch's instant: two ticks in 1/256 steps.
const AT_STEPS_PER_TICK: f32 = 256.0;
const AT_BITS: u32 = 9;
/// Bits of the catch-up, milliseconds (at most 511).
const CATCH_UP_BITS: u32 = 9;
/// Most catch-up a launch can say, milliseconds.
pub const MAX_CATCH_UP_MS: u16 = (1 << CATCH_UP_BITS) - 1;
/// Bits of a blast's own-splash tick after the launch (a flight's ticks
/// at 128 Hz fit).
const OWN_TICK_BITS: u32 = 10;

fn pos_to_q(v: f32) -> i32 {
    let max = (1 << (POS_BITS - 1)) - 1;
    if v.is_finite() { ((v / ROCKET_POS_STEP_M).round() as i64).clamp(-max, max) as i32 } else { 0 }
}

fn write_pos(out: &mut BitsOut, p: Vec3) {
    for v in p.to_array() {
        out.signed(POS_BITS, pos_to_q(v));
    }
}

fn read_pos(input: &mut BitsIn) -> Vec3 {
    let mut v = [0.0; 3];
    for c in &mut v {
        *c = input.signed(POS_BITS).unwrap_or(0) as f32 * ROCKET_POS_STEP_M;
    }
    Vec3::from_array(v)
}

/// The full tick nearest `near` whose low 16 bits are `low` (the shared
/// rule, [`arena_sim::tick_near`], for a rocket's 16 bits).
pub fn tick_near(low: u16, near: u32) -> u32 {
    arena_sim::tick_near(u32::from(low), 16, near)
}

/// A rocket fired, as everyone is told (16 bytes): see [`RocketLaunch::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocketLaunch([u8; 16]);

/// A launch as a client reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchInfo {
    /// The command's tick, its low 16 bits (see [`tick_near`]).
    pub tick_low: u16,
    pub origin: Vec3,
    pub dir: Vec3,
    /// When within the command's tick, in ticks from its start (-1..1).
    pub at_ticks: f32,
    /// How far the server brought it on at once, milliseconds.
    pub catch_up_ms: u16,
}

impl LaunchInfo {
    /// The launch on the shared flight rule, for a client at `near` (a tick
    /// near the command's) and tick length `dt_s`.
    pub fn launch(&self, near: u32, dt_s: f32) -> Launch {
        Launch { origin: self.origin, dir: self.dir, tick: tick_near(self.tick_low, near), at_s: self.at_ticks * dt_s }
    }
}

impl RocketLaunch {
    /// Layout (bits): tick low 16 | instant (ticks + 1) × 256 u9 | origin
    /// 3 × s20 (1/256 m) | yaw u16 | pitch s16 | catch-up ms u9 | 0 pad 6.
    pub fn new(launch: &Launch, dt_s: f32, catch_up_ms: u16) -> Self {
        let mut out = BitsOut::new();
        out.unsigned(16, u32::from(launch.tick as u16));
        let at = if dt_s > 0.0 && launch.at_s.is_finite() { launch.at_s / dt_s } else { 0.0 };
        out.unsigned(AT_BITS, ((at + 1.0) * AT_STEPS_PER_TICK).round().clamp(0.0, 511.0) as u32);
        write_pos(&mut out, launch.origin);
        let (yaw, pitch) = arena_sim::look_at(Vec3::ZERO, launch.dir);
        out.unsigned(16, u32::from(yaw_to_q(yaw)));
        out.signed(16, i32::from(pitch_to_q(pitch)));
        out.unsigned(CATCH_UP_BITS, u32::from(catch_up_ms.min(MAX_CATCH_UP_MS)));
        let mut bytes = [0u8; 16];
        let packed = out.finish();
        bytes[..packed.len().min(16)].copy_from_slice(&packed[..packed.len().min(16)]);
        Self(bytes)
    }

    /// What it says: every value finite and within its range, whatever the bytes.
    pub fn read(&self) -> LaunchInfo {
        let mut input = BitsIn::new(&self.0);
        let tick_low = input.unsigned(16).unwrap_or(0) as u16;
        let at_ticks = input.unsigned(AT_BITS).unwrap_or(256) as f32 / AT_STEPS_PER_TICK - 1.0;
        let origin = read_pos(&mut input);
        let yaw = q_to_yaw(input.unsigned(16).unwrap_or(0) as u16);
        let pitch = q_to_pitch((input.signed(16).unwrap_or(0)).clamp(-i32::from(i16::MAX), i32::from(i16::MAX)) as i16);
        let catch_up_ms = input.unsigned(CATCH_UP_BITS).unwrap_or(0) as u16;
        LaunchInfo { tick_low, origin, dir: arena_sim::player::view_forward(yaw, pitch), at_ticks, catch_up_ms }
    }
}

/// A rocket exploded, as everyone is told (12 bytes): see [`RocketBlast::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocketBlast([u8; 12]);

/// A blast as a client reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlastInfo {
    /// The launch's command tick, low 16 bits.
    pub tick_low: u16,
    pub point: Vec3,
    /// Ticks from the launch's command to the one its shooter's own splash
    /// lands on (the shooter's timeline).
    pub own_ticks: u16,
    /// The player it hit, if it hit one.
    pub direct: Option<PlayerId>,
}

impl RocketBlast {
    /// Layout (bits): launch tick low 16 | point 3 × s20 (1/256 m) | own
    /// splash tick - launch tick u10 | direct? [player u8] | 0 pad.
    pub fn new(info: &BlastInfo) -> Self {
        let mut out = BitsOut::new();
        out.unsigned(16, u32::from(info.tick_low));
        write_pos(&mut out, info.point);
        out.unsigned(OWN_TICK_BITS, u32::from(info.own_ticks.min((1 << OWN_TICK_BITS) - 1)));
        out.flag(info.direct.is_some());
        if let Some(id) = info.direct {
            out.unsigned(8, u32::from(id.0));
        }
        let mut bytes = [0u8; 12];
        let packed = out.finish();
        bytes[..packed.len().min(12)].copy_from_slice(&packed[..packed.len().min(12)]);
        Self(bytes)
    }

    pub fn read(&self) -> BlastInfo {
        let mut input = BitsIn::new(&self.0);
        let tick_low = input.unsigned(16).unwrap_or(0) as u16;
        let point = read_pos(&mut input);
        let own_ticks = input.unsigned(OWN_TICK_BITS).unwrap_or(0) as u16;
        let direct =
            if input.flag().unwrap_or(false) { Some(PlayerId(input.unsigned(8).unwrap_or(0) as u8)) } else { None };
        BlastInfo { tick_low, point, own_ticks, direct }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_comes_back_within_its_grids() {
        let dt = 1.0 / 64.0;
        let dir = Vec3::new(0.3, -0.4, -0.8).normalize();
        let launch = Launch { origin: Vec3::new(-12.345, 1.62, 27.001), dir, tick: 0x1_2345, at_s: -0.3 * dt };
        let info = RocketLaunch::new(&launch, dt, 180).read();
        let back = info.launch(0x1_2300, dt);
        assert_eq!(back.tick, launch.tick);
        assert!(back.origin.distance(launch.origin) <= ROCKET_POS_STEP_M);
        assert!(back.dir.distance(dir) < 1e-4, "{} vs {dir}", back.dir);
        assert!((back.at_s - launch.at_s).abs() <= dt / 512.0 + 1e-7);
        assert_eq!(info.catch_up_ms, 180);
        assert_eq!(RocketLaunch::new(&launch, dt, 9000).read().catch_up_ms, MAX_CATCH_UP_MS);
    }

    #[test]
    fn a_blast_comes_back_within_its_grid() {
        let info =
            BlastInfo { tick_low: 65535, point: Vec3::new(3.0, 0.05, -29.9), own_ticks: 17, direct: Some(PlayerId(9)) };
        let back = RocketBlast::new(&info).read();
        assert_eq!((back.tick_low, back.own_ticks, back.direct), (65535, 17, Some(PlayerId(9))));
        assert!(back.point.distance(info.point) <= ROCKET_POS_STEP_M);
        let none = RocketBlast::new(&BlastInfo { direct: None, ..info }).read();
        assert_eq!(none.direct, None);
    }

    #[test]
    fn any_bytes_read_as_finite_bounded_values() {
        let mut seed = 0x9e37_79b9_u32;
        for _ in 0..5000 {
            let mut bytes = [0u8; 16];
            for b in &mut bytes {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                *b = seed as u8;
            }
            let l = RocketLaunch(bytes).read();
            assert!(l.origin.is_finite() && l.dir.is_finite() && (l.dir.length() - 1.0).abs() < 1e-3);
            assert!((-1.0..1.0).contains(&l.at_ticks) && l.catch_up_ms <= MAX_CATCH_UP_MS);
            let mut twelve = [0u8; 12];
            twelve.copy_from_slice(&bytes[..12]);
            let b = RocketBlast(twelve).read();
            assert!(b.point.is_finite() && b.point.abs().max_element() <= 2048.0);
        }
    }

    #[test]
    fn ticks_come_back_near_the_clock_across_the_wrap() {
        assert_eq!(tick_near(5, 70_000), 65_541);
        assert_eq!(tick_near(65_530, 65_540), 65_530);
        assert_eq!(tick_near(3, u32::MAX - 2), 3);
    }
}
