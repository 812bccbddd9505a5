//! A TURN client (RFC 8656, over STUN, RFC 8489), sans-IO: one allocation
//! on one relay, for a player or host that no direct path reaches. The
//! caller owns the socket and the clock; [`Relay`] turns datagrams from
//! the relay and the time into events and datagrams to send. Allocation
//! with the long-term credential mechanism (401, then signed requests;
//! stale nonces), REST credentials for coturn's `--use-auth-secret`,
//! permissions and channel bindings kept refreshed, Send indications and
//! ChannelData both ways.
//!
//! Everything from the relay is untrusted: a datagram over 1500 bytes is
//! refused, every parser is bounded and never panics (fuzzed in
//! `arena_fuzz`), a response counts only if it answers a request in flight
//! (random 96-bit transaction IDs) and, for signed requests, carries a
//! MESSAGE-INTEGRITY that checks out; data counts only from peers whose
//! permission the relay granted.
//!
//! # Modules, bottom up
//!
//! - `credentials`: the credentials, TURN REST credentials, the long-term
//!   key, HMAC-SHA1, base64.
//! - `message`: the STUN codec: a bounded reader, MESSAGE-INTEGRITY and
//!   FINGERPRINT checks, a writer.
//! - `channel_data`: ChannelData framing; telling the relay's datagrams
//!   apart.
//! - `events`: what an allocation tells its caller, and its errors in words.
//! - `relay`: the allocation's state machine: transactions, retransmissions,
//!   refreshes, permissions, channels.
//! - `fuzzing`: what `arena_fuzz` drives besides the API: the bare parsers
//!   and answers made to order.

mod channel_data;
mod credentials;
mod events;
pub mod fuzzing;
mod message;
mod relay;

pub use channel_data::{
    TurnDatagram, classify, encode as frame_channel_data, is_turn_datagram, parse as parse_channel_data,
};
pub use credentials::{Credentials, rest_credentials};
pub use events::{Event, TurnError, code_in_words};
pub use message::MAX_DATAGRAM;
pub use relay::{MAX_CHANNELS, MAX_PERMISSIONS, Relay};
