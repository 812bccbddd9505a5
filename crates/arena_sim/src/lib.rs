//! The shared rules of Arena: user commands, player state, the one movement
//! function that the server and the client both run, and the arena map.
//!
//! Nothing here renders, touches the network or depends on Bevy: the same code
//! runs in the authoritative server, in client-side prediction and in tests,
//! and gives bit-identical results for identical inputs on one machine.

pub mod cmd;
pub mod map;
pub mod movement;
pub mod player;
pub mod spawn;
pub mod world;

pub use cmd::{Buttons, UserCmd};
pub use map::{MapDef, SpawnPoint};
pub use movement::{MoveEvents, move_player};
pub use player::{PlayerId, PlayerState};
pub use spawn::pick_spawn;
pub use world::ArenaWorld;

/// Default simulation rate of the whole game, in ticks per second.
pub const DEFAULT_TICK_HZ: u32 = 64;
/// Lowest and highest tick rates the game accepts, in ticks per second.
pub const TICK_HZ_RANGE: std::ops::RangeInclusive<u32> = 10..=128;

/// Duration of one tick at `tick_hz`, seconds. Server and client both take the
/// tick length from here so that they simulate with the identical `f32`.
pub fn tick_dt_s(tick_hz: u32) -> f32 {
    1.0 / tick_hz.max(1) as f32
}

/// Whether tick `a` comes after tick `b`, allowing for wrap-around.
pub fn tick_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `a - b` in ticks, allowing for wrap-around.
pub fn tick_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}
