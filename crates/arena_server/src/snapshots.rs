//! Snapshots: after every tick, each client gets every player's state and the
//! newest of its own commands that the server has run.

use arena_protocol::{PlayerSnapshot, Snapshot, ToClient};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::ServerSet;
use crate::connections::ServerPlayer;
use crate::intake::CommandInbox;
use crate::net::send;
use crate::simulation::{ServerTick, Sim};

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(FixedUpdate, send_snapshots.in_set(ServerSet::Snapshot));
}

fn send_snapshots(
    mut server: ResMut<RenetServer>,
    tick: Res<ServerTick>,
    players: Query<(&ServerPlayer, &Sim, &CommandInbox)>,
) {
    let mut states: Vec<PlayerSnapshot> =
        players.iter().map(|(p, sim, _)| PlayerSnapshot { id: p.id, state: sim.0 }).collect();
    states.sort_by_key(|s| s.id);
    let mut snapshot = Snapshot { tick: tick.0, last_cmd_tick: None, players: states };
    for (player, _, inbox) in &players {
        snapshot.last_cmd_tick = inbox.newest.map(|c| c.tick);
        send(&mut server, player.client_id, &ToClient::Snapshot(snapshot.clone()));
    }
}
