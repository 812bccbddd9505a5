//! The command clock: which tick the client's next command is for, the
//! hold that lets the server catch up, and the fixed timestep (the server's
//! tick rate, nudged a few percent to keep commands arriving just in time).
//!
//! Clock sync: every snapshot says how early the command for its tick reached
//! the server (or that it had not come: late). How far ahead the client
//! runs comes from how much those arrivals vary (the jitter the server sees:
//! the network's, the frames', the server's own frames): the clock aims the
//! commands' mean head start at a millisecond and three mean deviations,
//! plus, on a lossy link, enough to cover a lost packet (each late command
//! raises it, and it fades over seconds), so that late commands stay rare,
//! and no more, since every millisecond of head start is a millisecond of
//! the peeker's advantage. It gets there by
//! running its fixed timestep up to a few percent faster or slower, as
//! Overwatch does. The snapshot also names the newest command tick received:
//! when the clock is far off (on joining, after a stall) it resets instead,
//! skipping ticks forward or holding for a few, rather than drifting for
//! seconds.
//!
//! The server time remote players are drawn at is the other clock
//! (`render_clock`).

use std::collections::VecDeque;
use std::time::Duration;

use arena_sim::{tick_after, tick_diff};
use bevy::prelude::*;
use bevy_renet::RenetClient;

use crate::vocabulary::{SessionState, SnapshotArrived, Welcomed};

/// The head start aimed at: this much, seconds...
pub(crate) const HEAD_START_FLOOR_S: f64 = 0.001;
/// ...plus this many mean deviations of the commands' arrival (their jitter)...
pub(crate) const HEAD_START_DEVIATIONS: f64 = 3.0;
/// ...plus an allowance for lost packets (a lost command comes with the next
/// packet, a packet later, so on a lossy link the head start must cover
/// one): each command that came late adds this much, ticks...
pub(crate) const LATE_ALLOWANCE_TICKS: f32 = 0.5;
/// (a run of late commands, as after a stalled frame, counts once)...
/// ...and it fades by this much a second, ticks, so that it lasts only
/// while commands keep coming late (at 10% loss, about one command in 300
/// is late: the allowance covers one lost packet, and fades in seconds
/// once the link is clean).
pub(crate) const ALLOWANCE_FADE_TICKS_PER_S: f32 = 0.1;
/// The largest allowance, ticks.
pub(crate) const MAX_ALLOWANCE_TICKS: f32 = 2.0;
/// The clock resets when the newest command, at best over the last few
/// snapshots, is more than this many ticks behind the server's tick (three
/// packets in a row lost cannot do that)...
pub(crate) const RESET_BEHIND_TICKS: i32 = 2;
/// ...or more than this many ticks ahead of where it should be.
pub(crate) const RESET_AHEAD_TICKS: i32 = 4;
/// Largest jump or hold of the clock at once, ticks. The server's word on
/// ticks is untrusted: whatever it says, the clock moves by at most this.
pub const MAX_JUMP_TICKS: u32 = 1 << 16;
/// Largest change of the tick rate, as a fraction (5%).
pub const MAX_RATE_ADJUST: f64 = 0.05;
/// Rate change per second of head-start error: a clock 5 ms off runs 0.5%
/// fast or slow, closing the error within about a second (slower than the
/// margins' window, so the clock does not chase its own wake).
const RATE_ADJUST_PER_S: f64 = 1.0;
/// Margins the head start is measured over: the last half second.
const MARGIN_WINDOW_S: f64 = 0.5;
/// Depth samples the reset decision looks at.
const WINDOW: usize = 16;
/// Samples needed before deciding anything.
const MIN_SAMPLES: usize = 8;
/// The head start's least width, ticks: how far ahead of the server's tick
/// the newest command may run before the clock resets (see `settle`).
const MAX_HEAD_START_TICKS: i32 = 2;
/// Resets said in the log (at info) on one connection; the rest at debug.
const LOGGED_RESETS: u32 = 4;

