//! Snapshots: after a snapshot tick each client gets the world as it may see
//! it (its own player whole, everyone else as drawing needs them), delta-coded
//! against the newest snapshot it acknowledged when the server still has it,
//! whole otherwise; with the feedback its clock sync and reconciliation need.
//! Each client's sent snapshots are kept a while, as baselines.

use std::collections::VecDeque;

use arena_protocol::ToClient;
use arena_protocol::snapshot::{Feedback, Frame, OwnState, RemoteState, encode};
use arena_sim::{PlayerId, PlayerState};
use bevy::prelude::*;

use super::intake::CommandBuffer;
use crate::net::send_unreliable;
use crate::vocabulary::{
    ClientPrefs, DueClients, Items, RoundTrips, ServerPlayer, ServerStats, ServerTick, Sim, SnapshotAck, SnapshotRate,
    TickRate, UnreliableOut,
};

/// Snapshots kept per client as baselines (2 s at 32 Hz): an acknowledgement
/// older than that gets a full snapshot.
pub(crate) const KEPT_SNAPSHOTS: usize = 64;

/// What was sent to one client lately, newest last.
#[derive(Component, Debug, Default)]
pub(crate) struct SentSnapshots(pub VecDeque<Frame>);

/// A client's snapshot bytes it may still take under its `rate`, and the
/// tick that was reckoned at.
#[derive(Component, Debug, Clone, Copy)]
pub(crate) struct RateBudget {
    bytes: f64,
    tick: u32,
}

/// Seconds of a client's `rate` its budget can save up: a burst after a
/// quiet moment, no more.
const RATE_BURST_S: f64 = 0.25;

impl RateBudget {
    /// Whether a snapshot may go to a client with `rate` bytes a second at
    /// `tick` (0: no limit); the budget refills with the ticks since last.
    fn allows(&mut self, rate: u32, tick: u32, tick_hz: u32) -> bool {
        if rate == 0 {
            return true;
        }
        let rate = f64::from(rate);
        let ticks = f64::from(tick.wrapping_sub(self.tick).min(tick_hz * 4));
        self.bytes = (self.bytes + rate * ticks / f64::from(tick_hz)).min(rate * RATE_BURST_S);
        self.tick = tick;
        self.bytes > 0.0
    }

    fn spend(&mut self, bytes: usize) {
        self.bytes -= bytes as f64;
    }
}

/// Whether a snapshot goes out after `tick`: `snapshot_hz` of every `tick_hz`
/// ticks, spread evenly.
pub(crate) fn is_snapshot_tick(tick: u32, tick_hz: u32, snapshot_hz: u32) -> bool {
    let tick_hz = arena_sim::TickRate::new(tick_hz).hz();
    let slot = |t: u32| u64::from(t) * u64::from(snapshot_hz) / u64::from(tick_hz);
    slot(tick) != slot(tick.wrapping_sub(1)) || snapshot_hz >= tick_hz
}

/// What `viewer` may know of the world after `tick`: its own state whole (it
/// predicts it), everyone else only as drawing needs them ([`RemoteState`]:
/// no health, ammo, velocity or timers). `send_snapshots` builds the same
/// for every viewer at once; the tests check it against this.
#[cfg(test)]
pub(crate) fn frame_for<'a>(
    tick: u32,
    viewer: PlayerId,
    everyone: impl IntoIterator<Item = (PlayerId, &'a PlayerState)>,
) -> Frame {
    let mut frame = Frame { tick, ..Frame::default() };
    for (id, state) in everyone {
        if id == viewer {
            frame.own = Some((id, OwnState::of(state)));
        } else {
            frame.others.insert(id, RemoteState::of(state));
        }
    }
    frame
}

