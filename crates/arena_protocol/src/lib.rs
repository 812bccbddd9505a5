//! What travels between the Arena server and its clients: the messages, the
//! renet channels they use, and the codec that turns them into bytes and back
//! (bincode with size limits; everything received is untrusted).
//!
//! # Modules, bottom up
//!
//! - `channel`: the renet channels, the same numbers both ways.
//! - `codec`: bincode 2 with a size limit and no trailing bytes.
//! - `bounds`: what a value from the network or a demo must be to be
//!   simulated and drawn (positions, speeds, poses).
//! - `console`: the console's language (variables with ranges, commands,
//!   `exec` with limits, completion), shared by the game's console, the
//!   server's and the remote console.
//! - `key`: the netcode key (open, or derived from a password with Argon2id).
//! - `names`: player names: cleaning, look-alikes, bots, user data.
//! - `chat`: chat lines: their length, what cleaning takes out, refusals.
//! - `modes`: free-for-all, team deathmatch and duel; sides (teams,
//!   watching, the duel's queue); who may hurt whom; the balance of teams.
//! - `bits`: bit-level packing (bitstream-io) for the command packet.
//! - `range_coder`: a binary range coder with adaptive contexts (LZMA's):
//!   nearly certain bits for a fraction of a bit each, for snapshots.
//! - `rocket`: rockets as fire data: a launch and a blast, bit-packed.
//! - `kill_cam`: the two-view kill-cam's message: the killer's track and
//!   the fatal shot, and their checks.
//! - `map_transfer`: maps named by hash, sent in chunks, put together
//!   with limits (a server's own map to a client without it).
//! - `vote`: votes' calls, their status, refusals and the majority rule.
//! - `voice`: voice frames (20 ms of Opus, numbered), their size and each
//!   talker's budget.
//! - `messages`: the messages each way, their limits (players, names,
//!   lengths) and their structural checks.
//! - `snapshot`: snapshots quantised, delta-coded and packed: what each
//!   client may know (`state`), the field tables (`fields`), what a delta is
//!   against and expects (`baseline`), and the bits (`codec`).
//! - `command_packet`: the commands and snapshot acknowledgement each tick;
//!   the guess at a command's view it and the demo frames code against.
//! - `datagram`: the shape of a netcode datagram, before renetcode parses it;
//!   connection tokens opened and resealed; the refusal a server sends.
//! - `rcon`: the remote console's datagrams (challenge and the server's
//!   salt, command, answer, refusal), its key (Argon2id under that salt)
//!   and the seals (XChaCha20-Poly1305) of its commands and answers.
//! - `payload_guard`: the shape of a renet packet, before renet parses it.
//! - `bundle`: a frame's renet packets in one datagram.
//! - `ack_pace`: when renet's packets ride a datagram (its
//!   acknowledgements only when they matter).
//! - `wire_anatomy`: where a datagram's bytes go (netcode, the bundle,
//!   renet's framing, acknowledgements, messages), for the lab.
//! - `web_link`: a browser's join link (`#join=ADDRESS&cert=HASH`),
//!   written by the server and read by the page.
//! - `web_frame`: how a netcode datagram crosses WebTransport (a datagram
//!   when it fits, else a length-prefixed frame on a stream), both ends.
//! - `demo_frame`: what one tick of a demo holds, and its compact coding.
//! - `demo`: the demo file: frames in compressed, checked chunks with an
//!   index for seeking; read with limits. Replaying one runs the simulation,
//!   so that lives above this crate, in `arena_replay`.
//!
//! `query` is no module of this crate: it is the `arena_query` crate (server
//! queries, Valve's A2S, for browsers and trackers; std only), which the
//! `arena-agones` sidecar reads servers with too, without building the game.

pub mod ack_pace;
pub mod bits;
pub mod bounds;
pub mod bundle;
pub mod channel;
pub mod chat;
pub mod codec;
pub mod command_packet;
pub mod console;
pub mod datagram;
pub mod demo;
pub mod demo_frame;
pub mod key;
pub mod kill_cam;
pub mod map_transfer;
pub mod messages;
pub mod modes;
pub mod names;
pub mod payload_guard;
pub mod range_coder;
pub mod rcon;
pub use arena_query as query;
pub mod rocket;
pub mod snapshot;
pub mod voice;
pub mod vote;
pub mod web_frame;
pub mod web_link;
pub mod wire_anatomy;

pub use codec::{decode, encode};
pub use messages::*;
// Types other crates reach through the items above (returned, carried
// in fields or messages): nameable, though none names them yet.
pub use codec::DecodeError;

use std::time::Duration;

use renet::{ChannelConfig, ConnectionConfig, SendType};

/// Bumped whenever a message changes shape, so old and new builds refuse each other.
pub const PROTOCOL_VERSION: u64 = 24;
/// netcode's protocol id: "ARENA" and the version. A client with another id is
/// ignored by the server's netcode layer.
pub const PROTOCOL_ID: u64 = 0x4152_454e_4100_0000 | PROTOCOL_VERSION;

/// Default UDP port of a server.
pub const DEFAULT_PORT: u16 = 27015;

/// How long a reliable message waits for its acknowledgement before renet
/// sends it again. renet's timer is fixed, not measured from the round trip,
/// so it is set above the round trips the game is built for (the link
/// conditioner's "poor" preset is 200 ms): at 100 ms, a round trip of 150 ms
/// sent every reliable message twice, the copy racing the acknowledgement
/// already on its way (`arena lab bandwidth --fake-latency-ms 150`: 35.8
/// kbit/s down at 100 ms, 33.7 at 250). A message that is really lost
/// arrives this much later; none of them (scores, kill feed, hit results)
/// is urgent to the frame.
pub const RELIABLE_RESEND: Duration = Duration::from_millis(250);

/// Memory a renet channel may hold, bytes (for reliable messages: those
/// sent and not yet acknowledged).
pub const CHANNEL_MEMORY_BYTES: usize = 1024 * 1024;

/// The renet configuration both ends must share.
pub fn connection_config() -> ConnectionConfig {
    let channels = || {
        vec![
            ChannelConfig {
                channel_id: channel::RELIABLE,
                max_memory_usage_bytes: CHANNEL_MEMORY_BYTES,
                send_type: SendType::ReliableOrdered { resend_time: RELIABLE_RESEND },
            },
            ChannelConfig {
                channel_id: channel::UNRELIABLE,
                max_memory_usage_bytes: CHANNEL_MEMORY_BYTES,
                send_type: SendType::Unreliable,
            },
        ]
    };
    ConnectionConfig {
        available_bytes_per_tick: 256 * 1024,
        server_channels_config: channels(),
        client_channels_config: channels(),
    }
}