/// The client's clock relative to the server's.
#[derive(Resource, Debug, Clone)]
pub struct ClockSync {
    tick_hz: u32,
    /// Recent distances between our newest command and the server's tick.
    depths: VecDeque<i32>,
    /// Recent margins: how early the command for each snapshot's tick came
    /// (negative: late), ticks.
    margins: VecDeque<f32>,
    /// Feedback about commands older than this tick predates the last reset.
    valid_from_tick: u32,
    /// Ticks to skip (not simulate, not send) to fall back towards the server.
    pub hold_ticks: u32,
    /// Current tick rate factor: above 1 runs faster than the server.
    pub rate: f64,
    /// The worst margin over the window, ticks.
    pub margin: Option<f32>,
    /// The mean margin over the window (the head start our commands have), ticks.
    pub head_start: Option<f32>,
    /// The head start aimed at, from the jitter, ticks.
    pub target: Option<f32>,
    /// The mean deviation of the margins (the arrival jitter), ticks.
    pub jitter: Option<f32>,
    /// The share of the window's ticks whose command came late.
    pub late_share: f32,
    /// The head start added for lost packets, ticks.
    pub allowance: f32,
    /// The newest snapshot tick fed back (for the allowance's time), and
    /// whether its command was late.
    last_feedback_tick: Option<u32>,
    last_late: bool,
    /// The newest command tick minus the server's tick, ticks.
    pub depth: Option<i32>,
    /// Times the clock was reset.
    pub resets: u32,
    /// Feedback has come since the last decision.
    unsettled: bool,
}

impl ClockSync {
    pub fn new(tick_hz: u32) -> Self {
        Self {
            tick_hz,
            depths: VecDeque::new(),
            margins: VecDeque::new(),
            valid_from_tick: 0,
            hold_ticks: 0,
            rate: 1.0,
            margin: None,
            head_start: None,
            target: None,
            jitter: None,
            late_share: 0.0,
            allowance: 0.0,
            last_feedback_tick: None,
            last_late: false,
            depth: None,
            resets: 0,
            unsettled: false,
        }
    }

    /// Margins kept: half a second's worth at the tick rate, at least the
    /// minimum to decide on.
    fn margin_window(&self) -> usize {
        ((f64::from(self.tick_hz) * MARGIN_WINDOW_S).round() as usize).max(MIN_SAMPLES)
    }

    /// The first tick for our commands on joining: the server's tick, plus the
    /// round trip, plus the margin we aim for.
    pub fn initial_tick(&mut self, server_tick: u32, rtt: Duration) -> u32 {
        let rtt_ticks = (rtt.as_secs_f64() * f64::from(self.tick_hz)).ceil().min(f64::from(MAX_JUMP_TICKS)) as u32;
        let tick = server_tick.wrapping_add(rtt_ticks + 2);
        self.valid_from_tick = tick;
        tick
    }

    /// Takes one snapshot's feedback and settles on it at once: how many
    /// ticks to jump forward now (0 almost always). The game takes a
    /// frame's snapshots with [`Self::take_feedback`] and settles once.
    #[cfg(test)]
    fn on_feedback(
        &mut self,
        snapshot_tick: u32,
        newest_cmd_tick: Option<u32>,
        margin_ticks: Option<f32>,
        client_tick: u32,
    ) -> u32 {
        self.take_feedback(snapshot_tick, newest_cmd_tick, margin_ticks);
        self.settle(client_tick)
    }

