//! The match: frags and deaths, a kill feed, and a free-for-all that ends at
//! the frag limit or the time limit, shows its results for a few seconds and
//! starts again.

use arena_protocol::{MatchInfo, MatchPhase, ScoreRow, ToClient};
use arena_sim::{HitZone, PlayerId};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::combat::Dead;
use crate::connections::{PlayersChanged, Roster, ServerPlayer};
use crate::net::broadcast;
use crate::simulation::{ServerTick, Sim};
use crate::{ServerSet, SimWorld, TickRate};

/// How often the scoreboard (with fresh pings) and the match clock go out
/// when nothing else has changed, seconds.
const REFRESH_S: u32 = 2;

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<Frag>()
        .init_resource::<MatchState>()
        .add_observer(|_: On<PlayersChanged>, mut state: ResMut<MatchState>| state.dirty = true)
        .add_systems(FixedUpdate, (count_frags, advance_phase, publish).chain().in_set(ServerSet::Match));
}

/// How matches are played.
#[derive(Resource, Debug, Clone, Copy)]
pub struct MatchRules {
    pub frag_limit: u16,
    pub time_limit_s: u32,
    /// How long the results are shown before the next match, seconds.
    pub results_s: u32,
}

impl Default for MatchRules {
    fn default() -> Self {
        Self { frag_limit: 20, time_limit_s: 600, results_s: 10 }
    }
}

/// A kill (`killer == victim`: the victim fell out of the world).
#[derive(Message, Debug, Clone, Copy)]
pub struct Frag {
    pub killer: PlayerId,
    pub victim: PlayerId,
    pub zone: HitZone,
}

/// A player's frags and deaths in this match.
#[derive(Component, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Score {
    pub frags: i16,
    pub deaths: u16,
}

#[derive(Resource, Debug, Clone)]
pub struct MatchState {
    pub number: u32,
    pub phase: MatchPhase,
    /// The tick this phase ends (0: not started yet).
    pub phase_ends_tick: u32,
    dirty: bool,
    last_sent_tick: u32,
}

impl Default for MatchState {
    fn default() -> Self {
        Self { number: 1, phase: MatchPhase::Playing, phase_ends_tick: 0, dirty: true, last_sent_tick: 0 }
    }
}

impl MatchState {
    pub fn is_over(&self) -> bool {
        matches!(self.phase, MatchPhase::Over { .. })
    }
}

fn count_frags(
    mut frags: MessageReader<Frag>,
    mut scores: Query<(&ServerPlayer, &mut Score)>,
    roster: Res<Roster>,
    rules: Res<MatchRules>,
    tick: Res<ServerTick>,
    mut state: ResMut<MatchState>,
    mut server: ResMut<RenetServer>,
) {
    for frag in frags.read() {
        let over = state.is_over();
        for (player, mut score) in &mut scores {
            if over {
                continue; // the results stand
            }
            if player.id == frag.victim {
                score.deaths = score.deaths.saturating_add(1);
            }
            if player.id == frag.killer {
                score.frags = if frag.killer == frag.victim { score.frags - 1 } else { score.frags + 1 };
                if score.frags >= rules.frag_limit as i16 {
                    info!("{} reached the frag limit", roster.name(player.id));
                    state.phase_ends_tick = tick.0; // ends now
                }
            }
        }
        if frag.killer == frag.victim {
            info!("{} fell out of the world", roster.name(frag.victim));
        }
        broadcast(&mut server, &ToClient::Killed { killer: frag.killer, victim: frag.victim, zone: frag.zone }, None);
        state.dirty = true;
    }
}

fn advance_phase(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    rules: Res<MatchRules>,
    world: Res<SimWorld>,
    mut roster: ResMut<Roster>,
    mut state: ResMut<MatchState>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, &mut Score)>,
    mut commands: Commands,
) {
    let seconds = |s: u32| s.saturating_mul(rate.0);
    if state.phase_ends_tick == 0 {
        state.phase_ends_tick = tick.0.wrapping_add(seconds(rules.time_limit_s));
        return;
    }
    if arena_sim::tick_after(state.phase_ends_tick, tick.0) {
        return;
    }
    match state.phase {
        MatchPhase::Playing => {
            let best = players.iter().map(|(_, p, _, s)| (p.id, *s)).max_by_key(|(_, s)| (s.frags, -(s.deaths as i32)));
            let winner = best.filter(|(_, s)| s.frags > 0).map(|(id, _)| id);
            match winner {
                Some(id) => info!("match {} over: {} wins", state.number, roster.name(id)),
                None => info!("match {} over: nobody scored", state.number),
            }
            state.phase = MatchPhase::Over { winner };
            state.phase_ends_tick = tick.0.wrapping_add(seconds(rules.results_s));
        }
        MatchPhase::Over { .. } => {
            state.number += 1;
            info!("match {} starts", state.number);
            state.phase = MatchPhase::Playing;
            state.phase_ends_tick = tick.0.wrapping_add(seconds(rules.time_limit_s));
            for (entity, player, mut sim, mut score) in &mut players {
                *score = Score::default();
                let (pos, yaw) = roster.choose_spawn(&world, Some(player.id));
                sim.0 = sim.respawned_at(pos, yaw);
                if let Some(entry) = roster.players.get_mut(&player.id) {
                    entry.last_pos = pos;
                }
                commands.entity(entity).remove::<Dead>();
            }
        }
    }
    state.dirty = true;
}

fn publish(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    rules: Res<MatchRules>,
    mut state: ResMut<MatchState>,
    players: Query<(&ServerPlayer, &Score)>,
    mut server: ResMut<RenetServer>,
) {
    let refresh_due = arena_sim::tick_diff(tick.0, state.last_sent_tick) >= (REFRESH_S * rate.0) as i32;
    if !state.dirty && !refresh_due {
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
            ping_ms: p.client_id.map(|c| (server.rtt(c) * 1000.0).round().min(f64::from(u16::MAX)) as u16).unwrap_or(0),
        })
        .collect();
    rows.sort_by_key(|r| (std::cmp::Reverse(r.frags), r.deaths, r.id));
    broadcast(&mut server, &ToClient::Scores(rows), None);
    let seconds_left = arena_sim::tick_diff(state.phase_ends_tick, tick.0).max(0) as u32 / rate.0.max(1);
    let info = MatchInfo { number: state.number, phase: state.phase, frag_limit: rules.frag_limit, seconds_left };
    broadcast(&mut server, &ToClient::Match(info), None);
}
