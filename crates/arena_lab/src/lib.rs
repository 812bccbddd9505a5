//! The lab: everything that drives Arena's netcode from outside, through the
//! public API of `arena_server` and `arena_client` only.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `harness`: headless server and client Apps over real UDP on 127.0.0.1,
//!   stepped by hand; hand-made hostile clients and servers.
//! - `bot_clients`: `arena bots`, headless network clients that play by a
//!   script (not the server's own bots).
//! - `experiments`: `arena lab prediction|hitreg|interpolation|bandwidth|...`,
//!   each a repeatable run that returns a report, and `sweep`, which runs
//!   them over round trips and loss and draws the charts.

pub mod bot_clients;
pub mod experiments;
pub mod harness;
