//! Replication: the newest snapshot becomes entities. Every player in it has
//! an entity with its latest state; the local player's is marked; whoever is
//! no longer in it goes. This is the paper's "dumb client": it draws what the
//! server said. What the snapshot says about us goes on as [`SnapshotApplied`].

use arena_sim::tick_after;
use bevy::prelude::*;

use crate::vocabulary::{
    ClientStats, LocalPlayer, NetPlayer, NetState, PlayerEntities, PlayerName, Roster, SnapshotApplied,
    SnapshotReceived,
};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<SnapshotApplied>();
}

pub(crate) fn apply_snapshot(
    mut received: MessageReader<SnapshotReceived>,
    mut roster: ResMut<Roster>,
    mut entities: ResMut<PlayerEntities>,
    mut stats: ResMut<ClientStats>,
    mut players: Query<(&mut NetState, &mut PlayerName)>,
    mut applied: MessageWriter<SnapshotApplied>,
    mut commands: Commands,
) {
    let Some(SnapshotReceived(snapshot)) = received.read().last() else { return };
    let Some(local_id) = roster.local_id else { return };
    if roster.last_snapshot_tick.is_some_and(|last| !tick_after(snapshot.tick, last)) {
        stats.stale_snapshots += 1;
        return;
    }
    roster.last_snapshot_tick = Some(snapshot.tick);

    // The snapshot says who is in the world: spawn newcomers, update everyone,
    // remove whoever is no longer in it.
    let mut seen = Vec::with_capacity(snapshot.players.len());
    let mut local_state = None;
    for player in &snapshot.players {
        let state = player.state;
        seen.push(player.id);
        if player.id == local_id {
            local_state = Some(state);
        }
        let name = roster.name(player.id);
        let net_state = NetState { state, tick: snapshot.tick };
        let existing = entities.0.get(&player.id).copied().filter(|e| players.contains(*e));
        if let Some((mut current, mut current_name)) = existing.and_then(|e| players.get_mut(e).ok()) {
            *current = net_state;
            if current_name.0 != name {
                current_name.0 = name;
            }
        } else {
            let mut entity = commands.spawn((
                Name::new(format!("net player {}", player.id.0)),
                NetPlayer { id: player.id },
                net_state,
                PlayerName(name),
            ));
            if player.id == local_id {
                entity.insert(LocalPlayer);
            }
            entities.0.insert(player.id, entity.id());
        }
    }
    applied.write(SnapshotApplied {
        tick: snapshot.tick,
        ack: snapshot.last_cmd_tick,
        newest_cmd_tick: snapshot.newest_cmd_tick,
        margin_ticks: snapshot.cmd_margin_centiticks.map(|c| f32::from(c) / 100.0),
        local_state,
    });
    entities.0.retain(|id, entity| {
        let keep = seen.contains(id);
        if !keep {
            commands.entity(*entity).despawn();
        }
        keep
    });
}
