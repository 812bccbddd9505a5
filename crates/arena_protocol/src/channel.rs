//! The renet channel ids, the same numbers in both directions.

/// Join, leave, welcome: reliable and ordered.
pub const RELIABLE: u8 = 0;
/// Commands (client to server) and snapshots (server to client): newest wins.
pub const UNRELIABLE: u8 = 1;
