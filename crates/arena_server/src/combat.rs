//! The combat rules: each shot fired this tick is tested against the other
//! players (as lag compensation rewinds them, or as they are now), walls
//! first; the nearest hitbox hit takes the damage, and a kill goes to
//! `life.rs`. The shooter hears the verdict, everyone else sees the tracer.
//! On a range nobody takes damage, and the shooter hears its tally too.

use std::collections::VecDeque;

use arena_protocol::{HitReport, RangeReport, ShotResult, ShotTrace, ToClient};
use arena_sim::weapon::{BODY_DAMAGE, HEAD_DAMAGE, RANGE_M};
use arena_sim::{HitZone, Hitbox, PlayerId, Shot};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::intake::CommandBuffer;
use crate::lag_compensation::{
    LagHistory, RewindBounds, choose_tested_tick, estimate_render_tick, render_time_tolerance_ticks,
};
use crate::life::kill;
use crate::net::{broadcast, send};
use crate::range::{self, Range, RangeTally, RangeTarget};
use crate::vocabulary::{
    ClientPrefs, Frag, LagCompensation, PendingShot, PendingShots, Roster, ServerPlayer, ServerTick, Sim, SimWorld,
    TickRate,
};

/// Shot records kept for experiments and tests.
const SHOT_LOG_LEN: usize = 4096;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PendingShots>().init_resource::<ShotLog>().init_resource::<CombatStats>();
}

/// What happened to each shot: for experiments, tests and logs.
#[derive(Resource, Debug, Default)]
pub struct ShotLog(pub VecDeque<ShotRecord>);

#[derive(Debug, Clone)]
pub struct ShotRecord {
    pub shooter: PlayerId,
    pub cmd_tick: u32,
    /// The tick during which the server resolved it.
    pub processed_tick: u32,
    pub shot: Shot,
    /// The render time the command claimed, ticks.
    pub claimed_tick: f64,
    /// The server's own estimate of it, ticks.
    pub estimated_tick: f64,
    /// The time the other players were tested at, ticks.
    pub tested_tick: f64,
    pub lag_compensated: bool,
    pub hit: Option<HitReport>,
    /// Other players as tested, and as they were at the newest tick.
    pub tested: Vec<(PlayerId, Hitbox)>,
    pub current: Vec<(PlayerId, Hitbox)>,
}

/// Counters of the combat rules' refusals.
#[derive(Resource, Debug, Default, Clone)]
pub struct CombatStats {
    pub shots: u64,
    pub hits: u64,
    pub kills: u64,
    /// Claimed render times further than the tolerance from the estimate.
    pub render_times_rejected: u64,
    /// Render times outside the history, clamped into it.
    pub render_times_clamped: u64,
    pub fire_while_dead: u64,
    pub reload_when_full: u64,
    pub fire_too_soon: u64,
}

/// The other players a shot is tested against, and the server time they are
/// from: rewound to what the shooter saw with lag compensation, as they are
/// now without it.
struct Tested {
    tick: f64,
    estimate: f64,
    hitboxes: Vec<(PlayerId, Hitbox)>,
}

fn tested_players(
    pending: &PendingShot,
    compensate: bool,
    (rtt_s, prefs, jitter): (f64, ClientPrefs, f32),
    history: &LagHistory,
    tick: ServerTick,
    rate: TickRate,
    stats: &mut CombatStats,
) -> Tested {
    let rtt_ticks = if rtt_s.is_finite() { rate.s_to_ticks(rtt_s.max(0.0)) } else { 0.0 };
    let interp_ticks = rate.ms_to_ticks(f64::from(prefs.0.interp_ms));
    let estimate = estimate_render_tick(pending.cmd.tick, pending.margin_ticks, rtt_ticks, interp_ticks);
    let span = history.span().unwrap_or((tick.0, tick.0));
    if !compensate {
        return Tested { tick: f64::from(span.1), estimate, hitboxes: history.latest() };
    }
    let tolerance = render_time_tolerance_ticks(jitter, rate.hz());
    let bounds =
        RewindBounds { estimate, tolerance, oldest: f64::from(tick.0) - rtt_ticks - interp_ticks - tolerance, span };
    let chosen = choose_tested_tick(pending.cmd.render_tick, bounds);
    stats.render_times_rejected += u64::from(chosen.rejected);
    stats.render_times_clamped += u64::from(chosen.clamped);
    Tested { tick: chosen.tick, estimate, hitboxes: history.rewind(chosen.tick) }
}

