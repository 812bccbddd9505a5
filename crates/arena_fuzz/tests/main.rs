//! arena_fuzz's integration tests, in one binary: the bounded run of every
//! target (`bounded`) and rcon's round trip (`rcon_round_trip`).

mod bounded;
mod rcon_round_trip;
