//! The client's netcode, headless: connecting through a link conditioner,
//! turning local input into one user command per tick, keeping the client's
//! clock just ahead of the server's, predicting and reconciling the local
//! player, and replicating the server's snapshots into entities. The window,
//! the camera and the models live in `arena_view`; tests and experiments
//! drive this crate with no window at all.

mod combat;
mod commands;
pub mod conditioner;
mod connection;
pub mod interpolation;
mod prediction;
mod replication;
mod scoreboard;
mod settings;
mod stats;
mod sync;
pub mod transport;

use std::sync::Arc;

use arena_sim::{ArenaWorld, MapDef};
use bevy::prelude::*;
use bevy_renet::RenetReceive;

pub use combat::{
    DamageTaken, FiredShot, HitConfirmed, KillNotice, RemoteShot, SHOT_MEMORY_S, ShotComparison, ShotComparisons,
    ShotMemory,
};
pub use commands::{COMMANDS_PER_PACKET, ClientTick, LocalInput, ThisTick};
pub use conditioner::LinkConditions;
pub use connection::{ConnectTo, Disconnect, LastDisconnect, ServerConnection, resolve_server_addr};
pub use interpolation::{History, InterpClock, Interpolated};
pub use prediction::{LocalRender, Predicted, PredictedEvents, Prediction};
pub use replication::{GameMessage, LocalPlayer, NetPlayer, NetState, PlayerName, Roster, SnapshotApplied, Welcomed};
pub use scoreboard::{MatchStatus, Scoreboard};
pub use settings::NetcodeSettings;
pub use stats::NetStats;
pub use sync::{ClockSync, MAX_JUMP_TICKS, MAX_RATE_ADJUST};

/// Where the client is in its life with a server.
#[derive(States, Default, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Session {
    /// Not connected (the main menu).
    #[default]
    Offline,
    /// Asked to connect; waiting for the server's welcome.
    Connecting,
    /// Welcomed: playing.
    InGame,
}

/// The client's ordered stages. Within a frame: receive and apply what came
/// (PreUpdate), run the ticks that are due (FixedUpdate), decide what to draw
/// (Update), send (PostUpdate).
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientSet {
    /// Read the socket into renet (PreUpdate).
    Receive,
    /// Decode the server's messages and apply them to the world (PreUpdate).
    Apply,
    /// Follow the server's clock from its feedback (PreUpdate).
    Sync,
    /// Reconcile the local player with the server's state (PreUpdate).
    Reconcile,
    /// Make this tick's command (FixedUpdate).
    Sample,
    /// Predict this tick (FixedUpdate).
    Predict,
    /// Send this tick's command and the unacknowledged ones (FixedUpdate).
    SendCommands,
    /// Decide where the local player is drawn this frame (Update).
    Present,
    /// Watch the connection for failures and timeouts; gather figures (Update).
    Watch,
    /// Write what renet queued to the socket (PostUpdate).
    Send,
}

/// The arena's collision world as the client knows it.
#[derive(Resource, Clone, Deref)]
pub struct ClientWorld(pub Arc<ArenaWorld>);

/// Counters of what the client had to drop, for logs and tests.
#[derive(Resource, Default, Debug, Clone)]
pub struct ClientStats {
    pub bad_messages: u64,
    pub snapshots_received: u64,
    /// Snapshots that arrived after a newer one and were ignored.
    pub stale_snapshots: u64,
    /// Command packets sent (one per tick).
    pub commands_sent: u64,
    /// Combat messages beyond what any fair server sends in a frame, dropped.
    pub flood_dropped: u64,
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
            .add_plugins(bevy_renet::RenetClientPlugin)
            .add_systems(Startup, |mut time: ResMut<Time<Virtual>>| {
                time.set_max_delta(std::time::Duration::from_secs_f32(MAX_FRAME_CATCHUP_S));
            })
            .configure_sets(
                PreUpdate,
                (
                    ClientSet::Receive.in_set(RenetReceive),
                    (ClientSet::Apply, ClientSet::Sync, ClientSet::Reconcile).chain().after(RenetReceive),
                )
                    .chain(),
            )
            .configure_sets(
                FixedUpdate,
                (ClientSet::Sample, ClientSet::Predict, ClientSet::SendCommands)
                    .chain()
                    .run_if(in_state(Session::InGame)),
            )
            .configure_sets(Update, (ClientSet::Present, ClientSet::Watch))
            .configure_sets(PostUpdate, ClientSet::Send)
            .add_plugins((
                settings::plugin,
                connection::plugin,
                commands::plugin,
                replication::plugin,
                sync::plugin,
                prediction::plugin,
                interpolation::plugin,
                combat::plugin,
                scoreboard::plugin,
                stats::plugin,
            ));
    }
}
