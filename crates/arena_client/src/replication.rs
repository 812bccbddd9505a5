//! Replication: snapshots become entities. Each snapshot is decoded against
//! the baseline it names (and kept as one for those to come); the newest
//! becomes the world: every player in it has an entity with its latest
//! state, the local player's is marked, whoever is no longer in it goes. This
//! is the paper's "dumb client": it draws what the server said. What the
//! snapshot says about us goes on as [`SnapshotApplied`].

use arena_protocol::MAX_PLAYERS;
use arena_protocol::snapshot::{self, Frame, SnapshotError};
use arena_sim::{PlayerState, tick_after};
use bevy::prelude::*;

use crate::vocabulary::{
    Baselines, ClientStats, LocalPlayer, NetPlayer, NetState, PlayerEntities, PlayerName, Roster, SnapshotApplied,
    SnapshotReceived,
};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<SnapshotApplied>().init_resource::<Baselines>();
}

pub(crate) fn reset(mut baselines: ResMut<Baselines>) {
    *baselines = Baselines::default();
}

/// Decodes what came (in order, each against its baseline), then applies the
/// newest.
pub(crate) fn apply_snapshots(
    mut received: MessageReader<SnapshotReceived>,
    mut baselines: ResMut<Baselines>,
    mut roster: ResMut<Roster>,
    mut entities: ResMut<PlayerEntities>,
    mut stats: ResMut<ClientStats>,
    mut players: Query<(&mut NetState, &mut PlayerName)>,
    mut applied: MessageWriter<SnapshotApplied>,
    mut commands: Commands,
) {
    let mut newest: Option<(Frame, snapshot::Feedback)> = None;
    for SnapshotReceived(bytes) in received.read() {
        let decoded = snapshot::decode(bytes, |tick| baselines.get(tick), MAX_PLAYERS);
        let (frame, feedback) = match decoded {
            Ok(decoded) => {
                match snapshot::header(bytes) {
                    Ok(snapshot::Header { baseline: None, .. }) => stats.full_snapshots += 1,
                    Ok(snapshot::Header { tick, baseline: Some(base), before }) => {
                        stats.delta_snapshots += 1;
                        stats.baseline_age_ticks += u64::from(tick.wrapping_sub(base));
                        stats.deltas_with_motion += u64::from(before.is_some());
                    }
                    Err(_) => {}
                }
                decoded
            }
            Err(SnapshotError::UnknownBaseline(tick)) => {
                stats.unknown_baselines += 1;
                debug!("a snapshot's baseline {tick} is gone: asking for a full one");
                baselines.want_full = true;
                continue;
            }
            Err(e) => {
                stats.bad_messages += 1;
                debug!("dropped a snapshot: {e}");
                continue;
            }
        };
        if baselines.get(frame.tick).is_none() {
            baselines.frames.push_back(frame.clone());
            while baselines.frames.len() > Baselines::KEPT {
                baselines.frames.pop_front();
            }
        }
        if baselines.newest.is_none_or(|n| tick_after(frame.tick, n)) {
            baselines.newest = Some(frame.tick);
            // Any decodable snapshot, full or not, is a baseline the server can use.
            baselines.want_full = false;
        }
        if newest.as_ref().is_none_or(|(n, _)| tick_after(frame.tick, n.tick)) {
            newest = Some((frame, feedback));
        } else {
            stats.stale_snapshots += 1;
        }
    }
    let Some((frame, feedback)) = newest else { return };
    let Some(local_id) = roster.local_id else { return };
    if roster.last_snapshot_tick.is_some_and(|last| !tick_after(frame.tick, last)) {
        stats.stale_snapshots += 1;
        return;
    }
    if frame.own.as_ref().is_some_and(|(id, _)| *id != local_id) {
        stats.bad_messages += 1;
        return;
    }
    roster.last_snapshot_tick = Some(frame.tick);

    // The snapshot says who is in the world: spawn newcomers, update everyone,
    // remove whoever is no longer in it.
    let local_state = frame.own.map(|(_, own)| own.to_state());
    let states: Vec<(arena_sim::PlayerId, PlayerState)> = frame
        .own
        .map(|(id, own)| (id, own.to_state()))
        .into_iter()
        .chain(frame.others.iter().map(|(id, remote)| (*id, remote.to_state())))
        .collect();
    let mut seen = Vec::with_capacity(states.len());
    for (id, state) in states {
        seen.push(id);
        let name = roster.name(id);
        let net_state = NetState { state, tick: frame.tick };
        let existing = entities.0.get(&id).copied().filter(|e| players.contains(*e));
        if let Some((mut current, mut current_name)) = existing.and_then(|e| players.get_mut(e).ok()) {
            *current = net_state;
            if current_name.0 != name {
                current_name.0 = name;
            }
        } else {
            let mut entity = commands.spawn((
                Name::new(format!("net player {}", id.0)),
                NetPlayer { id },
                net_state,
                PlayerName(name),
            ));
            if id == local_id {
                entity.insert(LocalPlayer);
            }
            entities.0.insert(id, entity.id());
        }
    }
    applied.write(SnapshotApplied {
        tick: frame.tick,
        ack: feedback.last_cmd_tick,
        newest_cmd_tick: feedback.newest_cmd_tick,
        margin_ticks: feedback.margin_centiticks.map(|c| f32::from(c) / 100.0),
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
