//! The internet wing: how strangers find and reach this server, apart from
//! its players' connections: the answers to server queries, the port
//! mapping, the listing on masters, the reachability check and hole
//! punching (every file of which `hole_punch.rs` names). It talks through
//! the socket and writes the reach report (`reach_report`); it knows
//! nothing of the tick, which knows nothing of it.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `queries`: what server queries (A2S) and masters (`infoResponse`) are told.
//! - `port_mapping`: asking the home router for the game's port.
//! - `master_list`: being listed on internet masters: heartbeats, the farewell.
//! - `hole_punch`: a master's introductions taken, within bounds, and the
//!   probes sent.
//! - `reach_check`: whether strangers can reach the server, asked of its
//!   first master.
//! - `master_messages`: every message from a master, each to the module it
//!   is for.

pub(crate) mod hole_punch;
pub(crate) mod master_list;
pub(crate) mod master_messages;
pub(crate) mod port_mapping;
pub(crate) mod queries;
pub(crate) mod reach_check;
