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
//! - `items`: what the map's items give, who may take one, armour and the
//!   quad, and an item's state on a server (taken when, by whom).
//! - `pose`: the body's joints as a pure function of a player's state.
//! - `hitbox`: capsules on the pose (head, torso, pelvis, limbs), and rays
//!   against them.
//! - `interpolation`: how a remote player is drawn between and past its
//!   snapshots, the rule lag compensation rewinds by too; the history both
//!   keep.
//! - `weapon`: the two weapons' rules (rate, magazine, switching).
//! - `quant`: the grids states and commands travel on.
//! - `map`, `world`: the arena's data (with its items, jump pads and
//!   teleporters) and its collision world.
//! - `movement`: the one step both ends run: movement (jump pads and
//!   teleporters included), then the weapon, snapped to the grids.
//! - `rocket`: a rocket's flight, what it meets, its splash and knockback.
//! - `spawn`, `nav`: spawn choice and the bots' navigation graph.
//! - `map_check`: whether a map file is playable, in words (bounds and
//!   counts, the map's rules, spawns, the navigation graph's islands).

pub mod cmd;
pub mod hitbox;
pub mod interpolation;
pub mod items;
pub mod map;
pub mod map_check;
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
pub use items::{ItemKind, ItemSlot, Taken};
pub use map::{ItemDef, JumpPadDef, MapDef, SpawnPoint, TeleporterDef};
pub use movement::{MoveEvents, TickEvents, move_player, step_player};
pub use player::{PlayerId, PlayerState, Weapon, look_at, yaw_towards};
pub use spawn::pick_spawn;
pub use time::{DEFAULT_TICK_HZ, TICK_HZ_RANGE, TickRate, tick_after, tick_diff, tick_dt_s, tick_near};
pub use weapon::{Aim, Shot, WeaponEvents};
pub use world::ArenaWorld;
