//! The adaptive interpolation delay: about one snapshot interval plus what
//! the measured lateness of recent snapshots needs, growing at once when
//! they come late and shrinking back within seconds once the link is clean.
//!
//! What is measured is the need itself. When a snapshot newer than any
//! before it arrives, the server clock (as the render clock reads it) has
//! run on past the previous newest snapshot's tick by some time: a render
//! delay shorter than that would have drawn past the newest snapshot
//! (extrapolated) in that gap. On a clean link the need is one snapshot
//! interval give or take a frame; jitter and loss stretch some gaps. The
//! delay is a high percentile of the last seconds' needs, so that about one
//! gap in a hundred runs a little past the newest snapshot; one outage (one
//! long gap) does not move it, because the delay is for the link as it
//! keeps being, not for the worst second it ever had (the fault Valorant's
//! patch 4.10 fixed: a buffer that grew with loss and never came back).
//!
//! A player can still fix the delay by hand (`NetcodeSettings::interp_ms`).

use std::collections::VecDeque;

use bevy::prelude::*;

use crate::settings::NetcodeSettings;

/// How long the needs are remembered, seconds.
pub(crate) const NEED_WINDOW_S: f64 = 2.0;
/// The share of gaps the delay covers whole (the rest extrapolate a little).
pub(crate) const NEED_QUANTILE: f64 = 0.99;
/// Added to the quantile, seconds: a little room for the clock's wobble.
pub(crate) const DELAY_MARGIN_S: f64 = 0.001;
/// How fast a delay larger than needed shrinks, seconds per second: the
/// render clock then runs 5% fast, which the eye does not catch.
pub(crate) const SHRINK_PER_S: f64 = 0.05;
/// Needs counted before the delay follows them (or two seconds' worth at a
/// snapshot rate below 8 Hz); until then it is the old default, two
/// snapshot intervals.
const MIN_NEEDS: usize = 16;
/// Needs kept at most (two seconds at the highest snapshot rate, with room).
const MAX_NEEDS: usize = 512;

/// The interpolation delay, and the needs it follows.
#[derive(Resource, Debug, Default, Clone)]
pub struct InterpDelay {
    /// (when, need), seconds of our clock and seconds of delay, oldest first.
    needs: VecDeque<(f64, f64)>,
    /// What the needs ask for, seconds (kept from the last need: sorting a
    /// window's worth every frame would be waste).
    target_s: Option<f64>,
    /// The adaptive delay in use, seconds (none before the first frame).
    adaptive_s: Option<f64>,
    /// When it was last updated, seconds of our clock.
    updated_s: Option<f64>,
}

impl InterpDelay {
    /// At `now_s`, a newer snapshot came `need_s` after the server clock
    /// passed the previous newest one (the delay that gap needed), with
    /// snapshots `interval_s` apart.
    ///
    /// A gap as long as the longest delay there is (250 ms) is an outage,
    /// not jitter: no delay could have covered it, and counting it would
    /// hold the delay there for seconds after the link came back. Of the
    /// rest, the largest (and the top 1%) are left out too, so that one
    /// late snapshot alone never sets the delay, at any snapshot rate.
    pub fn observe(&mut self, now_s: f64, need_s: f64, interval_s: f64) {
        if !(need_s.is_finite() && now_s.is_finite() && interval_s.is_finite() && interval_s > 0.0) {
            return;
        }
        if need_s < max_delay_s() {
            self.needs.push_back((now_s, need_s.max(0.0)));
        }
        while self.needs.len() > MAX_NEEDS || self.needs.front().is_some_and(|(at, _)| now_s - at > NEED_WINDOW_S) {
            self.needs.pop_front();
        }
        let enough = MIN_NEEDS.min((NEED_WINDOW_S / interval_s).floor().max(2.0) as usize);
        self.target_s = (self.needs.len() >= enough).then(|| {
            let mut needs: Vec<f64> = self.needs.iter().map(|(_, need)| *need).collect();
            needs.sort_by(f64::total_cmp);
            let left_out = ((needs.len() as f64 * (1.0 - NEED_QUANTILE)).ceil() as usize).max(1);
            let quantile = needs[needs.len().saturating_sub(1 + left_out)];
            (quantile + DELAY_MARGIN_S).clamp(interval_s.min(max_delay_s()), max_delay_s())
        });
    }

    /// What the recent needs ask for, seconds: at least one snapshot
    /// interval; `None` until enough have been seen.
    pub fn target_s(&self) -> Option<f64> {
        self.target_s
    }

    /// The adaptive delay at `now_s`, seconds: up to the target at once,
    /// down to it at [`SHRINK_PER_S`].
    pub fn update(&mut self, now_s: f64, interval_s: f64) -> f64 {
        let start = (2.0 * interval_s).min(max_delay_s());
        let current = self.adaptive_s.unwrap_or(start);
        let elapsed = self.updated_s.map_or(0.0, |then| (now_s - then).clamp(0.0, 1.0));
        self.updated_s = Some(now_s);
        let target = self.target_s.unwrap_or(start);
        let next = if target >= current { target } else { (current - SHRINK_PER_S * elapsed).max(target) };
        self.adaptive_s = Some(next);
        next
    }