pub(crate) fn send_snapshots(
    mut out: ResMut<UnreliableOut>,
    tick: Res<ServerTick>,
    tick_rate: Res<TickRate>,
    snapshot_rate: Res<SnapshotRate>,
    fixed_time: Res<Time<Fixed>>,
    players: Query<(&ServerPlayer, &Sim)>,
    mut clients: Query<(
        (&ServerPlayer, &CommandBuffer, &SnapshotAck, Option<&ClientPrefs>),
        Option<&mut SentSnapshots>,
        Option<&mut RateBudget>,
        Entity,
    )>,
    (mut due, items): (ResMut<DueClients>, Res<Items>),
    (mut stats, mut round_trips, real): (ResMut<ServerStats>, ResMut<RoundTrips>, Res<Time<Real>>),
    mut commands: Commands,
) {
    if !is_snapshot_tick(tick.0, tick_rate.hz(), snapshot_rate.hz()) {
        return;
    }
    let everyone: Vec<(PlayerId, &PlayerState)> = players.iter().map(|(p, sim)| (p.id, &sim.0)).collect();
    // Everyone as others see them, once for all viewers, in id order: each
    // viewer's frame (what `frame_for` says it may know) is this less
    // itself, built without a search per entry.
    let mut remote: Vec<(PlayerId, RemoteState)> = everyone.iter().map(|(id, s)| (*id, RemoteState::of(s))).collect();
    remote.sort_by_key(|(id, _)| *id);
    // The frame's clock runs ahead of this tick's by what is not simulated
    // yet: the snapshot leaves that long after its tick, at the frame's end.
    let sent_after_256ths = Feedback::sent_after_of(fixed_time.overstep_fraction_f64());
    // This snapshot's number: a client that asked for fewer gets every stride-th.
    let number = u64::from(tick.0) * u64::from(snapshot_rate.hz()) / u64::from(tick_rate.hz());
    for ((player, buffer, ack, prefs), sent, budget, entity) in &mut clients {
        let Some(client_id) = player.client_id else { continue };
        let (update_rate, rate) = prefs.map_or((0, 0), |p| (p.0.update_rate, p.0.rate));
        let stride = arena_protocol::snapshot_stride(snapshot_rate.hz(), update_rate);
        if sent.is_some() && number % u64::from(stride) != 0 {
            stats.snapshots_not_asked += 1;
            continue;
        }
        let mut fresh = RateBudget { bytes: f64::from(rate) * RATE_BURST_S, tick: tick.0 };
        let is_fresh = budget.is_none();
        let budget: &mut RateBudget = match budget {
            Some(budget) => budget.into_inner(),
            None => &mut fresh,
        };
        if sent.is_some() && !budget.allows(rate, tick.0, tick_rate.hz()) {
            stats.snapshots_over_rate += 1;
            continue;
        }
        let frame = Frame {
            tick: tick.0,
            own: everyone.iter().find(|(id, _)| *id == player.id).map(|(id, s)| (*id, OwnState::of(s))),
            others: remote.iter().filter(|(id, _)| *id != player.id).copied().collect(),
            items: items.slots.clone(),
        };
        let feedback = Feedback {
            last_cmd_tick: buffer.last_run_tick,
            newest_cmd_tick: buffer.newest_received,
            margin_centiticks: buffer
                .last_margin
                .map(|m| (m * 100.0).round().clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16),
            sent_after_256ths,
        };
        let mut sent = match sent {
            Some(sent) => sent,
            None => {
                let bytes = encode(&frame, &feedback, None);
                budget.spend(bytes.len());
                if is_fresh {
                    commands.entity(entity).insert(*budget);
                }
                stats.full_snapshots += 1;
                commands.entity(entity).insert(SentSnapshots(VecDeque::from([frame])));
                send_unreliable(&mut out, client_id, &ToClient::Snapshot(bytes));
                round_trips.sent(client_id, tick.0, real.elapsed());
                due.0.push(client_id);
                continue;
            }
        };
        let baseline = ack.0.baseline(&sent.0, tick_rate.hz());
        if baseline.is_none() {
            stats.full_snapshots += 1;
            if let Some(acked) = ack.0.newest() {
                stats.stale_acks += 1;
                debug!("client {client_id} acknowledged snapshot {acked}, no longer kept: a whole one goes");
            }
        }
        let bytes = encode(&frame, &feedback, baseline);
        budget.spend(bytes.len());
        if is_fresh {
            commands.entity(entity).insert(*budget);
        }
        send_unreliable(&mut out, client_id, &ToClient::Snapshot(bytes));
        round_trips.sent(client_id, tick.0, real.elapsed());
        due.0.push(client_id);
        sent.0.push_back(frame);
        while sent.0.len() > KEPT_SNAPSHOTS {
            sent.0.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_protocol::snapshot::{Baseline, decode};
    use arena_sim::quant::snap_state;

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

    /// Two worlds alike in all a client may see, unlike in everything it may
    /// not (others' health, ammo, velocity, timers, held buttons).
    fn worlds() -> (Vec<PlayerState>, Vec<PlayerState>) {
        let player = |i: u8| {
            let mut s = PlayerState::spawned_at(Vec3::new(f32::from(i) * 3.0, 0.0, -4.0), 0.3 * f32::from(i));
            s.pitch = -0.2;
            s.protected_s = 0.8;
            snap_state(&s)
        };
        let a: Vec<PlayerState> = (0..6).map(player).collect();
        let b: Vec<PlayerState> = a
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i == 0 {
                    return *s;
                }
                // What a pose needs (the pace on the ground and the gait's
                // phase) is drawn by everyone, so not among the secrets; the
                // vertical speed is.
                snap_state(&PlayerState {
                    health: 13,
                    ammo: 2,
                    vel: Vec3::new(s.vel.x, 1.0, s.vel.z),
                    fire_cooldown_s: 0.05,
                    reload_s: 1.1,
                    protected_s: 0.1,
                    fire_held: true,
                    reload_held: true,
                    jump_held: true,
                    ..*s
                })
            })
            .collect();
        (a, b)
    }

    #[test]
    fn a_client_never_learns_another_players_health_ammo_or_timers() {
        let (a, b) = worlds();
        let ids = |w: &[PlayerState]| -> Vec<(PlayerId, PlayerState)> {
            w.iter().enumerate().map(|(i, s)| (PlayerId(i as u8), *s)).collect()
        };
        let (wa, wb) = (ids(&a), ids(&b));
        let view = |w: &[(PlayerId, PlayerState)], tick| frame_for(tick, PlayerId(0), w.iter().map(|(id, s)| (*id, s)));
        let feedback = Feedback::default();
        // Whole snapshots: the same bytes.
        let (fa, fb) = (view(&wa, 100), view(&wb, 100));
        let (full_a, full_b) = (encode(&fa, &feedback, None), encode(&fb, &feedback, None));
        assert_eq!(full_a, full_b, "the secrets change no byte of a full snapshot");
        // Deltas from a world with the secrets to one without, and back: the
        // same bytes as from a world without to one without.
        let (ga, gb) = (view(&wa, 102), view(&wb, 102));
        assert_eq!(
            encode(&ga, &feedback, Some(Baseline::still(&fb))),
            encode(&gb, &feedback, Some(Baseline::still(&fa)))
        );
        // The same with motion measured between two of them.
        let (ha, hb) = (view(&wa, 104), view(&wb, 104));
        assert_eq!(
            encode(&ha, &feedback, Some(Baseline { frame: &gb, before: Some(&fb), tick_hz: 64 })),
            encode(&hb, &feedback, Some(Baseline { frame: &ga, before: Some(&fa), tick_hz: 64 }))
        );
        // And what the client decodes holds nothing of them.
        let (decoded, _) = decode(&full_b, |_| None, None, 64, 64).expect("decodes");
        for (id, remote) in &decoded.others {
            let seen = remote.to_state();
            let truth = &b[usize::from(id.0)];
            assert_eq!((seen.health, seen.ammo, seen.vel), (100, 0, Vec3::ZERO), "player {id:?}");
            assert_ne!((seen.health, seen.ammo), (truth.health, truth.ammo));
            assert!(!seen.fire_held && !seen.reload_held && seen.reload_s == 0.0);
        }
        // The viewer's own secrets are its own to know.
        assert_eq!(decoded.own.map(|(_, s)| s.to_state()), Some(b[0]));
    }
}
