//! Demos run again: a demo file's recorded commands replayed through the
//! shared rules (`arena_sim::step_player`) and checked against what the
//! server recorded, and a made-up demo for tests. It sits above the wire
//! format (`arena_protocol::demo`, `arena_protocol::demo_frame`), which
//! reads and writes demos but runs no simulation.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `example`: a demo as a server records one, made up, for tests, fuzz
//!   seeds and benchmarks.
//! - `replay`: a demo replayed, seeking, and `arena demo verify`'s check.

mod example;
mod replay;

pub use example::example_demo;
pub use replay::{
    Mismatch, Replay, ReplayError, ReplayWorld, Replayed, chunk_frames, verify, verify_file, verify_file_with_maps,
    verify_with_maps, world_of,
};
// Types other crates reach through the items above (returned, carried
// in fields or messages): nameable, though none names them yet.
pub use replay::{ReplayPlayer, VerifyReport};
