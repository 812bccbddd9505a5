//! The limits on introductions for hole punching, one figure for both ends:
//! the master introduces clients to one server at most this often, and a
//! server takes introductions (and sends its probes) at most this often, so
//! that neither a master nor a forger can make a server spray probes.

/// Introductions to (and taken by) one server a second.
pub const INTRODUCTIONS_PER_S: f64 = 8.0;
/// Introductions in a burst, the budget's size.
pub const INTRODUCTION_BURST: f64 = 16.0;
