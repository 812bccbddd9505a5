//! The render clock: the client's estimate of the server's clock, and the
//! server time remote players are drawn at.
//!
//! Each snapshot's arrival time (when it came off the socket, not when a
//! frame read it), less how long after its tick the server's frame sent it
//! (which the snapshot says), smoothed, gives the server's time; remote
//! players are drawn at that time minus the interpolation delay (the render
//! time, which each command also carries for lag compensation).

use arena_sim::{TickRate, tick_after};
use bevy::prelude::*;

use crate::interp_delay::InterpDelay;
use crate::settings::NetcodeSettings;
use crate::vocabulary::{Roster, SessionState, SnapshotArrived};

/// How quickly the server-clock estimate follows each snapshot's arrival.
const CLOCK_SMOOTHING: f64 = 0.05;
/// A snapshot this far from the clock estimate resets it, seconds.
const CLOCK_RESET_S: f64 = 0.25;

/// The client's estimate of the server's clock, and the server time remote
/// players are drawn at.
#[derive(Resource, Debug, Default, Clone)]
pub struct ServerClock {
    /// Server time minus our local time, seconds, smoothed.
    offset_s: Option<f64>,
    /// The server time (in ticks) remote players are drawn at this frame.
    pub render_tick: f64,
    /// The interpolation delay in use, ticks.
    pub delay_ticks: f64,
    /// The newest snapshot's tick.
    pub newest_tick: Option<u32>,
}

impl ServerClock {
    /// Whether the clock has seen a snapshot yet.
    pub fn started(&self) -> bool {
        self.offset_s.is_some()
    }

    /// The server's time as the newest snapshots show it at our time
    /// `now_s` (the server's clock less the trip a snapshot takes), seconds.
    pub fn server_time_s(&self, now_s: f64) -> Option<f64> {
        self.offset_s.map(|offset| now_s + offset)
    }

    /// Takes a snapshot for `tick` that left the server `sent_after_ticks`
    /// after its tick and arrived at our time `now_s`.
    pub fn observe(&mut self, tick: u32, sent_after_ticks: f64, now_s: f64, rate: TickRate) {
        self.newest_tick = Some(tick);
        // The server's time when it sent the snapshot, against ours when it
        // came: the server's frame timing is taken out, only the trip's and
        // our frames' delays are left in.
        let sample = rate.ticks_to_s(f64::from(tick) + sent_after_ticks) - now_s;
        self.offset_s = Some(match self.offset_s {
            Some(offset) if (sample - offset).abs() < CLOCK_RESET_S => offset + (sample - offset) * CLOCK_SMOOTHING,
            _ => sample,
        });
    }

    /// How long after the server's clock passed the newest snapshot so far a
    /// newer snapshot for `tick` came at our time `now_s`, seconds: the
    /// interpolation delay that gap needed (see `interp_delay`). `None` for
    /// the first snapshot, or one not newer.
    pub fn gap_need_s(&self, tick: u32, now_s: f64, rate: TickRate) -> Option<f64> {
        let (offset, newest) = (self.offset_s?, self.newest_tick?);
        tick_after(tick, newest).then(|| now_s + offset - rate.ticks_to_s(f64::from(newest)))
    }

    /// The interpolation delay in use, milliseconds.
    pub fn delay_ms(&self, rate: TickRate) -> f64 {
        rate.ticks_to_ms(self.delay_ticks)
    }

    /// The server time a command made now was seen at: the render time, or
    /// the newest snapshot's tick with interpolation off (0: none yet).
    pub fn seen_tick(&self, interpolation: bool) -> f64 {
        if interpolation { self.render_tick } else { self.newest_tick.map(f64::from).unwrap_or(0.0) }
    }
}

pub(crate) fn plugin(app: &mut App) {
    // A fresh estimate on every connection.
    app.init_session_resource::<ServerClock>().init_session_resource::<InterpDelay>();
}

/// On each snapshot, at its arrival time: what the gap before it needed of
/// the interpolation delay, and the server clock's estimate.
pub(crate) fn follow_snapshots(
    mut arrived: MessageReader<SnapshotArrived>,
    roster: Res<Roster>,
    mut clock: ResMut<ServerClock>,
    mut delay: ResMut<InterpDelay>,
) {
    for snapshot in arrived.read() {
        let now = snapshot.arrived_s;
        if let Some(need) = clock.gap_need_s(snapshot.tick, now, roster.tick_rate()) {
            delay.observe(now, need, f64::from(roster.snapshot_rate().dt_s()));
        }
        clock.observe(snapshot.tick, snapshot.sent_after_ticks, now, roster.tick_rate());
    }
}

/// Every frame: the server time remote players are drawn at.
pub(crate) fn advance_render_clock(
    time: Res<Time<Real>>,
    settings: Res<NetcodeSettings>,
    roster: Res<Roster>,
    mut clock: ResMut<ServerClock>,
    mut delay: ResMut<InterpDelay>,
) {
    let Some(offset) = clock.offset_s else { return };
    let rate = roster.tick_rate();
    let interval_s = roster.snapshot_rate().dt_s() as f64;
    clock.delay_ticks = rate.s_to_ticks(delay.delay_s(&settings, time.elapsed_secs_f64(), interval_s));
    let wanted = rate.s_to_ticks(time.elapsed_secs_f64() + offset) - clock.delay_ticks;
    // Never backwards by a little (the estimate wobbles); by a lot, follow.
    clock.render_tick = if wanted < clock.render_tick && clock.render_tick - wanted < rate.s_to_ticks(CLOCK_RESET_S) {
        clock.render_tick
    } else {
        wanted
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_protocol::snapshot::Feedback;

    /// A server whose frames run at `server_fps` sends each tick's snapshot
    /// at the end of the frame that ran it, saying how late (or not, when
    /// `says_when`); each arrives `trip_s` later. Returns the clock's
    /// offset from the server's after 3 s.
    fn offset_after(server_fps: f64, trip_s: f64, says_when: bool) -> f64 {
        let rate = TickRate::new(64);
        let mut clock = ServerClock::default();
        let mut ticked = 0u32;
        for frame in 1..=(3.0 * server_fps) as u32 {
            let frame_s = f64::from(frame) / server_fps;
            while rate.ticks_to_s(f64::from(ticked + 1)) <= frame_s {
                ticked += 1;
                let late = if says_when { rate.s_to_ticks(frame_s) - f64::from(ticked) } else { 0.0 };
                let late = Feedback::sent_after_of(late);
                let late = Feedback { sent_after_256ths: late, ..Feedback::default() }.sent_after_ticks();
                clock.observe(ticked, late, frame_s + trip_s, rate);
            }
        }
        clock.offset_s.expect("snapshots came")
    }

    #[test]
    fn the_server_clock_does_not_carry_the_servers_frame_timing() {
        // Our clock starts with the server's; a snapshot takes 20 ms to come:
        // its time minus ours is -20 ms, at any server frame rate.
        for fps in [30.0, 60.0, 144.0, 1000.0] {
            let offset = offset_after(fps, 0.020, true);
            assert!((offset + 0.020).abs() < 0.05 / 1000.0, "{fps} frames a second: {offset}");
        }
        // Not told when each left, the clock would take a slow server's
        // frames for a longer trip.
        let slow = offset_after(30.0, 0.020, false);
        assert!(slow < -0.020 - 0.005, "{slow}");
    }
}
