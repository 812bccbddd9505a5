//! The match: frags and deaths, a kill feed, and a match that ends at the
//! frag limit (a player's in free-for-all and duel, a team's in team
//! deathmatch) or the time limit, shows its results for a few seconds and
//! starts again.

use arena_protocol::demo_frame::FragScore;
use arena_protocol::modes::{Mode, Team};
use arena_protocol::{MatchInfo, MatchPhase, ScoreRow, ToClient};
use arena_sim::PlayerId;
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::life::{SpawnRotation, hold, positions, respawn};
use crate::config::MatchRules;
use crate::net::broadcast;
use crate::vocabulary::{
    AwaitingMap, Frag, GameMode, PlayersChanged, Range, Roster, Score, ServerPlayer, ServerTick, Sim, SimWorld,
    TickRate,
};

/// How often the scoreboard (with fresh pings) and the match clock go out
/// when nothing else has changed, seconds.
const REFRESH_S: u32 = 2;

/// The shortest gap between two scoreboards, milliseconds. Each one carries
/// every player's row (about 4 bytes each, 260 bytes at 64 players). Kills
/// travel as events (`Killed`, which clients count in themselves), so a
/// table goes only at the refresh and when players or the phase change;
/// a burst of those changes waits this long.
const MIN_GAP_MS: u32 = 250;

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<Frag>()
        .init_resource::<MatchState>()
        .init_resource::<ScoredFrags>()
        .add_observer(|_: On<PlayersChanged>, mut state: ResMut<MatchState>| state.dirty = true)
        .add_observer(restart_match);
}

#[derive(Resource, Debug, Clone)]
pub struct MatchState {
    pub number: u32,
    pub phase: MatchPhase,
    /// The tick this phase ends (0: not started yet).
    pub phase_ends_tick: u32,
    /// Each team's frags in this match, red then blue (team deathmatch):
    /// kept when a player leaves or switches, as Quake 3 keeps them.
    pub team_frags: [i16; 2],
    /// The duel's loser, who queues for the next match while the winner stays.
    /// With its entity: an id may be a newcomer's by the next match.
    pub(crate) duel_loser: Option<(PlayerId, Entity)>,
    dirty: bool,
    last_sent_tick: u32,
}

/// Ends this match with no result, so that the next match (scores
/// cleared, everyone respawned) starts at the next tick: the console's
/// `map` and `changelevel`.
#[derive(Event, Debug, Clone, Copy)]
pub(crate) struct RestartMatch;

fn restart_match(_: On<RestartMatch>, tick: Res<ServerTick>, mut state: ResMut<MatchState>) {
    state.phase = MatchPhase::Over { winner: None, team: None };
    state.phase_ends_tick = tick.0.max(1);
    state.dirty = true;
}

impl Default for MatchState {
    fn default() -> Self {
        Self {
            number: 1,
            phase: MatchPhase::Playing,
            phase_ends_tick: 0,
            team_frags: [0; 2],
            duel_loser: None,
            dirty: true,
            last_sent_tick: 0,
        }
    }
}

impl MatchState {
    pub fn is_over(&self) -> bool {
        matches!(self.phase, MatchPhase::Over { .. })
    }
}

/// This tick's frags as they were scored (with the sides of that moment: a
/// dead player's waiting switch is made later in the tick; and not at all
/// once the match is over). The demo records them from here, so that a
/// replay scores as the server did.
#[derive(Resource, Debug, Default)]
pub(crate) struct ScoredFrags(pub Vec<(Frag, FragScore)>);

/// What a frag is worth to its killer: one, or one less for a fall or
/// (friendly fire on) a teammate.
fn frag_worth(frag: &Frag, roster: &Roster) -> i16 {
    arena_protocol::modes::frag_worth(frag.killer, frag.victim, roster.side(frag.killer), roster.side(frag.victim))
}

pub(crate) fn count_frags(
    mut frags: MessageReader<Frag>,
    mut scores: Query<(&ServerPlayer, &mut Score)>,
    (roster, rules, mode): (Res<Roster>, Res<MatchRules>, Res<GameMode>),
    tick: Res<ServerTick>,
    mut state: ResMut<MatchState>,
    mut server: ResMut<RenetServer>,
    mut scored: ResMut<ScoredFrags>,
) {
    scored.0.clear();
    // Scores are i16 (saturating): a limit past i16::MAX is the most a score
    // can reach, not a negative number every first frag passes.
    let limit = i16::try_from(rules.frag_limit).unwrap_or(i16::MAX);
    for frag in frags.read() {
        let over = state.is_over();
        let worth = frag_worth(frag, &roster);
        let score = match (over, worth < 0 && frag.killer != frag.victim) {
            (true, _) => FragScore::AfterTheEnd,
            (false, true) => FragScore::TeamKill,
            (false, false) => FragScore::Counted,
        };
        scored.0.push((*frag, score));
        for (player, mut score) in &mut scores {
            if over {
                continue; // the results stand
            }
            if player.id == frag.victim {
                score.deaths = score.deaths.saturating_add(1);
            }
            if player.id == frag.killer {
                score.frags = score.frags.saturating_add(worth);
                if !mode.mode.has_teams() && score.frags >= limit {
                    info!("{} reached the frag limit", roster.label(player.id));
                    state.phase_ends_tick = tick.0; // ends now
                }
            }
        }
        if let (false, Some(team)) = (over, roster.side(frag.killer).team()) {
            let frags = &mut state.team_frags[team.index()];
            *frags = frags.saturating_add(worth);
            if *frags >= limit {
                info!("the {} team reached the frag limit", team.name());
                state.phase_ends_tick = tick.0;
            }
        }
        if frag.killer == frag.victim {
            info!("{} fell out of the world", roster.label(frag.victim));
        }
        // Clients count the kill into their scoreboard themselves (scores as
        // events): the whole table follows at the next refresh.
        broadcast(&mut server, &ToClient::Killed { killer: frag.killer, victim: frag.victim, zone: frag.zone }, None);
    }
}