    /// Takes one snapshot's feedback, deciding nothing yet.
    pub fn take_feedback(&mut self, snapshot_tick: u32, newest_cmd_tick: Option<u32>, margin_ticks: Option<f32>) {
        // Feedback about commands made before the last reset says nothing
        // about the clock as it is now.
        if let Some(margin) = margin_ticks.filter(|m| m.is_finite())
            && !tick_after(self.valid_from_tick, snapshot_tick)
        {
            self.margins.push_back(margin.clamp(-MAX_HEAD_START_TICKS as f32 * 4.0, self.tick_hz as f32));
            while self.margins.len() > self.margin_window() {
                self.margins.pop_front();
            }
            // The allowance for lost packets: up with each late command,
            // slowly down with time.
            let elapsed_ticks = self.last_feedback_tick.map_or(1, |last| tick_diff(snapshot_tick, last).clamp(0, 64));
            self.last_feedback_tick = Some(snapshot_tick);
            let fade = ALLOWANCE_FADE_TICKS_PER_S * elapsed_ticks as f32 / self.tick_hz as f32;
            let run_started = margin < 0.0 && !self.last_late;
            self.last_late = margin < 0.0;
            let late = if run_started { LATE_ALLOWANCE_TICKS } else { 0.0 };
            self.allowance = (self.allowance - fade + late).clamp(0.0, MAX_ALLOWANCE_TICKS);
        }
        let Some(newest) = newest_cmd_tick else { return };
        if tick_after(self.valid_from_tick, newest) {
            return;
        }
        let depth = tick_diff(newest, snapshot_tick);
        self.depth = Some(depth);
        self.depths.push_back(depth);
        while self.depths.len() > WINDOW {
            self.depths.pop_front();
        }
        self.unsettled = true;
    }

    /// Decides on the feedback taken since the last time: a reset (returns
    /// how many ticks to jump forward now; a hold is counted down as
    /// commands are made) or the rate. Once a frame, with all of the frame's
    /// snapshots in the window: a server whose frame ran several ticks (a
    /// slow page's in-page server, a stalled one) sends a batch, and its
    /// older snapshots show the server's tick before it ran the rest, so
    /// our newest command would seem ticks further ahead than it is:
    /// decided mid-batch, the clock would hold, then find every command
    /// late, and reset again. The window's least depth is the batch's end.
    pub fn settle(&mut self, client_tick: u32) -> u32 {
        if !std::mem::take(&mut self.unsettled) || self.depths.len() < MIN_SAMPLES {
            return 0;
        }
        let Some(min) = self.depths.iter().copied().min() else { return 0 };
        let max_depth = MAX_HEAD_START_TICKS.max(self.target.map_or(0, |t| t.ceil() as i32 + 1));
        // Every command late and none run: no margins will come to steer by.
        let all_late = self.margins.is_empty() && min < 0;
        if all_late || !(-RESET_BEHIND_TICKS..=max_depth + RESET_AHEAD_TICKS).contains(&min) {
            // Aim the newest command at one tick ahead of the server's.
            let max = self.depths.iter().copied().max().unwrap_or(min);
            let limit = i64::from(MAX_JUMP_TICKS);
            let correction = (1 - i64::from(min)).clamp(-limit, limit);
            // Rare (joining, a stall): worth a line that says why, the first
            // few times (a broken server could cause one every few frames).
            if self.resets < LOGGED_RESETS {
                info!(
                    "clock reset by {correction} ticks (the newest command was {min} to {max} ticks ahead of the \
                 server's tick over the last {} snapshots; {} margins, late share {:.2})",
                    self.depths.len(),
                    self.margins.len(),
                    self.margins.iter().filter(|m| **m < 0.0).count() as f32 / self.margins.len().max(1) as f32,
                );
            } else {
                debug!("clock reset by {correction} ticks (the newest command was {min} ticks ahead)");
            }
            self.resets += 1;
            self.depths.clear();
            self.margins.clear();
            self.rate = 1.0;
            self.margin = None;
            // A clock far off made every command late: not the link's loss.
            self.allowance = 0.0;
            self.target = None;
            self.last_feedback_tick = None;
            self.last_late = false;
            if correction > 0 {
                self.valid_from_tick = client_tick.wrapping_add(correction as u32);
                return correction as u32;
            }
            // Ticks stay monotonic: rather than going back, wait. The next
            // command after the wait is for `client_tick`.
            self.hold_ticks = self.hold_ticks.saturating_add((-correction) as u32).min(MAX_JUMP_TICKS);
            self.valid_from_tick = client_tick;
            return 0;
        }
        if self.margins.len() >= MIN_SAMPLES {
            self.steer();
        }
        0
    }

