//! Snapshots on the wire: what each client is told of the world after a
//! tick, quantised, delta-coded against the newest snapshot it acknowledged
//! (as Quake 3 does), and packed into bits.
//!
//! - `state`: what a client may know: its own player whole, everyone else
//!   only as drawing and hit effects need them; the feedback on its commands.
//! - `fields`: the field tables of both states (order, widths, how a change
//!   travels, what a delta carries on).
//! - `baseline`: acknowledgements, what a delta is against, and the one
//!   carry rule both ends expect players by.
//! - `priors`: where the model's contexts start (trained, generated).
//! - `model`: the contexts each coded bit lives in, and how a number
//!   becomes bits; the tally that trains the priors.
//! - `codec`: the range-coded bits, with the layout block over [`encode_with`].
//!
//! A delta walks the baseline's players in id order: whether each is where
//! it was expected, whether one that changed left, and for one still here
//! which fields changed, each as a difference from what was expected;
//! newcomers follow whole. Every bit is range-coded in its own context
//! (`model`), starting at priors trained on recorded games: a player where
//! expected, or a field that rarely changes, costs a fraction of a bit.
//! "Expected" is "predict, then send the difference": each player carried on from the baseline at the speed and
//! turn rate it had between an older acknowledged snapshot and the baseline.
//! Without an acknowledged baseline the snapshot is full. A client keeps the
//! snapshots it decoded and says which is its newest in each command packet;
//! the server deltas only against ones the client has, so a lost snapshot
//! never leaves it on a wrong state, it only makes the next delta a little
//! larger.

mod baseline;
mod codec;
mod fields;
mod model;
mod priors;
mod state;

pub use baseline::{Acknowledged, Baseline, MAX_CARRY_TICKS, MAX_MOTION_GAP_TICKS};
pub use codec::{Header, SnapshotError, decode, encode, encode_with, header};
pub use model::{AGE_BUCKETS, Model, Tally, age_bucket};
pub use state::{Feedback, Frame, Others, OwnState, REMOTE_POS_STEP_M, RemoteState};

#[cfg(test)]
mod tests;
