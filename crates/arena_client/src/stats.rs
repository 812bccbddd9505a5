//! Live figures for the netcode panel and the experiments: round trip, loss,
//! bandwidth, snapshot rate, the command window, the server's buffer depth,
//! mispredictions and corrections.

use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::command_clock::ClockSync;
use crate::commands::CommandWindow;
use crate::prediction::Prediction;
use crate::round_trip::RoundTrip;
use crate::transport::UdpTransport;
use crate::vocabulary::{ClientStats, SessionState};

/// How often the per-second rates are recomputed, seconds.
const RATE_WINDOW_S: f64 = 1.0;

/// Snapshots the loss figure looks back over (2 s at 32 a second).
const LOSS_WINDOW_SNAPSHOTS: usize = 64;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<NetStats>().init_session_resource::<SnapshotLoss>();
}

/// The share of the snapshots sent lately that did not come: the ticks of
/// the last [`LOSS_WINDOW_SNAPSHOTS`] that did, against how many the server
/// sends over their span at the rate this client gets. renet's own figure
/// counts only renet's packets, which since protocol 18 are a few a second
/// (see `arena_protocol::ack_pace`); snapshots go every snapshot tick.
#[derive(Resource, Debug, Default, Clone)]
pub struct SnapshotLoss {
    /// Ticks of the snapshots that came, newest last, each once.
    ticks: std::collections::VecDeque<u32>,
    /// The share lost (0..=1), once two snapshots have come.
    pub share: Option<f64>,
}

impl SnapshotLoss {
    /// A snapshot of `tick` came; the server sends `per_tick` snapshots a
    /// tick (the client's snapshot rate over the tick rate).
    pub fn arrived(&mut self, tick: u32, per_tick: f64) {
        if self.ticks.contains(&tick) {
            return;
        }
        let at = self.ticks.iter().position(|t| arena_sim::tick_after(*t, tick)).unwrap_or(self.ticks.len());
        self.ticks.insert(at, tick);
        while self.ticks.len() > LOSS_WINDOW_SNAPSHOTS {
            self.ticks.pop_front();
        }
        let (Some(&oldest), Some(&newest)) = (self.ticks.front(), self.ticks.back()) else { return };
        let span_ticks = f64::from(newest.wrapping_sub(oldest));
        if self.ticks.len() < 2 || per_tick.is_nan() || per_tick <= 0.0 {
            return;
        }
        let expected = (span_ticks * per_tick).round() + 1.0;
        self.share = Some((1.0 - self.ticks.len() as f64 / expected).clamp(0.0, 1.0));
    }
}

/// Drawn motion smaller than this in a frame is standing still, metres.
const VISIBLE_MOTION_M: f32 = 1.0e-3;
/// Standing still this long before a movement key counts as a start, seconds.
const STILL_BEFORE_ONSET_S: f64 = 0.2;
/// Rounding allowance on the summed frame times, seconds: a whole number of
/// frames that makes exactly the stillness above is not more than it.
const STILL_EPSILON_S: f64 = 1.0e-9;
/// A start with no motion this long after it is forgotten, seconds: the
/// player walked into a wall, and the next motion (a push, a respawn) is
/// not its answer. Above the longest round trip the link conditioner adds
/// (2 s) and a frame or two.
const MAX_DELAY_S: f64 = 5.0;

/// The own-motion delay (the paper's "latency the user feels"): from the
/// frame a movement key first makes a command, after standing still, to the
/// frame the own player is first drawn moving. The lab's `prediction`
/// experiment and the browser page's status measure it the same way, frame
/// by frame.
#[derive(Debug, Default, Clone)]
pub struct MotionOnsets {
    last_drawn: Option<Vec3>,
    still_s: f64,
    onset: Option<f64>,
    was_moving_input: bool,
    /// Every delay measured, milliseconds, oldest first (at most
    /// [`MotionOnsets::KEPT`]).
    pub delays_ms: std::collections::VecDeque<f64>,
}

impl MotionOnsets {
    /// Delays kept (the newest).
    pub const KEPT: usize = 256;

