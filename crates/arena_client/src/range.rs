//! The shooting range as a client sees it: the tally the server keeps for
//! us (shots, hits) and the misses it reported, with where the target was on
//! the server, newest last.

use std::collections::VecDeque;

use arena_protocol::{RangeMiss, ToClient};
use bevy::prelude::*;

use crate::vocabulary::{GameMessage, SessionState};

/// Misses remembered for the HUD.
pub(crate) const MAX_RANGE_MISSES: usize = 8;

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<RangeStats>();
}

/// Our tally on a range, as the server counts it.
#[derive(Resource, Debug, Default, Clone)]
pub struct RangeStats {
    pub shots: u32,
    pub hits: u32,
    /// The latest misses and when they were reported (real time, seconds).
    pub misses: VecDeque<(RangeMiss, f64)>,
}

impl RangeStats {
    /// Hits per shot, 0 before the first shot.
    pub fn hit_ratio(&self) -> f64 {
        if self.shots == 0 { 0.0 } else { f64::from(self.hits) / f64::from(self.shots) }
    }
}

pub(crate) fn apply_range_reports(
    mut messages: MessageReader<GameMessage>,
    time: Res<Time<Real>>,
    mut stats: ResMut<RangeStats>,
) {
    for GameMessage(message) in messages.read() {
        let ToClient::Range(report) = message else { continue };
        stats.shots = report.shots;
        stats.hits = report.hits;
        if let Some(miss) = report.miss {
            stats.misses.push_back((miss, time.elapsed_secs_f64()));
            while stats.misses.len() > MAX_RANGE_MISSES {
                stats.misses.pop_front();
            }
        }
    }
}
