//! The client's netcode, headless: connecting through a link conditioner,
//! turning local input into one user command per tick, keeping the client's
//! clock just ahead of the server's, predicting and reconciling the local
//! player, and replicating the server's snapshots into entities. The window,
//! the camera and the models live in `arena_view`; tests and experiments
//! drive this crate with no window at all.
//!
//! # Modules, bottom up (each imports only those above it in this list)
//!
//! - `vocabulary`: the session, and the shared components, resources and
//!   messages ([`Drawn`] among them: where each player is drawn).
//! - `conditioner`: fake latency, jitter and loss.
//! - `hole_punch`: asking masters for an introduction to a silent server,
//!   and the advice when every way fails.
//! - `link`: the socket off the frame: its I/O thread, arrival times,
//!   departures at their time, the conditioner.
//! - `relay`: a connection's allocation on the master's TURN server, and
//!   the link's route through it once the server's probe came.
//! - `transport`: the datagram guard, netcode and renet over the link.
//! - `settings`: the paper's switches and the conditioner's settings.
//! - `console`: the console's variables in the paper's words, each over one
//!   of those settings; `help`, `find`, closest names, `exec` with a depth
//!   limit (no Bevy).
//! - `connection`: connecting, leaving, and every way a connection ends.
//! - `interp_delay`: the adaptive interpolation delay (the need of each gap
//!   between snapshots, and the delay that covers nearly all of them).
//! - `command_clock`: the client tick, the hold, the fixed timestep and the
//!   clock sync (its head start from the measured jitter).
//! - `render_clock`: the estimate of the server's clock, and the server time
//!   remote players are drawn at.
//! - `interpolation`: remote players drawn between snapshots.
//! - `round_trip`: the round trip from commands' departures and snapshots'
//!   arrivals, less the server's hold.
//! - `sub_tick_shots`: where a click falls between ticks, and the frame and
//!   the others it was made at.
//! - `scoreboard`: the scoreboard and the match's state.
//! - `commands`: input into one command per tick; the window of
//!   unacknowledged commands, and sending it.
//! - `prediction`: the predicted states, reconciliation, and where the local
//!   player is drawn.
//! - `messages`: the connection's traffic each frame: the transport pumped
//!   in and out, and what the server sends decoded, checked and routed.
//! - `roster`: who is on the server (the welcome, joins, leaves).
//! - `map_download`: the server's map, built in, cached or fetched and
//!   checked; the server told once it is loaded.
//! - `replication`: the newest snapshot into entities.
//! - `drawn`: the frame a drawn body dies, comes back, goes through a
//!   teleporter or is thrown by a jump pad.
//! - `pickups`: our pickups predicted, heard once and judged; everyone
//!   else's heard and told.
//! - `foreseen_hits`: the hit foreseen at the click, and its tally against
//!   the server's verdicts.
//! - `combat`: our shots and the server's verdicts, damage, kills.
//! - `sent_settings`: our netcode choices told to the server.
//! - `rockets`: our rockets predicted and matched, others' drawn, blasts,
//!   our own splash into the prediction.
//! - `kill_cam`: the server's account of our death, kept for the view; skips.
//! - `chat`: what the player says, sent; what the server passed on, kept.
//! - `voice`: push-to-talk frames coded and sent; talkers' frames held in
//!   jitter buffers, decoded and mixed (not in the browser's build).
//! - `votes`: our calls and ballots sent; the vote as the server tells it.
//! - `spectating`: the side we ask for; whom a watcher follows, and how.
//! - `range`: our tally and misses on a shooting range.
//! - `stats`: live figures for the netcode panel and experiments.
//! - `browser`: finding games (server queries, LAN broadcast); no Bevy.
//! - `page_link`: a browser link's fragment (`#play`, `#range`): what the
//!   page starts with; no Bevy.
//! - `remote_console`: `arena rcon` and the console's `rcon`: one command
//!   to a server's remote console, challenge and MACs; no Bevy.
//!
//! # The order of a frame
//!
//! `PreUpdate`: [`ClientSet::Receive`] (the link's datagrams into renet,
//! each at its arrival time), then
//! [`ClientSet::Route`] (decode and route), [`ClientSet::Apply`] (the roster,
//! then the snapshot), [`ClientSet::Sync`] (the clocks follow the server),
//! [`ClientSet::Acknowledge`] (acknowledged commands leave the window) and
//! [`ClientSet::Reconcile`] (prediction, interpolation history, combat).
//! Input is read before the fixed loop (in `arena_view`), so that in
//! `FixedUpdate` each tick's [`ClientSet::Sample`] makes a command from this
//! frame's input, [`ClientSet::Predict`] runs it and [`ClientSet::Record`]
//! keeps it (with its departure time). `Update`: [`ClientSet::Present`]
//! (where everyone is drawn), [`ClientSet::Watch`]. `PostUpdate`:
//! [`ClientSet::SendCommands`] (a packet for each command, or one for the
//! frame's with I/O once a frame) and [`ClientSet::Send`] (each to the link
//! with its departure time; one datagram, or none, for the rest).

