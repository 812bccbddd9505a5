//! What one tick of a demo holds, and its compact encoding: every player's
//! command (coded against the one the player's last two lead to expect, as
//! the command packet does), a player's state only where the server changed it
//! outside the shared rules (a hit, a death, a respawn, a blast's kick),
//! the tick's shots, frags, rockets, blasts and chat lines, who joined and left, and
//! once a second a keyframe with everyone's whole state (to seek to, and
//! to check a replay against).
//!
//! Frames are coded in byte-aligned varints (DEFLATE then finds the
//! repeats); a command is coded against the previous ones of its player
//! *in the same chunk*, so a [`FrameCodec`] is reset at each chunk's start
//! and a chunk decodes on its own. Floats sit on their wire grids
//! ([`arena_sim::quant`]) and travel as grid integers; any that is off its
//! grid travels as its exact bits, so decoding gives back every value bit
//! for bit. Decoding is of untrusted bytes: every count is bounded, and a
//! damaged frame is a [`FrameError`], never a panic.
//!
//! # Files, bottom up
//!
//! - `model`: what a frame holds, the limits of its lists, [`FrameError`].
//! - `varint`: the bytes: varints, exact floats, names, a float on its grid.
//! - `grids`: each wire grid as a pair of integer adapters; hit zones.
//! - `state`: a player's state coded whole; [`same_state`].
//! - `command`: a command on its grids and the one expected (the command
//!   packet's guess, shared from `crate::command_packet`), or as its bits.
//! - `player_tick`: a player's tick: the command against the expected one,
//!   the states the server changed.
//! - `codec`: [`FrameCodec`], the frame's layout, encoding and decoding.

mod codec;
mod command;
mod grids;
mod model;
mod player_tick;
mod state;
mod varint;

pub use codec::{FRAG_SCORE_FORMAT, FrameCodec};
pub use model::{
    DemoBlast, DemoChat, DemoFrag, DemoFrame, DemoHit, DemoPlayerInfo, DemoRocket, DemoShot, FragScore, FrameError,
    KeyPlayer, MAX_DEMO_NAME_BYTES, MAX_FRAME_CHAT, MAX_FRAME_EVENTS, MAX_FRAME_PLAYERS, PlayerTick,
};
pub use state::same_state;