pub(crate) fn advance_phase(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    (rules, mode): (Res<MatchRules>, Res<GameMode>),
    world: Res<SimWorld>,
    roster: Res<Roster>,
    mut rotation: ResMut<SpawnRotation>,
    mut state: ResMut<MatchState>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, &mut Score, Has<AwaitingMap>)>,
    range: Option<Res<Range>>,
    mut commands: Commands,
) {
    // Practice on a range never ends.
    if range.is_some() {
        return;
    }
    let seconds = |s: u32| s.saturating_mul(rate.hz());
    if state.phase_ends_tick == 0 {
        state.phase_ends_tick = tick.0.wrapping_add(seconds(rules.time_limit_s));
        return;
    }
    if arena_sim::tick_after(state.phase_ends_tick, tick.0) {
        return;
    }
    match state.phase {
        MatchPhase::Playing => {
            let order = |s: &Score| (s.frags, -(s.deaths as i32));
            let best = players.iter().map(|(_, p, _, s, _)| (p.id, *s)).max_by_key(|(_, s)| order(s));
            let winner = best.filter(|(_, s)| s.frags > 0).map(|(id, _)| id);
            let team = winning_team(mode.mode.has_teams(), state.team_frags);
            match (winner, team) {
                (_, Some(team)) => info!(
                    "match {} over: the {} team wins {}:{}",
                    state.number,
                    team.name(),
                    state.team_frags[team.index()],
                    state.team_frags[team.other().index()]
                ),
                (_, None) if mode.mode.has_teams() => info!("match {} over: a draw", state.number),
                (Some(id), None) => info!("match {} over: {} wins", state.number, roster.label(id)),
                (None, None) => info!("match {} over: nobody scored", state.number),
            }
            // The duel's loser: the other of the two (on a draw, the one behind on deaths).
            state.duel_loser = (mode.mode == Mode::Duel)
                .then(|| players.iter().map(|(e, p, _, s, _)| (p.id, e, *s)).min_by_key(|(id, _, s)| (order(s), *id)))
                .flatten()
                .filter(|_| players.iter().count() >= 2)
                .map(|(id, entity, _)| (id, entity));
            let winner = if mode.mode.has_teams() { None } else { winner };
            state.phase = MatchPhase::Over { winner, team };
            state.phase_ends_tick = tick.0.wrapping_add(seconds(rules.results_s));
        }
        MatchPhase::Over { .. } => {
            state.number += 1;
            state.team_frags = [0; 2];
            info!("match {} starts", state.number);
            state.phase = MatchPhase::Playing;
            state.phase_ends_tick = tick.0.wrapping_add(seconds(rules.time_limit_s));
            let mut at = positions(players.iter().map(|(_, p, s, _, _)| (p, s)));
            for (entity, player, mut sim, mut score, awaiting) in &mut players {
                *score = Score::default();
                if awaiting {
                    hold(&mut commands, entity, &mut sim.0);
                } else {
                    respawn(&mut commands, (&world, &roster), &mut rotation, &mut at, (entity, player.id, &mut sim.0));
                }
            }
        }
    }
    state.dirty = true;
}

/// The team ahead (none without teams, or on a draw).
fn winning_team(teams: bool, frags: [i16; 2]) -> Option<Team> {
    match frags[0].cmp(&frags[1]) {
        _ if !teams => None,
        std::cmp::Ordering::Greater => Some(Team::Red),
        std::cmp::Ordering::Less => Some(Team::Blue),
        std::cmp::Ordering::Equal => None,
    }
}

pub(crate) fn publish(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    (rules, mode): (Res<MatchRules>, Res<GameMode>),
    mut state: ResMut<MatchState>,
    players: Query<(&ServerPlayer, &Score)>,
    (mut server, round_trips): (ResMut<RenetServer>, Res<crate::vocabulary::RoundTrips>),
) {
    let since_ticks = arena_sim::tick_diff(tick.0, state.last_sent_tick);
    let refresh_due = since_ticks >= (REFRESH_S * rate.hz()) as i32;
    let gap_done = since_ticks >= rate.ticks_in(MIN_GAP_MS as f32 / 1000.0) as i32 || since_ticks < 0;
    let send_now = refresh_due || (state.dirty && gap_done);
    if !send_now {
        return;
    }
    state.dirty = false;
    state.last_sent_tick = tick.0;
    let mut rows: Vec<ScoreRow> = players
        .iter()
        .map(|(p, s)| ScoreRow {
            id: p.id,
            frags: s.frags,
            deaths: s.deaths,
            ping_ms: p
                .client_id
                .map(|c| (round_trips.of(c, &server) * 1000.0).round().min(f64::from(u16::MAX)) as u16)
                .unwrap_or(0),
        })
        .collect();
    ScoreRow::rank(&mut rows);
    broadcast(&mut server, &ToClient::Scores(rows), None);
    let seconds_left = arena_sim::tick_diff(state.phase_ends_tick, tick.0).max(0) as u32 / rate.hz();
    let info = MatchInfo {
        number: state.number,
        phase: state.phase,
        frag_limit: rules.frag_limit,
        seconds_left,
        team_frags: mode.mode.has_teams().then_some(state.team_frags),
    };
    broadcast(&mut server, &ToClient::Match(info), None);
}