/// The nearest of `others` the shot hits before any wall: who, how far, where.
fn first_hit(world: &SimWorld, shot: Shot, others: &[(PlayerId, Hitbox)]) -> (Option<(PlayerId, HitZone)>, Vec3) {
    let Shot { origin, dir } = shot;
    // Walls first: nothing behind them can be hit.
    let wall = world.cast_ray(origin, dir, RANGE_M).unwrap_or(RANGE_M);
    let nearest = others
        .iter()
        .filter_map(|(id, hitbox)| hitbox.ray_test(origin, dir, wall).map(|(t, zone)| (*id, t, zone)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let end = origin + dir * nearest.map(|(_, t, _)| t).unwrap_or(wall);
    (nearest.map(|(id, _, zone)| (id, zone)), end)
}

/// The hitboxes near a shot's line, nearest first: the few "show hitboxes"
/// needs, not everyone's.
fn near_the_shot(others: &[(PlayerId, Hitbox)], shot: Shot) -> Vec<(PlayerId, Hitbox)> {
    let off_line = |h: &Hitbox| {
        let to = h.body_center() - shot.origin;
        let along = to.dot(shot.dir).max(0.0);
        (to - shot.dir * along).length()
    };
    let mut near: Vec<(f32, (PlayerId, Hitbox))> = others
        .iter()
        .map(|(id, h)| (off_line(h), (*id, *h)))
        .filter(|(d, _)| *d <= arena_protocol::SHOT_RESULT_NEAR_M)
        .collect();
    near.sort_by(|a, b| a.0.total_cmp(&b.0));
    near.into_iter().take(arena_protocol::MAX_SHOT_RESULT_HITBOXES).map(|(_, h)| h).collect()
}

pub(crate) fn resolve_shots(
    mut pending: ResMut<PendingShots>,
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    world: Res<SimWorld>,
    history: Res<LagHistory>,
    server_lag_compensation: Res<LagCompensation>,
    roster: Res<Roster>,
    range: Option<Res<Range>>,
    mut server: ResMut<RenetServer>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, &ClientPrefs, &CommandBuffer, Has<RangeTarget>)>,
    mut tallies: Query<(&ServerPlayer, &mut RangeTally)>,
    mut stats: ResMut<CombatStats>,
    mut log: ResMut<ShotLog>,
    mut frags: MessageWriter<Frag>,
    mut commands: Commands,
) {
    for pending in pending.0.drain(..) {
        let Some((_, shooter, _, prefs, buffer, _)) = players.iter().find(|(_, p, ..)| p.id == pending.shooter) else {
            continue;
        };
        let shooter_client = shooter.client_id;
        // A bot sees the world as it is: nothing to compensate.
        let rtt_s = shooter_client.map(|c| server.rtt(c)).unwrap_or(0.0);
        let compensate = server_lag_compensation.0 && prefs.0.lag_compensation && shooter_client.is_some();
        let link = (rtt_s, *prefs, buffer.arrival_jitter_ticks());
        stats.shots += 1;
        let tested = tested_players(&pending, compensate, link, &history, *tick, *rate, &mut stats);
        let others: Vec<(PlayerId, Hitbox)> = tested
            .hitboxes
            .iter()
            .filter(|(id, _)| *id != pending.shooter)
            .copied()
            .take(arena_protocol::MAX_PLAYERS)
            .collect();
        let (nearest, end) = first_hit(&world, pending.shot, &others);

        let mut hit = None;
        if let Some((victim_id, zone)) = nearest
            && let Some((victim_entity, victim, mut sim, ..)) = players.iter_mut().find(|(_, p, ..)| p.id == victim_id)
            && sim.alive
            && sim.protected_s <= 0.0
        {
            // A player killed earlier in this tick takes no more damage, and a
            // freshly spawned one none at all; on a range, nobody any.
            let damage = match (range.is_some(), zone) {
                (true, _) => 0,
                (false, HitZone::Head) => HEAD_DAMAGE,
                (false, HitZone::Body) => BODY_DAMAGE,
            };
            sim.health = sim.health.saturating_sub(damage);
            let killed = sim.health == 0;
            stats.hits += 1;
            if let Some(victim_client) = victim.client_id.filter(|_| damage > 0) {
                let damaged =
                    ToClient::Damaged { attacker: pending.shooter, amount: damage, zone, from: pending.shot.origin };
                send(&mut server, victim_client, &damaged);
            }
            if killed {
                stats.kills += 1;
                info!(
                    "{} killed {}{}",
                    roster.label(pending.shooter),
                    roster.label(victim_id),
                    if zone == HitZone::Head { " (head shot)" } else { "" }
                );
                let frag = Frag { killer: pending.shooter, victim: victim_id, zone };
                kill(&mut commands, victim_entity, &mut sim.0, frag, *tick, *rate, &mut frags);
            }
            hit = Some(HitReport { victim: victim_id, zone, damage, killed });
        }

        if range.is_some()
            && let Some(client) = shooter_client
            && let Some((_, mut tally)) = tallies.iter_mut().find(|(p, _)| p.id == pending.shooter)
        {
            let targets: Vec<(PlayerId, Hitbox)> = others
                .iter()
                .filter(|(id, _)| players.iter().any(|(_, p, .., target)| target && p.id == *id))
                .copied()
                .collect();
            let on_target = hit.is_some_and(|h| targets.iter().any(|(id, _)| *id == h.victim));
            tally.shots = tally.shots.saturating_add(1);
            tally.hits = tally.hits.saturating_add(u32::from(on_target));
            let miss = if on_target { None } else { range::miss(pending.shot, &targets) };
            if let Some(m) = miss {
                debug!(
                    "range miss by {}: target {:.2} m right, {:.2} m up; render tick claimed {:.2}, estimated {:.2}, tested {:.2}",
                    roster.label(pending.shooter),
                    m.right_m,
                    m.up_m,
                    pending.cmd.render_tick,
                    tested.estimate,
                    tested.tick
                );
            }
            send(&mut server, client, &ToClient::Range(RangeReport { shots: tally.shots, hits: tally.hits, miss }));
        }
        if let Some(shooter_client) = shooter_client {
            let result = ShotResult {
                cmd_tick: pending.cmd.tick,
                hit,
                end,
                lag_compensated: compensate,
                tested_tick: tested.tick,
                hitboxes: near_the_shot(&others, pending.shot),
            };
            send(&mut server, shooter_client, &ToClient::ShotResult(result));
        }
        let fired = ToClient::ShotFired { shooter: pending.shooter, trace: ShotTrace::new(pending.shot.origin, end) };
        broadcast(&mut server, &fired, shooter_client);
        log.0.push_back(ShotRecord {
            shooter: pending.shooter,
            cmd_tick: pending.cmd.tick,
            processed_tick: tick.0,
            shot: pending.shot,
            claimed_tick: pending.cmd.render_tick,
            estimated_tick: tested.estimate,
            tested_tick: tested.tick,
            lag_compensated: compensate,
            hit,
            tested: others,
            current: history.latest().into_iter().filter(|(id, _)| *id != pending.shooter).collect(),
        });
        while log.0.len() > SHOT_LOG_LEN {
            log.0.pop_front();
        }
    }
}