    /// Sets the rate from the margins: the mean head start towards the
    /// floor plus [`HEAD_START_DEVIATIONS`] mean deviations of them plus
    /// the allowance for lost packets.
    fn steer(&mut self) {
        let n = self.margins.len() as f32;
        let mean = self.margins.iter().sum::<f32>() / n;
        let jitter = self.margins.iter().map(|m| (m - mean).abs()).sum::<f32>() / n;
        let ticks_per_s = f64::from(self.tick_hz);
        let target =
            HEAD_START_FLOOR_S * ticks_per_s + HEAD_START_DEVIATIONS * f64::from(jitter) + f64::from(self.allowance);
        self.margin = Some(self.margins.iter().copied().fold(f32::INFINITY, f32::min));
        self.head_start = Some(mean);
        self.jitter = Some(jitter);
        self.target = Some(target as f32);
        self.late_share = self.margins.iter().filter(|m| **m < 0.0).count() as f32 / n;
        // Too much head start: slower; too little: faster.
        let error_s = (f64::from(mean) - target) / ticks_per_s;
        self.rate = 1.0 - (error_s * RATE_ADJUST_PER_S).clamp(-MAX_RATE_ADJUST, MAX_RATE_ADJUST);
    }

    /// The fixed timestep for the current rate.
    pub fn timestep(&self) -> Duration {
        Duration::from_secs_f64(1.0 / (f64::from(self.tick_hz) * self.rate))
    }
}

/// The tick the client's next command is for.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClientTick(pub u32);

/// The next tick to make a command for, or `None` while holding (the clock
/// was ahead: this tick is skipped, nothing simulated, nothing sent).
pub(crate) fn next_command_tick(tick: &mut ClientTick, sync: Option<&mut ClockSync>) -> Option<u32> {
    if let Some(sync) = sync
        && sync.hold_ticks > 0
    {
        sync.hold_ticks -= 1;
        return None;
    }
    let this = tick.0;
    tick.0 = tick.0.wrapping_add(1);
    Some(this)
}

pub(crate) fn plugin(app: &mut App) {
    // A fresh command clock on every connection; the clock sync comes with the welcome.
    app.init_session_resource::<ClientTick>().remove_on_connect::<ClockSync>();
}

/// On the welcome: the server's tick rate, and the clock started a round trip
/// and a little ahead of the server.
pub(crate) fn start_clock(
    mut welcomed: MessageReader<Welcomed>,
    client: Option<Res<RenetClient>>,
    mut tick: ResMut<ClientTick>,
    mut fixed: ResMut<Time<Fixed>>,
    mut commands: Commands,
) {
    for welcome in welcomed.read() {
        let mut sync = ClockSync::new(welcome.tick_hz);
        let rtt = client.as_ref().map(|c| Duration::from_secs_f64(c.rtt().max(0.0))).unwrap_or_default();
        tick.0 = sync.initial_tick(welcome.server_tick, rtt);
        info!(
            "command clock started at tick {} (the server's {} and a round trip of {:.0} ms)",
            tick.0,
            welcome.server_tick,
            rtt.as_secs_f64() * 1000.0
        );
        fixed.set_timestep(sync.timestep());
        commands.insert_resource(sync);
    }
}

