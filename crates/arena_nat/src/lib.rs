//! Asking a home router to forward a UDP port, so that a player hosting from
//! home is reachable without touching the router's settings: UPnP-IGD
//! (SSDP, then SOAP over HTTP), NAT-PMP (RFC 6886) and PCP (RFC 6887).
//!
//! Everything here blocks with a deadline and is meant for a worker thread
//! (the server's `port_mapping.rs`); nothing brings a runtime. Every answer
//! from the router is untrusted input: parsers are bounded and return
//! errors, never panic (fuzzed in `arena_fuzz`).
//!
//! # Modules, bottom up
//!
//! - `gateway`: the default gateway and the local address facing it.
//! - `natpmp`, `pcp`: the two binary protocols' datagrams, pure.
//! - `upnp`: SSDP discovery, the device description, SOAP actions.
//! - `mapper`: one mapping's life: try the methods in turn within a time
//!   budget, renew, remove.

pub mod gateway;
pub mod mapper;
pub mod natpmp;
pub mod pcp;
pub mod upnp;

pub use mapper::{MapError, Mapper, Mapping, Method, Methods};