pub mod browser;
mod chat;
mod combat;
mod command_clock;
mod commands;
pub mod conditioner;
mod connection;
pub mod console;
mod drawn;
mod foreseen_hits;
pub mod hole_punch;
mod interp_delay;
pub mod interpolation;
mod kill_cam;
pub mod link;
mod map_download;
mod messages;
pub mod page_link;
mod pickups;
mod prediction;
mod range;
mod relay;
pub mod remote_console;
mod render_clock;
mod replication;
mod rockets;
mod roster;
mod round_trip;
mod scoreboard;
mod sent_settings;
mod settings;
mod spectating;
mod stats;
mod sub_tick_shots;
pub mod transport;
mod vocabulary;
#[cfg(not(target_arch = "wasm32"))]
pub mod voice;
mod votes;

use std::sync::Arc;

use arena_sim::{ArenaWorld, MapDef};
use bevy::prelude::*;
use bevy_renet::RenetReceive;

// Connecting, and the switches a player or an experiment flips.
pub use chat::{CHAT_LOG_LINES, ChatLine, ChatLog, SayChat};
pub use conditioner::LinkConditions;
pub use connection::{ConnectTo, Disconnect, LastDisconnect, ServerConnection, resolve_server_addr};
pub use hole_punch::{Introducers, Introduction};
pub use kill_cam::{KillCamFeed, SkipKillCam};
pub use link::IoMode;
pub use map_download::{MapCache, MapFetch};
pub use settings::{NetcodeSettings, VoiceSettings};
pub use spectating::{ChooseSide, Spectating, SpectatorInput, WatchView};
pub use votes::{ENDED_SHOWN_S, ShownVote, VoteAction, VoteBoard, parse_call as parse_vote_call};

// What the local player does, and where everyone is drawn.
pub use command_clock::ClientTick;
pub use commands::{LocalInput, ThisTick};
pub use interp_delay::InterpDelay;
pub use interpolation::{History, InterpStats};
pub use pickups::{ItemTaken, PickupSound, PickupStats, PredictedPickup};
pub use prediction::{PredictedEvents, Prediction};
pub use render_clock::ServerClock;
pub use round_trip::RoundTrip;

pub use vocabulary::{
    Baselines, ClientStats, ClientWorld, Drawn, DrawnDied, DrawnFrame, DrawnLaunched, DrawnRespawned, DrawnTeleported,
    GameMessage, ItemTable, LocalPlayer, MessageTally, NetPlayer, NetState, PlayerName, Roster, Session,
    SnapshotArrived,
};

