//! Snapshots: after every tick, each client gets every player's state and the
//! newest of its own commands that the server has run.

use arena_protocol::{PlayerSnapshot, Snapshot, ToClient};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::ServerSet;
use crate::connections::ServerPlayer;
use crate::intake::CommandBuffer;
use crate::net::send;
use crate::simulation::{ServerTick, Sim};

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(FixedUpdate, send_snapshots.in_set(ServerSet::Snapshot));
}

fn send_snapshots(
    mut server: ResMut<RenetServer>,
    tick: Res<ServerTick>,
    players: Query<(&ServerPlayer, &Sim, &CommandBuffer)>,
) {
    let mut states: Vec<PlayerSnapshot> =
        players.iter().map(|(p, sim, _)| PlayerSnapshot { id: p.id, state: sim.0 }).collect();
    states.sort_by_key(|s| s.id);
    let mut snapshot = Snapshot {
        tick: tick.0,
        last_cmd_tick: None,
        newest_cmd_tick: None,
        cmd_margin_centiticks: None,
        players: states,
    };
    for (player, _, buffer) in &players {
        snapshot.last_cmd_tick = buffer.last_run_tick;
        snapshot.newest_cmd_tick = buffer.newest_received;
        snapshot.cmd_margin_centiticks =
            buffer.last_margin.map(|m| (m * 100.0).round().clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16);
        send(&mut server, player.client_id, &ToClient::Snapshot(snapshot.clone()));
    }
}
