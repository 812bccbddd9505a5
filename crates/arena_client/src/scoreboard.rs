//! The scoreboard and the match's state, as the server last told them,
//! with the kills heard of since counted in (the server sends its whole
//! table every couple of seconds and at every change of players or phase;
//! each kill comes as an event, scored by the rule the server scores by).

use arena_protocol::{MatchInfo, MatchPhase, ScoreRow, ToClient};
use bevy::prelude::*;

use crate::vocabulary::{GameMessage, Roster, SessionState};

pub(crate) fn plugin(app: &mut App) {
    app.init_session_resource::<Scoreboard>().init_session_resource::<MatchStatus>();
}

/// Everyone's frags, deaths and ping, best first.
#[derive(Resource, Debug, Default, Clone)]
pub struct Scoreboard {
    pub rows: Vec<ScoreRow>,
}

impl Scoreboard {
    /// A kill heard of: the victim's death and the killer's frag (`worth`),
    /// as the server counts them, until its next table.
    pub fn count(&mut self, killer: arena_sim::PlayerId, victim: arena_sim::PlayerId, worth: i16) {
        for row in &mut self.rows {
            if row.id == victim {
                row.deaths = row.deaths.saturating_add(1);
            }
            if row.id == killer {
                row.frags = row.frags.saturating_add(worth);
            }
        }
        ScoreRow::rank(&mut self.rows);
    }
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
    roster: Res<Roster>,
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
            ToClient::Killed { killer, victim, .. } if !status.is_over() => {
                let worth =
                    arena_protocol::modes::frag_worth(*killer, *victim, roster.side(*killer), roster.side(*victim));
                scoreboard.count(*killer, *victim, worth);
                if let (Some(team), Some(info)) = (roster.side(*killer).team(), status.info.as_mut())
                    && let Some(frags) = info.team_frags.as_mut()
                {
                    frags[team.index()] = frags[team.index()].saturating_add(worth);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::PlayerId;

    #[test]
    fn a_kill_heard_of_is_counted_and_the_table_reordered() {
        let row = |id, frags, deaths| ScoreRow { id: PlayerId(id), frags, deaths, ping_ms: 0 };
        let mut board = Scoreboard { rows: vec![row(1, 3, 0), row(2, 3, 1), row(3, 0, 2)] };
        board.count(PlayerId(2), PlayerId(1), 1);
        assert_eq!(board.rows, vec![row(2, 4, 1), row(1, 3, 1), row(3, 0, 2)]);
        board.count(PlayerId(3), PlayerId(3), -1);
        assert_eq!(board.rows[2], row(3, -1, 3));
    }
}
