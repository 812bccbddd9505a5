//! The tick: the game itself, once per tick of the fixed clock (the order
//! of a frame is in `lib.rs`): commands in, movement, lag compensation,
//! shots and rockets, deaths and respawns, the match, snapshots out, the
//! demo. It hears and speaks to players through renet (`net`, and the
//! socket's `transport`) and knows nothing of masters, routers or queries:
//! that is the `internet` wing, which knows nothing of it either.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `intake`: decoding and checking commands into each player's buffer.
//! - `life`: the one place a player dies and the one place one respawns.
//! - `range`: the shooting range's targets moved along their lanes; each
//!   shooter's tally and misses.
//! - `lag_compensation`: the hitbox history, and for each shot what its
//!   shooter saw (the render-time estimate, the bounds, the rewind).
//! - `combat`: the shot rules (walls, hitboxes, damage) on what lag
//!   compensation gave each shot.
//! - `rockets`: rockets launched (the catch-up), flown, and their splash.
//! - `kill_cam`: everyone's last seconds, and each victim's kill-cam.
//! - `match_flow`: frags, the match clock and phases, the scoreboard.
//! - `items`: the map's items on their timers (all back at a new map or
//!   match); who takes each (the first command to touch it in server ticks).
//! - `sides`: who plays (for which team) and who watches; choices, the
//!   balance of teams, the duel's queue.
//! - `chat`: chat lines cleaned, rate-limited, passed on and logged; a
//!   bot's "gg" when a match ends.
//! - `voice`: voice frames within their talker's budget passed on to those
//!   the routing lets hear them; the server's switch and mutes.
//! - `votes`: votes called, answered and counted; one that passes runs as
//!   a console line.
//! - `simulation`: the tick, and every player's command through the shared movement.
//! - `roster`: players joining (clients and bots) and leaving.
//! - `bots`: server-side bots' minds.
//! - `rotation`: maps in turn at a match's end (or the one the console
//!   asked for): the world, the navigation graph, the clients told.
//! - `map_upload`: a map from a file sent to the clients that lack it;
//!   their players held out of the world until they have it.
//! - `console`: the server's console (its terminal, the remote console's
//!   checked lines): variables and commands run on the game.
//! - `snapshots`: what each client is sent after a tick.
//! - `demo_recording`: each match into a demo file (`--record DIR`).

pub(crate) mod bots;
pub(crate) mod chat;
pub(crate) mod combat;
pub(crate) mod console;
pub(crate) mod demo_recording;
pub(crate) mod intake;
pub(crate) mod items;
pub(crate) mod kill_cam;
pub(crate) mod lag_compensation;
pub(crate) mod life;
pub(crate) mod map_upload;
pub(crate) mod match_flow;
pub(crate) mod range;
pub(crate) mod rockets;
pub(crate) mod roster;
pub(crate) mod rotation;
pub(crate) mod sides;
pub(crate) mod simulation;
pub(crate) mod snapshots;
pub(crate) mod voice;
pub(crate) mod votes;