// What the game shows: combat, the scoreboard, live figures.
pub use combat::{DamageTaken, HitConfirmed, KillNotice, RemoteShot, ShotComparison, ShotComparisons, ShotMemory};
pub use foreseen_hits::{HitDenied, HitPredicted, HitPredictions};
pub use range::RangeStats;
pub use rockets::{BlastDrawn, ClientRockets, DrawnRockets, MAX_OWN_ROCKETS, MAX_REMOTE_ROCKETS, RocketStats};
pub use scoreboard::{MatchStatus, Scoreboard};
pub use stats::{MotionOnsets, NetStats, SnapshotLoss};

// The rules, each a plain type, tested and fuzzed on their own.
pub use command_clock::{ClockSync, MAX_JUMP_TICKS, MAX_RATE_ADJUST};
// Types other crates reach through the items above (returned, carried
// in fields or messages): nameable, though none names them yet.
pub use combat::FiredShot;
pub use connection::AddrError;
pub use foreseen_hits::{Judged, PredictedHit};
pub use kill_cam::ReceivedKillCam;
pub use prediction::{Authority, Mover, Reconciled, Switches};
pub use rockets::{DrawnRocket, OwnBlast, OwnRocket, RemoteRocket};
pub use sub_tick_shots::PendingClick;

/// The client's ordered stages (see the order at the top of this file).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientSet {
    /// Take the link's datagrams into renet (PreUpdate).
    Receive,
    /// Decode, check and route the server's messages (PreUpdate).
    Route,
    /// Apply them: the roster, then the newest snapshot (PreUpdate).
    Apply,
    /// The command and render clocks follow the server's clock (PreUpdate).
    Sync,
    /// Acknowledged commands leave the window (PreUpdate).
    Acknowledge,
    /// Reconcile the local player; record remote players' history; combat
    /// and scores (PreUpdate).
    Reconcile,
    /// Make this tick's command (FixedUpdate).
    Sample,
    /// Predict this tick (FixedUpdate).
    Predict,
    /// Keep this tick's command (and our shots) until acknowledged (FixedUpdate).
    Record,
    /// Send the newest commands and the unacknowledged ones, each at its
    /// departure time (PostUpdate).
    SendCommands,
    /// Decide where everyone is drawn this frame, and which drawn bodies
    /// died or came back (Update).
    Present,
    /// Watch the connection for failures and timeouts; gather figures (Update).
    Watch,
    /// Hand what renet queued to the link (PostUpdate).
    Send,
}

/// Longest frame whose time the client's clock still catches up on, seconds.
/// Bevy's default (250 ms) would let a slow machine's ticks fall behind the
/// server's for good; the tick clock must follow real time.
pub const MAX_FRAME_CATCHUP_S: f32 = 1.0;

/// All of the client's netcode. Needs `StatesPlugin` and time (MinimalPlugins or DefaultPlugins).
pub struct ClientPlugin;

