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
    Baselines, ClientStats, Drawn, ItemTable, LocalPlayer, NetPlayer, NetState, PassedSnapshots, PlayerEntities,
    PlayerName, Roster, SessionState, SnapshotApplied, SnapshotArrived, SnapshotReceived,
};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<SnapshotApplied>()
        .add_message::<SnapshotArrived>()
        .init_session_resource::<Baselines>()
        .init_session_resource::<PassedSnapshots>()
        .init_session_resource::<ItemTable>();
}

impl Baselines {
    /// Takes in one snapshot as it came: decoded against the baselines kept
    /// (and counted by kind) at the server's `tick_hz`, and kept as a
    /// baseline for those to come.
    /// `None` if it did not decode: garbage is counted as a bad message; a
    /// delta against a baseline no longer here makes the next command
    /// packet ask for a whole snapshot.
    pub fn intake(
        &mut self,
        bytes: &[u8],
        tick_hz: u32,
        stats: &mut ClientStats,
    ) -> Option<(Frame, snapshot::Feedback)> {
        let decoded = snapshot::decode(bytes, |tick| self.get(tick), self.newest, MAX_PLAYERS, tick_hz);
        let (frame, feedback) = match decoded {
            Ok(decoded) => decoded,
            Err(SnapshotError::UnknownBaseline(tick)) => {
                stats.unknown_baselines += 1;
                debug!("a snapshot's baseline {tick} is gone: asking for a full one");
                self.want_full = true;
                return None;
            }
            Err(e) => {
                stats.bad_messages += 1;
                debug!("dropped a snapshot: {e}");
                return None;
            }
        };
        match snapshot::header(bytes, self.newest) {
            Ok(snapshot::Header { baseline: None, .. }) => stats.full_snapshots += 1,
            Ok(snapshot::Header { tick, baseline: Some(base), before }) => {
                stats.delta_snapshots += 1;
                stats.baseline_age_ticks += u64::from(tick.wrapping_sub(base));
                stats.deltas_with_motion += u64::from(before.is_some());
            }
            Err(_) => {}
        }
        if self.get(frame.tick).is_none() {
            self.frames.push_back(frame.clone());
            while self.frames.len() > Baselines::KEPT {
                self.frames.pop_front();
            }
        }
        if self.newest.is_none_or(|n| tick_after(frame.tick, n)) {
            self.newest = Some(frame.tick);
            // Any decodable snapshot, full or not, is a baseline the server can use.
            self.want_full = false;
        }
        Some((frame, feedback))
    }
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
    mut arrived: MessageWriter<SnapshotArrived>,
    mut passed: ResMut<PassedSnapshots>,
    mut items: ResMut<ItemTable>,
    mut commands: Commands,
) {
    let mut newest: Option<(Frame, snapshot::Feedback)> = None;
    let tick_hz = roster.tick_hz;
    passed.0.clear();
    for SnapshotReceived { bytes, arrived: at } in received.read() {
        let Some((frame, feedback)) = baselines.intake(bytes, tick_hz, &mut stats) else { continue };
        let newest_tick = newest.as_ref().map(|(n, _)| n.tick).or(roster.last_snapshot_tick);
        if newest_tick.is_some_and(|n| !tick_after(frame.tick, n)) {
            stats.stale_snapshots += 1;
            continue;
        }
        // Another player's state as our own: a broken or hostile server.
        // Neither its state nor its timing is taken.
        if frame.own.as_ref().is_some_and(|(id, _)| Some(*id) != roster.local_id) {
            stats.bad_messages += 1;
            continue;
        }
        arrived.write(SnapshotArrived {
            tick: frame.tick,
            arrived_s: at.as_secs_f64(),
            last_cmd_tick: feedback.last_cmd_tick,
            newest_cmd_tick: feedback.newest_cmd_tick,
            margin_ticks: feedback.margin_centiticks.map(|c| f32::from(c) / 100.0),
            sent_after_ticks: feedback.sent_after_ticks(),
        });
        if let Some((older, _)) = newest.replace((frame, feedback)) {
            let others = older.others.iter().map(|(id, remote)| (*id, remote.to_state())).collect();
            passed.0.push((older.tick, others));
        }
    }
    let Some((frame, feedback)) = newest else { return };
    let Some(local_id) = roster.local_id else { return };
    if roster.last_snapshot_tick.is_some_and(|last| !tick_after(frame.tick, last)) {
        stats.stale_snapshots += 1;
        return;
    }
    roster.last_snapshot_tick = Some(frame.tick);
    // The items as this snapshot says (a slot per item of the map; a list
    // that does not fit the map is a broken server's: none drawn).
    items.tick = Some(frame.tick);
    items.slots.clone_from(&frame.items);

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
                Drawn(state),
                PlayerName(name),
            ));
            if id == local_id {
                entity.insert(LocalPlayer);
            }
            entities.0.insert(id, entity.id());
        }
    }
    applied.write(SnapshotApplied { ack: feedback.last_cmd_tick, local_state });
    entities.0.retain(|id, entity| {
        let keep = seen.contains(id);
        if !keep {
            commands.entity(*entity).despawn();
        }
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_protocol::snapshot::{Baseline, Feedback, RemoteState, encode};
    use arena_sim::{PlayerId, PlayerState};

    fn frame(tick: u32, x: f32) -> Frame {
        let state = PlayerState::spawned_at(Vec3::new(x, 0.0, 0.0), 0.0);
        Frame { tick, own: None, others: [(PlayerId(1), RemoteState::of(&state))].into(), items: vec![] }
    }

    #[test]
    fn snapshots_are_decoded_against_the_baselines_kept_and_kept_in_turn() {
        let (mut baselines, mut stats) = (Baselines::default(), ClientStats::default());
        assert_eq!(baselines.ack(), None, "nothing yet: a whole snapshot, please");
        let a = frame(100, 1.0);
        let full = encode(&a, &Feedback::default(), None);
        assert_eq!(baselines.intake(&full, 64, &mut stats).map(|(f, _)| f), Some(a.clone()));
        assert_eq!((baselines.ack(), stats.full_snapshots), (Some(100), 1));
        let b = frame(104, 2.0);
        let delta = encode(&b, &Feedback::default(), Some(Baseline::still(&a)));
        assert_eq!(baselines.intake(&delta, 64, &mut stats).map(|(f, _)| f), Some(b));
        assert_eq!((baselines.ack(), stats.delta_snapshots, stats.baseline_age_ticks), (Some(104), 1, 4));
        // The same snapshot again is not kept twice; an older one does not
        // become the newest.
        baselines.intake(&full, 64, &mut stats);
        assert_eq!((baselines.frames.len(), baselines.ack()), (2, Some(104)));
    }

    #[test]
    fn a_lost_baseline_asks_for_a_whole_snapshot_and_garbage_is_counted() {
        let (mut baselines, mut stats) = (Baselines::default(), ClientStats::default());
        let a = frame(100, 1.0);
        baselines.intake(&encode(&a, &Feedback::default(), None), 64, &mut stats);
        let gone = frame(90, 0.0);
        let delta = encode(&frame(110, 3.0), &Feedback::default(), Some(Baseline::still(&gone)));
        assert!(baselines.intake(&delta, 64, &mut stats).is_none());
        assert_eq!((stats.unknown_baselines, baselines.ack()), (1, None), "ask for a whole one");
        // Bytes no range coder writes (a first word out of range).
        assert!(baselines.intake(&[0xFF, 0xFF, 0xFF, 0xFF], 64, &mut stats).is_none());
        assert_eq!(stats.bad_messages, 1);
        // Any snapshot that decodes ends the asking.
        let c = frame(112, 4.0);
        baselines.intake(&encode(&c, &Feedback::default(), Some(Baseline::still(&a))), 64, &mut stats);
        assert_eq!(baselines.ack(), Some(112));
    }

    #[test]
    fn the_baselines_kept_are_bounded() {
        let (mut baselines, mut stats) = (Baselines::default(), ClientStats::default());
        for tick in 0..3 * Baselines::KEPT as u32 {
            baselines.intake(&encode(&frame(tick, 0.0), &Feedback::default(), None), 64, &mut stats);
        }
        assert_eq!(baselines.frames.len(), Baselines::KEPT);
        assert_eq!(baselines.frames.front().map(|f| f.tick), Some(2 * Baselines::KEPT as u32));
    }
}
