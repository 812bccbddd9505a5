//! Arena's internet master server: the dpmaster protocol (as dpmaster's
//! `doc/techinfo.txt` defines it), so that servers anywhere can be listed
//! and found, and Quake-family tools (qstat) read the list too. Its state
//! and parsing are pure and headless (fuzzed in `arena_fuzz`); the socket
//! loop is thin. Game servers and browsers use its wire format too.
//!
//! # Modules, bottom up
//!
//! - `credit`: the no-reflection rule: a byte credit per address.
//! - `budget`: budgets by network: token buckets per target, client
//!   network and client address, reusable for any kind of grant.
//! - `wire`: the datagrams both ways (heartbeat, getinfo, infoResponse,
//!   getservers, getserversExt and their answers), bounded parsers.
//! - `reach`: Arena's extension: the reachability check and introductions
//!   for hole punching.
//! - `introductions`: the master's cookies and budgets for introductions.
//! - `table`: the master's state: challenges, listings, caps, the
//!   no-reflection byte credit, list continuations, counters;
//!   `table/lists.rs` the lists for clients, `table/counters.rs` the
//!   counters and the summary line, `table/extension.rs` its side of
//!   Arena's extension, `table/relay.rs` the relay's credentials and the
//!   peers it admits.
//! - `serve`: the socket loop.

mod budget;
mod credit;
mod introductions;
pub mod reach;
pub mod serve;
pub mod table;
pub mod wire;

pub use serve::{bind, serve};
pub use table::{Master, MasterConfig, RelayConfig};
pub use wire::{GetInfo, InfoString, ServerQuery};
// Types other crates reach through the items above (returned, carried
// in fields or messages): nameable, though none names them yet.
pub use table::{Listing, MasterCounters};
pub use wire::{ServersPart, ToMaster, WireError};
