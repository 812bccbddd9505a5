//! Snapshots: after every tick, each client gets every player's state and the
//! newest of its own commands that the server has run.

use arena_protocol::{PlayerSnapshot, Snapshot, ToClient};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::intake::CommandBuffer;
use crate::net::send;
use crate::vocabulary::{ServerPlayer, ServerTick, Sim, SnapshotRate, TickRate};

/// Whether a snapshot goes out after `tick`: `snapshot_hz` of every `tick_hz`
/// ticks, spread evenly.
pub fn is_snapshot_tick(tick: u32, tick_hz: u32, snapshot_hz: u32) -> bool {
    let tick_hz = arena_sim::TickRate::new(tick_hz).hz();
    let slot = |t: u32| u64::from(t) * u64::from(snapshot_hz) / u64::from(tick_hz);
    slot(tick) != slot(tick.wrapping_sub(1)) || snapshot_hz >= tick_hz
}

pub(crate) fn send_snapshots(
    mut server: ResMut<RenetServer>,
    tick: Res<ServerTick>,
    tick_rate: Res<TickRate>,
    snapshot_rate: Res<SnapshotRate>,
    players: Query<(&ServerPlayer, &Sim, &CommandBuffer)>,
) {
    if !is_snapshot_tick(tick.0, tick_rate.hz(), snapshot_rate.hz()) {
        return;
    }
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
        let Some(client_id) = player.client_id else { continue };
        snapshot.last_cmd_tick = buffer.last_run_tick;
        snapshot.newest_cmd_tick = buffer.newest_received;
        snapshot.cmd_margin_centiticks =
            buffer.last_margin.map(|m| (m * 100.0).round().clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16);
        send(&mut server, client_id, &ToClient::Snapshot(snapshot.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::is_snapshot_tick;

    #[test]
    fn snapshot_rates_are_spread_evenly() {
        for (tick_hz, snapshot_hz) in [(64, 64), (64, 32), (64, 20), (20, 20), (128, 20)] {
            let ticks: Vec<u32> =
                (1000..1000 + tick_hz).filter(|&t| is_snapshot_tick(t, tick_hz, snapshot_hz)).collect();
            assert_eq!(ticks.len() as u32, snapshot_hz, "{snapshot_hz} of {tick_hz}");
            let gaps: Vec<u32> = ticks.windows(2).map(|w| w[1] - w[0]).collect();
            let (min, max) = (gaps.iter().min().copied().unwrap_or(1), gaps.iter().max().copied().unwrap_or(1));
            assert!(max - min <= 1, "uneven gaps {gaps:?}");
        }
    }
}