    /// One frame at `t` seconds, `dt` after the last: the command this
    /// frame made, if it made one (with movement or not), and where the own
    /// player is drawn.
    pub fn frame(&mut self, t: f64, dt: f64, command_moves: Option<bool>, drawn: Option<Vec3>) {
        let moving_input = command_moves.unwrap_or(false);
        if moving_input
            && !self.was_moving_input
            && self.still_s > STILL_BEFORE_ONSET_S + STILL_EPSILON_S
            && self.onset.is_none()
        {
            self.onset = Some(t);
        }
        if let Some(moves) = command_moves {
            self.was_moving_input = moves;
        }
        if self.onset.is_some_and(|started| t - started > MAX_DELAY_S) {
            self.onset = None;
        }
        let moved = match (drawn, self.last_drawn) {
            (Some(a), Some(b)) => a.distance(b) > VISIBLE_MOTION_M,
            _ => false,
        };
        self.last_drawn = drawn;
        if moved {
            if let Some(started) = self.onset.take() {
                self.delays_ms.push_back((t - started) * 1000.0);
                while self.delays_ms.len() > Self::KEPT {
                    self.delays_ms.pop_front();
                }
            }
            self.still_s = 0.0;
        } else {
            self.still_s += dt;
        }
    }

    /// The mean delay, NaN before the first.
    pub fn mean_ms(&self) -> f64 {
        if self.delays_ms.is_empty() {
            f64::NAN
        } else {
            self.delays_ms.iter().sum::<f64>() / self.delays_ms.len() as f64
        }
    }
}

/// On each snapshot: the loss figure.
pub(crate) fn measure_snapshot_loss(
    mut arrived: MessageReader<crate::vocabulary::SnapshotArrived>,
    roster: Res<crate::vocabulary::Roster>,
    mut loss: ResMut<SnapshotLoss>,
) {
    let per_tick = f64::from(roster.snapshot_rate().hz()) / f64::from(roster.tick_rate().hz().max(1));
    for snapshot in arrived.read() {
        loss.arrived(snapshot.tick, per_tick);
    }
}

#[derive(Resource, Debug, Default, Clone)]
pub struct NetStats {
    /// Round trip (the conditioner's delay included), ms: from commands'
    /// departures to their snapshots' arrivals (`round_trip.rs`), or
    /// renet's figure until commands flow.
    pub rtt_ms: f64,
    /// Share of the snapshots lost lately (0..=1; `SnapshotLoss`), or
    /// renet's figure until snapshots flow.
    pub packet_loss: f64,
    /// UDP payload bytes per second through the socket (netcode and renet
    /// headers included, IP and UDP headers not).
    pub bytes_in_per_s: f64,
    pub bytes_out_per_s: f64,
    /// Datagrams per second each way.
    pub datagrams_in_per_s: f64,
    pub datagrams_out_per_s: f64,
    pub snapshots_per_s: f64,
    /// Unacknowledged commands in the prediction window.
    pub commands_pending: usize,
    /// How early our commands reached the server at worst lately, ticks.
    pub command_margin_ticks: Option<f32>,
    /// Their mean head start, and the head start aimed at (from their
    /// arrival jitter), ticks.
    pub head_start_ticks: Option<f32>,
    pub head_start_target_ticks: Option<f32>,
    /// The share of recent ticks whose command came too late for them.
    pub late_commands: f32,
    /// The client's tick rate relative to the server's (1.0 = same).
    pub clock_rate: f64,
    pub clock_resets: u32,
    pub mispredictions_per_s: f64,
    /// Largest correction in the last few seconds, metres.
    pub recent_max_correction_m: f32,
    /// The TURN relay carrying the connection, and the round trip to it
    /// (what the relay adds to the way, about), if one does.
    pub via_relay: Option<crate::transport::ViaRelay>,
    window: Option<Window>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started_s: f64,
    bytes_in: u64,
    bytes_out: u64,
    datagrams_in: u64,
    datagrams_out: u64,
    snapshots: u64,
    mispredictions: u64,
}

