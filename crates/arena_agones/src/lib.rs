//! `arena-agones`: a sidecar that tells Agones how an Arena server is doing.
//! It learns the server's state the way any tool would, through A2S queries
//! on the game port (`arena_query`), and reports it with the official
//! `agones` SDK: Ready once the server answers, a health ping each time it
//! answers, the people playing (player tracking, and a `players` label), the
//! map as a label, and Shutdown when the server stops answering.
//!
//! # Modules, bottom up
//!
//! - `a2s`: one look at a server over UDP: info and players, challenges
//!   answered, the two counts checked against each other.
//! - `tracking`: who came and who left between two looks (pure).
//! - `report`: what goes to Agones, and what to do when a part of the SDK
//!   is not there (player tracking is an alpha feature, off by default).
//! - `sidecar`: the loop: look, report, and when to stop.

pub mod a2s;
pub mod report;
pub mod sidecar;
pub mod tracking;