/// On each snapshot: the clock sync's feedback (rate, reset).
pub(crate) fn follow_server(
    mut applied: MessageReader<SnapshotArrived>,
    sync: Option<ResMut<ClockSync>>,
    mut tick: ResMut<ClientTick>,
    mut fixed: ResMut<Time<Fixed>>,
) {
    let Some(mut sync) = sync else {
        applied.clear();
        return;
    };
    for snapshot in applied.read() {
        sync.take_feedback(snapshot.tick, snapshot.newest_cmd_tick, snapshot.margin_ticks);
    }
    let jump = sync.settle(tick.0);
    tick.0 = tick.0.wrapping_add(jump);
    let timestep = sync.timestep();
    if fixed.timestep() != timestep {
        fixed.set_timestep(timestep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `n` snapshots with the newest command `depth` ticks ahead and the
    /// given margin, starting at server tick `from`.
    fn feed(sync: &mut ClockSync, from: u32, n: u32, depth: i32, margin: Option<f32>, client_tick: u32) -> u32 {
        (from..from + n).map(|t| sync.on_feedback(t, Some(t.wrapping_add_signed(depth)), margin, client_tick)).sum()
    }

    #[test]
    fn a_small_head_start_speeds_up_and_a_large_one_slows_down() {
        let mut sync = ClockSync::new(64);
        feed(&mut sync, 100, 80, 1, Some(-0.5), 0);
        assert!(sync.rate > 1.0 && sync.rate <= 1.0 + MAX_RATE_ADJUST, "{}", sync.rate);
        assert_eq!(sync.late_share, 1.0, "every command in the window came late");
        let mut sync = ClockSync::new(64);
        feed(&mut sync, 180, 70, 2, Some(1.8), 0);
        assert!(sync.rate < 1.0, "{}", sync.rate);
        assert_eq!(sync.late_share, 0.0);
        assert_eq!(sync.resets, 0);
    }

    /// Feeds margins `mean ± spread` (alternating) from tick `from`.
    fn feed_spread(sync: &mut ClockSync, from: u32, mean: f32, spread: f32) {
        for t in from..from + 64 {
            let margin = if t % 2 == 0 { mean + spread } else { mean - spread };
            sync.on_feedback(t, Some(t + 1), Some(margin), 0);
        }
    }

    #[test]
    fn the_head_start_aimed_at_comes_from_the_jitter() {
        let floor = (HEAD_START_FLOOR_S * 64.0) as f32;
        // No jitter: the floor alone; a clock there runs at the server's rate.
        let mut sync = ClockSync::new(64);
        feed_spread(&mut sync, 100, floor, 0.0);
        assert!((sync.target.expect("a target") - floor).abs() < 1e-4);
        assert!((sync.rate - 1.0).abs() < 1e-6, "{}", sync.rate);
        // Commands arriving half a tick either way: three half ticks more.
        let mut sync = ClockSync::new(64);
        let wanted = floor + 3.0 * 0.5;
        feed_spread(&mut sync, 100, wanted, 0.5);
        assert!((sync.jitter.expect("a jitter") - 0.5).abs() < 1e-4);
        assert!((sync.target.expect("a target") - wanted).abs() < 1e-4);
        assert!((sync.rate - 1.0).abs() < 1e-6, "at the target: {}", sync.rate);
        // The same jitter with less head start: faster, by the error (5 ms: 0.5%).
        feed_spread(&mut sync, 200, wanted - 0.32, 0.5);
        assert!((sync.rate - 1.005).abs() < 1e-4, "{}", sync.rate);
    }

    #[test]
    fn late_commands_raise_the_head_start_and_the_raise_fades() {
        let mut sync = ClockSync::new(64);
        // One command in ten late (a lossy link at too small a head start).
        for t in 100..164u32 {
            let margin = if t % 10 == 0 { -1.0 } else { 0.1 };
            sync.on_feedback(t, Some(t + 1), Some(margin), 0);
        }
        let raised = sync.allowance;
        assert!(raised >= 1.0, "{raised} ticks: enough to cover a lost packet");
        assert!(sync.target.expect("a target") > raised);
        // Five seconds without a late one: it fades, by half a tick.
        for t in 164..484u32 {
            sync.on_feedback(t, Some(t + 1), Some(1.5), 0);
        }
        assert!((sync.allowance - (raised - 5.0 * ALLOWANCE_FADE_TICKS_PER_S)).abs() < 0.01, "{}", sync.allowance);
        // A stalled frame's run of late commands counts once.
        let before = sync.allowance;
        for t in 484..494u32 {
            sync.on_feedback(t, Some(t + 1), Some(-1.0), 0);
        }
        assert!(sync.allowance - before <= LATE_ALLOWANCE_TICKS, "{before} -> {}", sync.allowance);
    }

    #[test]
    fn margins_about_commands_from_before_a_reset_are_ignored() {
        let mut sync = ClockSync::new(64);
        sync.valid_from_tick = 100;
        feed(&mut sync, 60, 40, 1, Some(-1.0), 0);
        assert_eq!((sync.rate, sync.margin), (1.0, None));
        feed(&mut sync, 100, 10, 1, Some(-1.0), 0);
        assert!(sync.rate > 1.0);
    }

    #[test]
    fn commands_that_are_all_late_reset_the_clock() {
        let mut sync = ClockSync::new(20);
        let jumped = feed(&mut sync, 10, 10, -1, None, 50);
        assert_eq!((sync.resets, jumped), (1, 2));
    }

    #[test]
    fn a_large_error_resets_once_and_ignores_stale_feedback() {
        let mut sync = ClockSync::new(64);
        let jumped = feed(&mut sync, 500, 20, -20, None, 1000);
        assert_eq!(sync.resets, 1);
        assert_eq!(jumped, 21, "jumps to one tick ahead");
        // Feedback still about commands from before the jump changes nothing.
        let jumped = feed(&mut sync, 520, 40, -20, None, 1021);
        assert_eq!((sync.resets, jumped), (1, 0));
    }

    #[test]
    fn absurd_feedback_moves_the_clock_a_bounded_amount() {
        let mut sync = ClockSync::new(64);
        for t in 0..20u32 {
            sync.on_feedback(t, Some(t.wrapping_add(i32::MIN as u32)), Some(f32::NAN), 0);
        }
        let mut sync = ClockSync::new(64);
        let jumped: u32 =
            (0..20u32).map(|t| sync.on_feedback(t, Some(t.wrapping_add(0x7fff_ffff)), Some(1e30), 0)).sum();
        assert!(sync.hold_ticks <= MAX_JUMP_TICKS && jumped <= MAX_JUMP_TICKS);
        assert!(sync.rate.is_finite());
    }

    /// A slow server frame's batch: the server ran ticks `from + 1..=to`
    /// with every command up to `newest` in hand, and sent a snapshot a tick.
    fn batch(from: u32, to: u32, newest: u32) -> impl Iterator<Item = (u32, Option<u32>, Option<f32>)> {
        (from + 1..=to).map(move |t| (t, Some(newest), Some((newest - t) as f32 + 0.5)))
    }

    #[test]
    fn a_batch_of_snapshots_is_judged_once_it_is_all_in() {
        // An in-page server at 3 frames a second (a slow page's first
        // frames in a game): each frame the client makes 21 commands, then
        // the server runs their 21 ticks; the newest command is a tick
        // ahead of the batch's newest snapshot.
        let (mut sync, mut settled) = (ClockSync::new(64), ClockSync::new(64));
        let mut client_tick = 23;
        for frame in 0..10u32 {
            let (from, to) = (frame * 21, frame * 21 + 21);
            for (tick, newest, margin) in batch(from, to, to + 1) {
                settled.take_feedback(tick, newest, margin);
                sync.on_feedback(tick, newest, margin, client_tick);
            }
            assert_eq!(settled.settle(client_tick), 0);
            client_tick += 21;
        }
        assert_eq!((settled.resets, settled.hold_ticks), (0, 0), "a tick ahead is where the clock should be");
        // Judged snapshot by snapshot, the batch's first ones look twenty
        // ticks ahead: the clock would hold for nothing.
        assert!(sync.resets > 0 && sync.hold_ticks > 0, "{} resets", sync.resets);
        // A batch that shows the clock far ahead at its end (the newest
        // command 60 ticks past the server's, which we made) still resets:
        // a hold back to a tick ahead.
        let newest = client_tick + 59;
        for (tick, newest, margin) in batch(210, 231, newest) {
            settled.take_feedback(tick, newest, margin);
        }
        assert_eq!(settled.settle(client_tick + 60), 0);
        assert_eq!((settled.resets, settled.hold_ticks), (1, newest - 231 - 1));
    }

    #[test]
    fn far_ahead_holds_instead_of_going_back() {
        let mut sync = ClockSync::new(64);
        feed(&mut sync, 0, 10, 30, None, 40);
        assert_eq!(sync.resets, 1);
        assert_eq!(sync.hold_ticks, 29);
    }
}