impl Plugin for ClientPlugin {
    fn build(&self, app: &mut App) {
        app.init_state::<Session>()
            .init_resource::<ClientStats>()
            .insert_resource(ClientWorld(Arc::new(ArenaWorld::new(MapDef::foundry()))))
            .add_systems(Startup, |mut time: ResMut<Time<Virtual>>| {
                time.set_max_delta(std::time::Duration::from_secs_f32(MAX_FRAME_CATCHUP_S));
            })
            .configure_sets(
                PreUpdate,
                (
                    ClientSet::Receive.in_set(RenetReceive),
                    (ClientSet::Route, ClientSet::Apply, ClientSet::Sync, ClientSet::Acknowledge, ClientSet::Reconcile)
                        .chain()
                        .after(RenetReceive),
                )
                    .chain(),
            )
            .configure_sets(
                FixedUpdate,
                (ClientSet::Sample, ClientSet::Predict, ClientSet::Record).chain().run_if(in_state(Session::InGame)),
            )
            .configure_sets(Update, (ClientSet::Present, ClientSet::Watch).chain())
            .configure_sets(PostUpdate, (ClientSet::SendCommands, ClientSet::Send).chain())
            .add_plugins((
                settings::plugin,
                connection::plugin,
                (command_clock::plugin, render_clock::plugin),
                commands::plugin,
                prediction::plugin,
                messages::plugin,
                (roster::plugin, round_trip::plugin),
                replication::plugin,
                interpolation::plugin,
                (drawn::plugin, pickups::plugin),
                foreseen_hits::plugin,
                (combat::plugin, sent_settings::plugin, rockets::plugin),
                (scoreboard::plugin, kill_cam::plugin, chat::plugin, spectating::plugin),
                (range::plugin, stats::plugin, map_download::plugin, votes::plugin),
            ));
        #[cfg(not(target_arch = "wasm32"))]
        app.add_plugins(voice::plugin)
            .add_systems(PreUpdate, voice::receive_voice.after(chat::receive_chat).in_set(ClientSet::Reconcile))
            .add_systems(Update, voice::play_voice.in_set(ClientSet::Present))
            .add_systems(
                PostUpdate,
                (voice::feed_voice_file, voice::send_voice).chain().before(ClientSet::SendCommands),
            );
        let connected = connection::connected;
        let has_renet = resource_exists::<bevy_renet::RenetClient>;
        app.add_systems(
            PreUpdate,
            (
                messages::receive_packets.in_set(ClientSet::Receive).run_if(connected),
                messages::route_messages.in_set(ClientSet::Route).run_if(has_renet),
                (roster::apply_roster_news, map_download::find_maps, replication::apply_snapshots)
                    .chain()
                    .in_set(ClientSet::Apply),
                (
                    command_clock::start_clock,
                    command_clock::follow_server,
                    render_clock::follow_snapshots,
                    round_trip::measure_round_trip,
                    stats::measure_snapshot_loss,
                    commands::pace_departures,
                )
                    .chain()
                    .in_set(ClientSet::Sync),
                commands::acknowledge.in_set(ClientSet::Acknowledge),
                (
                    prediction::reconcile,
                    pickups::judge_pickups.after(prediction::reconcile),
                    interpolation::record_history,
                    combat::apply_combat_messages,
                    rockets::apply_rocket_messages.after(prediction::reconcile),
                    scoreboard::follow,
                    kill_cam::receive_kill_cams,
                    chat::receive_chat,
                    range::apply_range_reports,
                    map_download::receive_map,
                    votes::receive_votes.after(chat::receive_chat),
                )
                    .in_set(ClientSet::Reconcile),
            ),
        )
        .add_systems(
            FixedUpdate,
            (
                commands::sample_command.in_set(ClientSet::Sample),
                prediction::predict_tick.in_set(ClientSet::Predict),
                (commands::record_command, combat::remember_shots, rockets::launch_own, pickups::note_predicted)
                    .in_set(ClientSet::Record),
            ),
        )
        .add_systems(PostUpdate, commands::send_commands.in_set(ClientSet::SendCommands))
        .add_systems(
            Update,
            (
                (
                    (render_clock::advance_render_clock, commands::stamp_clicks),
                    (interpolation::interpolate, prediction::present_local),
                    (drawn::watch_lives, rockets::draw_rockets, spectating::follow, pickups::release_sounds),
                )
                    .chain()
                    .in_set(ClientSet::Present),
                (
                    connection::watch_connection.run_if(connected),
                    stats::gather.run_if(in_state(Session::InGame)),
                    sent_settings::send_settings.run_if(in_state(Session::InGame)),
                    kill_cam::send_skips,
                    chat::send_chat,
                    votes::send_votes,
                    spectating::send_side_choices,
                )
                    .in_set(ClientSet::Watch),
            ),
        )
        .add_systems(PostUpdate, messages::send_packets.in_set(ClientSet::Send).run_if(connected))
        .add_systems(Last, connection::disconnect_on_exit.run_if(connected))
        .add_systems(OnEnter(Session::Offline), (connection::drop_connection, roster::clear_world));
    }
}
