//! The client's netcode, headless: connecting, turning local input into one
//! user command per tick, and replicating the server's snapshots into
//! entities. The window, the camera and the models live in `arena_view`;
//! tests drive this crate with no window at all.

mod commands;
mod connection;
mod replication;
pub mod transport;

use std::sync::Arc;

use arena_sim::{ArenaWorld, MapDef};
use bevy::prelude::*;
use bevy_renet::RenetReceive;

pub use commands::{ClientTick, LocalInput};
pub use connection::{ConnectTo, Disconnect, LastDisconnect, ServerConnection, resolve_server_addr};
pub use replication::{LocalPlayer, NetPlayer, NetState, PlayerName, Roster};

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

/// The client's ordered stages within a frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientSet {
    /// Read the socket into renet (PreUpdate).
    Receive,
    /// Decode the server's messages and apply them to the world (PreUpdate).
    Apply,
    /// Build and send this tick's command (FixedUpdate).
    Commands,
    /// Watch the connection for failures and timeouts (Update).
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
    pub commands_sent: u64,
}

/// All of the client's netcode. Needs `StatesPlugin` and time (MinimalPlugins or DefaultPlugins).
pub struct ClientPlugin;

impl Plugin for ClientPlugin {
    fn build(&self, app: &mut App) {
        app.init_state::<Session>()
            .init_resource::<ClientStats>()
            .insert_resource(ClientWorld(Arc::new(ArenaWorld::new(MapDef::foundry()))))
            .add_plugins(bevy_renet::RenetClientPlugin)
            .configure_sets(
                PreUpdate,
                (ClientSet::Receive.in_set(RenetReceive), ClientSet::Apply.after(RenetReceive)).chain(),
            )
            .configure_sets(Update, ClientSet::Watch)
            .configure_sets(FixedUpdate, ClientSet::Commands.run_if(in_state(Session::InGame)))
            .configure_sets(PostUpdate, ClientSet::Send)
            .add_plugins((connection::plugin, commands::plugin, replication::plugin));
    }
}
