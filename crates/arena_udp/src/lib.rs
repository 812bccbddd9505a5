//! The UDP toolkit below the master, the game server and the client: what
//! every process of Arena that speaks UDP needs the same way. One socket
//! for both address families and every address in its canonical form; the
//! keys rate limits count by; which addresses a server list may carry;
//! looking masters up; the receive errors that lose a datagram at most; the
//! introduction limits that the master grants and a server accepts alike;
//! and a clean stop on SIGTERM and SIGINT, which each of those processes
//! (the master, the dedicated server, the game) handles the same way.
//!
//! Plain functions and constants on std, socket2 (for `IPV6_V6ONLY`, which
//! std cannot set), if-addrs and signal-hook; no Bevy. In a browser (wasm32) the
//! sockets are the in-page network's and there are no signals.
//!
//! # Modules, bottom up
//!
//! - `memory`: the in-page network (the web build's sockets).
//! - `socket`: sockets for both address families (in a browser, the
//!   in-page network's); canonical addresses; the receive and send errors
//!   to shrug off; the keys rate limits count by; which addresses a list may
//!   carry; looking masters up.
//! - `interfaces`: this machine's interface addresses (none in a browser).
//! - `introductions`: the limits on introductions for hole punching.
//! - `signals`: a stop flag set by SIGTERM and SIGINT.
//! - `web_peers`: browser sessions as peers: their addresses (which no UDP
//!   datagram can claim) and the link a server reaches them through.

mod interfaces;
mod introductions;
pub mod memory;
mod signals;
mod socket;
mod web_peers;

pub use interfaces::{Interface, interfaces};
pub use introductions::{INTRODUCTION_BURST, INTRODUCTIONS_PER_S};
pub use signals::stop_on_signals;
pub use socket::{
    UdpSocket, bind_udp, canonical, is_joinable, is_local, is_transient, is_v6, limit_key, parse_socket_addr,
    port_out_of_range, recv_from, resolve, send_to,
};
pub use web_peers::{WebCounts, WebLink, is_web_peer, web_peer_addr, web_session};
