//! The round trip, measured from each command's departure (when it left
//! the client, on the link's clock) to the arrival of the snapshot of the
//! tick that ran it (when it came off the socket), less the time the server
//! held it between (the command's head start, and the snapshot's wait for
//! the end of the server's frame; the snapshot says both). No frame of ours
//! is in it: a client drawing 8 frames a second measures the same round trip
//! as one drawing 240. renet's own figure, which times its packets from the
//! frame that made them, stands in until commands flow.

use std::collections::VecDeque;

use bevy::prelude::*;

use crate::transport::UdpTransport;
use crate::vocabulary::{Roster, SessionState, SnapshotArrived};

/// Round trips the figure is the median of (half a second at 128 Hz).
pub(crate) const ROUND_TRIP_SAMPLES: usize = 64;
/// A sample longer than this is not a round trip (a command lost and sent
/// again, a stalled frame), seconds.
const MAX_SAMPLE_S: f64 = 2.0;

/// The measured round trip.
#[derive(Resource, Debug, Default, Clone)]
pub struct RoundTrip {
    samples: VecDeque<f64>,
    /// The median of the recent samples, seconds.
    pub rtt_s: Option<f64>,
}

impl RoundTrip {
    /// One command that left at `departed_s`, was held `held_s` by the
    /// server, and whose tick's snapshot came at `arrived_s` (seconds).
    pub fn sample(&mut self, departed_s: f64, held_s: f64, arrived_s: f64) {
        let rtt = arrived_s - departed_s - held_s;
        if !(rtt.is_finite() && (0.0..MAX_SAMPLE_S).contains(&rtt)) {
            return;
        }
        self.samples.push_back(rtt);
        while self.samples.len() > ROUND_TRIP_SAMPLES {
            self.samples.pop_front();
        }
        let mut sorted: Vec<f64> = self.samples.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        self.rtt_s = sorted.get(sorted.len() / 2).copied();
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<RoundTrip>();
}

/// On each snapshot of a tick that ran our own command: a round trip.
pub(crate) fn measure_round_trip(
    mut arrived: MessageReader<SnapshotArrived>,
    transport: Option<Res<UdpTransport>>,
    roster: Res<Roster>,
    mut round_trip: ResMut<RoundTrip>,
) {
    let Some(transport) = transport else {
        arrived.clear();
        return;
    };
    let rate = roster.tick_rate();
    for snapshot in arrived.read() {
        // Only a tick that ran the command made for it (a late one's
        // margin says only that it had not come).
        let Some(margin) = snapshot.margin_ticks.filter(|m| *m >= 0.0 && snapshot.last_cmd_tick == Some(snapshot.tick))
        else {
            continue;
        };
        let Some(departed) = transport.departure_of(snapshot.tick) else { continue };
        let held_s = rate.ticks_to_s(f64::from(margin) + snapshot.sent_after_ticks);
        round_trip.sample(departed.as_secs_f64(), held_s, snapshot.arrived_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_hold_comes_off_and_odd_samples_stay_out() {
        let mut rt = RoundTrip::default();
        // Left at 1.000 s, held 12 ms, back at 1.052 s: 40 ms.
        rt.sample(1.000, 0.012, 1.052);
        assert!((rt.rtt_s.expect("a round trip") - 0.040).abs() < 1e-9);
        // A snapshot that came before its command left, or seconds later: not round trips.
        rt.sample(1.000, 0.0, 0.990);
        rt.sample(1.000, 0.0, 9.0);
        rt.sample(f64::NAN, 0.0, 1.0);
        assert_eq!(rt.samples.len(), 1);
    }

    #[test]
    fn the_figure_is_the_median_of_the_recent_samples() {
        let mut rt = RoundTrip::default();
        for i in 0..200 {
            // Mostly 40 ms; every tenth, a lost datagram's 100 ms.
            let rtt = if i % 10 == 0 { 0.100 } else { 0.040 };
            rt.sample(f64::from(i), 0.005, f64::from(i) + 0.005 + rtt);
        }
        assert!((rt.rtt_s.expect("a round trip") - 0.040).abs() < 1e-9);
        assert_eq!(rt.samples.len(), ROUND_TRIP_SAMPLES);
    }
}