    /// The delay drawing uses at `now_s`, seconds: the player's fixed one,
    /// or the adaptive one.
    pub fn delay_s(&mut self, settings: &NetcodeSettings, now_s: f64, interval_s: f64) -> f64 {
        let adaptive = self.update(now_s, interval_s);
        settings.interp_ms.map_or(adaptive, |ms| f64::from(ms) / 1000.0)
    }
}

fn max_delay_s() -> f64 {
    f64::from(arena_protocol::MAX_INTERP_MS) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL_S: f64 = 1.0 / 64.0;

    /// Snapshots every interval for `seconds` from `from_s`, each gap's need
    /// given by `need`; the delay updated every 1/144 s.
    fn run(delay: &mut InterpDelay, from_s: f64, seconds: f64, need: impl Fn(usize) -> f64) -> f64 {
        let mut last = 0.0;
        let frames = (seconds * 144.0) as usize;
        let mut next_snapshot = from_s;
        let mut n = 0;
        for frame in 0..frames {
            let now = from_s + frame as f64 / 144.0;
            while next_snapshot <= now {
                delay.observe(now, need(n), INTERVAL_S);
                n += 1;
                next_snapshot += INTERVAL_S;
            }
            last = delay.update(now, INTERVAL_S);
        }
        last
    }

    #[test]
    fn a_clean_link_needs_about_one_interval() {
        let mut delay = InterpDelay::default();
        let settled = run(&mut delay, 0.0, 3.0, |n| INTERVAL_S + 0.002 * (n % 4) as f64);
        assert!((settled - (INTERVAL_S + 0.006 + DELAY_MARGIN_S)).abs() < 1e-9, "{settled}");
    }

    #[test]
    fn late_snapshots_grow_it_at_once_and_it_shrinks_back_slowly() {
        let mut delay = InterpDelay::default();
        let clean = run(&mut delay, 0.0, 3.0, |_| INTERVAL_S);
        // A burst of late snapshots: 1 in 10 comes 40 ms late.
        let late = |n: usize| if n.is_multiple_of(10) { INTERVAL_S + 0.040 } else { INTERVAL_S };
        let grown = run(&mut delay, 3.0, 0.5, late);
        assert!(grown >= INTERVAL_S + 0.040, "{grown}");
        // Clean again: two seconds to forget, then 5% a second down.
        let shrinking = run(&mut delay, 3.5, 2.2, |_| INTERVAL_S);
        assert!(shrinking < grown && shrinking > clean, "{clean} {shrinking} {grown}");
        let back = run(&mut delay, 5.7, 2.0, |_| INTERVAL_S);
        assert!((back - clean).abs() < 1e-9, "{back} vs {clean}");
    }

    #[test]
    fn an_outage_of_any_length_does_not_move_it() {
        for outage_s in [0.3, 0.5, 1.5, 3.0] {
            let mut delay = InterpDelay::default();
            let clean = run(&mut delay, 0.0, 3.0, |_| INTERVAL_S);
            // Nothing for the outage, then one snapshot after the long gap.
            let back_s = 3.0 + outage_s;
            delay.observe(back_s, outage_s, INTERVAL_S);
            let after = run(&mut delay, back_s, 1.0, |_| INTERVAL_S);
            assert!((after - clean).abs() < 1e-9, "{outage_s} s outage: {after} vs {clean}");
        }
    }

    #[test]
    fn one_late_snapshot_alone_does_not_set_it_at_a_low_rate() {
        // 20 snapshots a second: two seconds hold 40 needs.
        let interval_s = 0.05;
        let mut delay = InterpDelay::default();
        let mut last = 0.0;
        for n in 0..80 {
            let now = f64::from(n) * interval_s;
            let need = if n == 60 { interval_s + 0.1 } else { interval_s };
            delay.observe(now, need, interval_s);
            last = delay.update(now, interval_s);
        }
        assert!((last - (interval_s + DELAY_MARGIN_S)).abs() < 1e-9, "{last}");
    }

    #[test]
    fn a_very_low_snapshot_rate_still_adapts_and_the_start_is_bounded() {
        // 4 snapshots a second: two seconds hold 8 needs, fewer than 16.
        let interval_s = 0.25;
        let mut delay = InterpDelay::default();
        assert!(delay.update(0.0, interval_s) <= max_delay_s());
        for n in 0..12 {
            delay.observe(f64::from(n) * interval_s, interval_s * 0.9, interval_s);
        }
        assert!(delay.target_s().is_some(), "adapts with two seconds' worth");
    }

    #[test]
    fn absurd_needs_stay_within_bounds() {
        let mut delay = InterpDelay::default();
        for (i, need) in [f64::NAN, f64::INFINITY, -5.0, 1e30].into_iter().cycle().take(100).enumerate() {
            delay.observe(i as f64 * 0.01, need, INTERVAL_S);
            delay.observe(i as f64 * 0.01, 0.01, [f64::NAN, 0.0, -1.0, 1e-300][i % 4]);
        }
        let d = delay.update(1.0, INTERVAL_S);
        assert!(d.is_finite() && d <= max_delay_s(), "{d}");
        assert!(delay.needs.len() <= MAX_NEEDS);
    }

    #[test]
    fn a_fixed_delay_wins() {
        let mut delay = InterpDelay::default();
        let settings = NetcodeSettings { interp_ms: Some(50), ..NetcodeSettings::default() };
        assert_eq!(delay.delay_s(&settings, 0.0, INTERVAL_S), 0.05);
    }
}
