//! The scoreboard and the match's state, as the server last told them.

use arena_protocol::{MatchInfo, MatchPhase, ScoreRow, ToClient};
use bevy::prelude::*;

use crate::vocabulary::{GameMessage, SessionState};

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<Scoreboard>().init_session_resource::<MatchStatus>();
}

/// Everyone's frags, deaths and ping, best first.
#[derive(Resource, Debug, Default, Clone)]
pub struct Scoreboard {
    pub rows: Vec<ScoreRow>,
}

/// The match, with the time it was heard of to count down from.
#[derive(Resource, Debug, Default, Clone)]
pub struct MatchStatus {
    pub info: Option<MatchInfo>,
    /// Real time at which `info` arrived, seconds.
    pub received_s: f64,
}

impl MatchStatus {
    /// Seconds left in the current phase at real time `now_s`.
    pub fn seconds_left(&self, now_s: f64) -> f64 {
        self.info.map(|i| (f64::from(i.seconds_left) - (now_s - self.received_s)).max(0.0)).unwrap_or(0.0)
    }

    pub fn is_over(&self) -> bool {
        self.info.is_some_and(|i| matches!(i.phase, MatchPhase::Over { .. }))
    }
}

pub(crate) fn follow(
    mut messages: MessageReader<GameMessage>,
    time: Res<Time<Real>>,
    mut scoreboard: ResMut<Scoreboard>,
    mut status: ResMut<MatchStatus>,
) {
    for GameMessage(message) in messages.read() {
        match message {
            ToClient::Scores(rows) if rows.len() <= arena_protocol::MAX_PLAYERS * 8 => {
                scoreboard.rows.clone_from(rows);
            }
            ToClient::Match(info) => {
                status.info = Some(*info);
                status.received_s = time.elapsed_secs_f64();
            }
            _ => {}
        }
    }
}