pub(crate) fn gather(
    time: Res<Time<Real>>,
    client: Option<Res<RenetClient>>,
    transport: Option<Res<UdpTransport>>,
    counters: Res<ClientStats>,
    prediction: Res<Prediction>,
    window: Res<CommandWindow>,
    sync: Option<Res<ClockSync>>,
    (round_trip, loss): (Res<RoundTrip>, Res<SnapshotLoss>),
    mut stats: ResMut<NetStats>,
) {
    let now = time.elapsed_secs_f64();
    if let Some(client) = client {
        stats.rtt_ms = round_trip.rtt_s.unwrap_or(client.rtt()) * 1000.0;
        stats.packet_loss = loss.share.unwrap_or_else(|| client.packet_loss());
    }
    stats.commands_pending = window.pending.len();
    stats.recent_max_correction_m = prediction.recent_max_correction();
    if let Some(sync) = sync {
        stats.command_margin_ticks = sync.margin;
        stats.head_start_ticks = sync.head_start;
        stats.head_start_target_ticks = sync.target;
        stats.late_commands = sync.late_share;
        stats.clock_rate = sync.rate;
        stats.clock_resets = sync.resets;
    }
    let Some(transport) = transport else { return };
    stats.via_relay = transport.via_relay();
    let link = transport.counters();
    let current = Window {
        started_s: now,
        bytes_in: link.bytes_received,
        bytes_out: link.bytes_sent,
        datagrams_in: link.datagrams_received,
        datagrams_out: link.datagrams_sent,
        snapshots: counters.snapshots_received,
        mispredictions: prediction.mispredictions,
    };
    match stats.window {
        Some(start) if now - start.started_s >= RATE_WINDOW_S => {
            let span = now - start.started_s;
            let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / span;
            stats.bytes_in_per_s = rate(current.bytes_in, start.bytes_in);
            stats.bytes_out_per_s = rate(current.bytes_out, start.bytes_out);
            stats.datagrams_in_per_s = rate(current.datagrams_in, start.datagrams_in);
            stats.datagrams_out_per_s = rate(current.datagrams_out, start.datagrams_out);
            stats.snapshots_per_s = rate(current.snapshots, start.snapshots);
            stats.mispredictions_per_s = rate(current.mispredictions, start.mispredictions);
            stats.window = Some(current);
        }
        Some(_) => {}
        None => stats.window = Some(current),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loss_is_the_share_of_snapshots_missing_from_their_span() {
        let mut loss = SnapshotLoss::default();
        loss.arrived(100, 0.5);
        assert_eq!(loss.share, None, "one snapshot says nothing");
        // Every other tick at half the tick rate, one in four missing.
        for tick in (102..=260).step_by(2).filter(|t| t % 8 != 0) {
            loss.arrived(tick, 0.5);
        }
        let share = loss.share.expect("measured");
        assert!((share - 0.25).abs() < 0.03, "{share}");
        for tick in (262..=400).step_by(2) {
            loss.arrived(tick, 0.5);
            loss.arrived(tick, 0.5);
        }
        assert_eq!(loss.share, Some(0.0), "a copy is not a snapshot more, and the old losses age out");
        loss.arrived(404, 0.5);
        assert!(loss.share.is_some_and(|s| s > 0.0), "402 has not come");
        loss.arrived(402, 0.5);
        assert_eq!(loss.share, Some(0.0), "late is not lost");
    }

    /// A player standing still, a key at `press_s`, drawn moving from
    /// `moves_s` on, at 10 frames a second; the delays measured.
    fn delays(press_s: f64, moves_s: f64, until_s: f64) -> Vec<f64> {
        let mut onsets = MotionOnsets::default();
        let dt = 0.1;
        let mut x = 0.0;
        for frame in 0..=(until_s / dt).round() as usize {
            let t = frame as f64 * dt;
            if t >= moves_s - 1e-9 {
                x += 0.5;
            }
            onsets.frame(t, dt, Some(t >= press_s - 1e-9), Some(Vec3::new(x, 0.0, 0.0)));
        }
        onsets.delays_ms.iter().map(|d| d.round()).collect()
    }

    #[test]
    fn the_own_motion_delay_runs_from_the_first_moving_command_to_the_first_drawn_motion() {
        assert_eq!(delays(1.0, 1.0, 2.0), vec![0.0], "predicted: drawn moving in the frame of the key");
        assert_eq!(delays(1.0, 1.3, 2.0), vec![300.0], "a round trip later without prediction");
        assert_eq!(delays(0.1, 0.3, 1.0), Vec::<f64>::new(), "no start without standing still first");
        // Into a wall: no motion for seconds, then a push is no answer to the key.
        assert_eq!(delays(1.0, 7.0, 8.0), Vec::<f64>::new());
        assert_eq!(delays(1.0, 3.2, 4.0), vec![2200.0], "the longest round trip the conditioner adds");
    }
}
