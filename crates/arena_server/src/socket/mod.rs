//! The game's one UDP socket, below both wings: players, server queries and
//! masters all come in through it, each datagram judged by the guard before
//! netcode and renet see it. The tick reads and sends players' messages
//! through it; the internet wing talks to masters and strangers through it.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `server_info`: where a started server listens and what it shares (the
//!   browsers' links among them), and why one could not start.
//! - `rate_limits`: token buckets, per address and bounded.
//! - `drops`: what the guard drops, by reason, and its counters.
//! - `guard`: the datagram guard's bookkeeping (rate limits, pending
//!   connections, issued ids, per-client tallies, the log summary).
//! - `answers`: what queries and `getinfo` are answered, encoded ahead.
//! - `remote_console`: the rcon gate: challenges, MACs checked, replays
//!   and floods refused, answers MACed (no Bevy).
//! - `transport`: the socket, netcode and renet behind the guard.
//! - `binding`: the socket opened, the transport inserted, the addresses
//!   clients can use.
//! - `master_traffic`: heartbeats to masters, what only they are told, and
//!   their extension's messages handed on.
//! - `farewell`: the last word to the masters on a clean stop.

mod answers;
pub(crate) mod binding;
pub(crate) mod drops;
mod farewell;
pub(crate) mod guard;
mod master_traffic;
pub(crate) mod rate_limits;
pub(crate) mod remote_console;
pub(crate) mod server_info;
pub(crate) mod transport;
