//! Shots, lag compensation, damage, death and respawn.
//!
//! Every tick the server records each player's hitbox (position, crouch,
//! alive) in a history covering more than a second. When a command fires, the
//! other players are "rewound" to the server time the shooter was looking at
//! (the render time its command carries, checked against the server's own
//! estimate, clamped to the history), blending the two recorded ticks around
//! it; the world's walls are tested first; then the nearest hitbox hit takes
//! the damage. Nothing live is moved: the rewound hitboxes are computed from
//! the history, so "restore" is free and the order of players does not matter.

use std::collections::VecDeque;

use arena_protocol::{ClientSettings, HitReport, ShotResult, ToClient};
use arena_sim::weapon::{BODY_DAMAGE, HEAD_DAMAGE, RANGE_M};
use arena_sim::{HitZone, Hitbox, PlayerId, Shot, UserCmd};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use crate::connections::{Roster, ServerPlayer};
use crate::intake::CommandBuffer;
use crate::match_flow::Frag;
use crate::net::{broadcast, send};
use crate::simulation::{ServerTick, Sim};
use crate::{ServerSet, SimWorld, TickRate};

/// How much history is kept, seconds (Source keeps one).
pub const HISTORY_S: f64 = 1.25;
/// A claimed render time is believed if it is within this many ticks of the
/// server's own estimate, plus the measured jitter of the shooter's commands
/// (see [`render_time_tolerance_ticks`]).
pub const RENDER_TIME_SLACK_TICKS: f64 = 2.0;
/// How many mean deviations of command arrival count as "the jitter".
const JITTER_SPREAD: f64 = 2.0;
/// The tolerance never exceeds this, seconds: a client on a wildly jittery
/// link is rewound to the server's estimate instead of its claim.
pub const MAX_RENDER_TIME_TOLERANCE_S: f64 = 0.1;
/// Time from death to respawn, seconds.
pub const RESPAWN_DELAY_S: f32 = 2.0;
/// Shot records kept for experiments and tests.
const SHOT_LOG_LEN: usize = 4096;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LagHistory>()
        .init_resource::<PendingShots>()
        .init_resource::<ShotLog>()
        .init_resource::<CombatStats>()
        .add_systems(FixedUpdate, (resolve_shots, respawn_the_dead).chain().in_set(ServerSet::Combat))
        .add_systems(FixedUpdate, record_history.in_set(ServerSet::Record));
}

/// Lag compensation for the whole server (`--no-lag-compensation` turns it off).
#[derive(Resource, Debug, Clone, Copy)]
pub struct LagCompensation(pub bool);

/// A client's netcode choices, as it last told the server.
#[derive(Component, Debug, Clone, Copy)]
pub struct ClientPrefs(pub ClientSettings);

impl Default for ClientPrefs {
    fn default() -> Self {
        Self(ClientSettings { lag_compensation: true, interp_ms: 100 })
    }
}

/// A dead player, and the tick it comes back.
#[derive(Component, Debug, Clone, Copy)]
pub struct Dead {
    pub respawn_tick: u32,
}

/// Every player's hitbox at the end of each recent tick.
#[derive(Resource, Debug, Default)]
pub struct LagHistory {
    frames: VecDeque<(u32, Vec<(PlayerId, Hitbox)>)>,
}

impl LagHistory {
    pub fn push(&mut self, tick: u32, hitboxes: Vec<(PlayerId, Hitbox)>, keep: usize) {
        self.frames.push_back((tick, hitboxes));
        while self.frames.len() > keep.max(2) {
            self.frames.pop_front();
        }
    }

    /// The oldest and newest recorded ticks.
    pub fn span(&self) -> Option<(u32, u32)> {
        Some((self.frames.front()?.0, self.frames.back()?.0))
    }

    /// Every player's hitbox at server time `tick` (fractional), blended
    /// between the two recorded ticks around it. `tick` must be within
    /// [`Self::span`].
    pub fn rewind(&self, tick: f64) -> Vec<(PlayerId, Hitbox)> {
        let Some((oldest, _)) = self.span() else { return Vec::new() };
        let offset = (tick - f64::from(oldest)).max(0.0);
        let i = (offset.floor() as usize).min(self.frames.len() - 1);
        let t = (offset - i as f64) as f32;
        let (_, before) = &self.frames[i];
        let Some((_, after)) = self.frames.get(i + 1) else { return before.clone() };
        before
            .iter()
            .map(|(id, a)| {
                let blended = match after.iter().find(|(other, _)| other == id) {
                    Some((_, b)) => a.lerp(b, t),
                    None => *a,
                };
                (*id, blended)
            })
            .collect()
    }

    /// The newest recorded hitboxes.
    pub fn latest(&self) -> Vec<(PlayerId, Hitbox)> {
        self.frames.back().map(|(_, h)| h.clone()).unwrap_or_default()
    }
}

/// Shots fired this tick, resolved after everyone has moved.
#[derive(Resource, Debug, Default)]
pub struct PendingShots(pub Vec<PendingShot>);

#[derive(Debug, Clone, Copy)]
pub struct PendingShot {
    pub shooter: PlayerId,
    pub cmd: UserCmd,
    pub shot: Shot,
    /// How early the command came, ticks, for the render-time estimate.
    pub margin_ticks: f32,
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

/// How far a claimed render time may be from the server's estimate and still
/// be believed, ticks: [`RENDER_TIME_SLACK_TICKS`] plus the jitter measured on
/// the shooter's commands, at most [`MAX_RENDER_TIME_TOLERANCE_S`].
pub fn render_time_tolerance_ticks(arrival_jitter_ticks: f32, tick_hz: u32) -> f64 {
    let jitter = if arrival_jitter_ticks.is_finite() { f64::from(arrival_jitter_ticks.max(0.0)) } else { 0.0 };
    (RENDER_TIME_SLACK_TICKS + JITTER_SPREAD * jitter).min(MAX_RENDER_TIME_TOLERANCE_S * f64::from(tick_hz))
}

/// What bounds a shot's rewind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewindBounds {
    /// The server's estimate of the shooter's render time, ticks.
    pub estimate: f64,
    /// How far from the estimate a claim is believed, ticks.
    pub tolerance: f64,
    /// The oldest time a rewind may reach: the tick being simulated minus
    /// the round trip, the interpolation delay and the tolerance. No
    /// backtracking to where someone was half a second ago.
    pub oldest: f64,
    /// The recorded history's oldest and newest ticks.
    pub span: (u32, u32),
}

/// What [`choose_tested_tick`] decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestedTick {
    pub tick: f64,
    /// The claim was not believed (the estimate was used).
    pub rejected: bool,
    /// The time was moved into the allowed window or the history.
    pub clamped: bool,
}

/// Chooses the server time to test a shot at: the claimed render time if it
/// agrees with the estimate within the tolerance, else the estimate; never
/// older than the rewind limit; within the history.
pub fn choose_tested_tick(claimed: f64, bounds: RewindBounds) -> TestedTick {
    let RewindBounds { estimate, tolerance, oldest, span } = bounds;
    let rejected = !(claimed > 0.0 && claimed.is_finite() && (claimed - estimate).abs() <= tolerance);
    let wanted = if rejected { estimate } else { claimed };
    let (first, newest) = (f64::from(span.0), f64::from(span.1));
    let floor = if oldest.is_finite() { oldest.max(first).min(newest) } else { first };
    let tick = if wanted.is_finite() { wanted.clamp(floor, newest) } else { newest };
    TestedTick { tick, rejected, clamped: tick != wanted }
}

fn record_history(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    players: Query<(&ServerPlayer, &Sim)>,
    mut history: ResMut<LagHistory>,
) {
    let mut hitboxes: Vec<(PlayerId, Hitbox)> = players.iter().map(|(p, s)| (p.id, Hitbox::of(&s.0))).collect();
    hitboxes.sort_by_key(|(id, _)| *id);
    let keep = (HISTORY_S * f64::from(rate.0)).ceil() as usize + 1;
    history.push(tick.0, hitboxes, keep);
}

fn resolve_shots(
    mut pending: ResMut<PendingShots>,
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    world: Res<SimWorld>,
    history: Res<LagHistory>,
    server_lag_compensation: Res<LagCompensation>,
    roster: Res<Roster>,
    mut server: ResMut<RenetServer>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim, &ClientPrefs, &CommandBuffer)>,
    mut stats: ResMut<CombatStats>,
    mut log: ResMut<ShotLog>,
    mut frags: MessageWriter<Frag>,
    mut commands: Commands,
) {
    let hz = f64::from(rate.0);
    for pending in pending.0.drain(..) {
        let Some((_, shooter, _, prefs, buffer)) = players.iter().find(|(_, p, ..)| p.id == pending.shooter) else {
            continue;
        };
        let (shooter_client, prefs, jitter) = (shooter.client_id, prefs.0, buffer.arrival_jitter_ticks());
        // A bot sees the world as it is: nothing to compensate.
        let rtt_s = shooter_client.map(|c| server.rtt(c)).unwrap_or(0.0);
        stats.shots += 1;
        let current = history.latest();
        let lag_compensated = server_lag_compensation.0 && prefs.lag_compensation && shooter_client.is_some();
        // What the shooter saw: the newest snapshot it had (a round trip and
        // the command's head start before its tick), minus its interpolation delay.
        let rtt_ticks = if rtt_s.is_finite() { rtt_s.max(0.0) * hz } else { 0.0 };
        let interp_ticks = f64::from(prefs.interp_ms) / 1000.0 * hz;
        let estimate =
            f64::from(pending.cmd.tick) - f64::from(pending.margin_ticks.max(0.0)) - rtt_ticks - interp_ticks;
        let span = history.span().unwrap_or((tick.0, tick.0));
        let (tested_tick, tested) = if lag_compensated {
            let tolerance = render_time_tolerance_ticks(jitter, rate.0);
            let bounds = RewindBounds {
                estimate,
                tolerance,
                oldest: f64::from(tick.0) - rtt_ticks - interp_ticks - tolerance,
                span,
            };
            let chosen = choose_tested_tick(pending.cmd.render_tick, bounds);
            stats.render_times_rejected += u64::from(chosen.rejected);
            stats.render_times_clamped += u64::from(chosen.clamped);
            (chosen.tick, history.rewind(chosen.tick))
        } else {
            (f64::from(span.1), current.clone())
        };

        // Walls first: nothing behind them can be hit.
        let Shot { origin, dir } = pending.shot;
        let wall = world.cast_ray(origin, dir, RANGE_M).unwrap_or(RANGE_M);
        let nearest = tested
            .iter()
            .filter(|(id, _)| *id != pending.shooter)
            .filter_map(|(id, hitbox)| hitbox.ray_test(origin, dir, wall).map(|(t, zone)| (*id, t, zone)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let end = origin + dir * nearest.map(|(_, t, _)| t).unwrap_or(wall);

        let mut hit = None;
        if let Some((victim_id, _, zone)) = nearest
            && let Some((victim_entity, victim, mut sim, ..)) = players.iter_mut().find(|(_, p, ..)| p.id == victim_id)
            && sim.alive
            && sim.protected_s <= 0.0
        {
            // A player killed earlier in this tick takes no more damage, and a
            // freshly spawned one none at all.
            let damage = if zone == HitZone::Head { HEAD_DAMAGE } else { BODY_DAMAGE };
            sim.health = sim.health.saturating_sub(damage);
            let killed = sim.health == 0;
            stats.hits += 1;
            if let Some(victim_client) = victim.client_id {
                send(
                    &mut server,
                    victim_client,
                    &ToClient::Damaged { attacker: pending.shooter, amount: damage, zone, from: origin },
                );
            }
            if killed {
                sim.alive = false;
                stats.kills += 1;
                let respawn_tick = tick.0.wrapping_add((RESPAWN_DELAY_S * rate.0 as f32) as u32);
                commands.entity(victim_entity).insert(Dead { respawn_tick });
                info!(
                    "{} killed {}{}",
                    roster.name(pending.shooter),
                    roster.name(victim_id),
                    if zone == HitZone::Head { " (head shot)" } else { "" }
                );
                frags.write(Frag { killer: pending.shooter, victim: victim_id, zone });
            }
            hit = Some(HitReport { victim: victim_id, zone, damage, killed });
        }

        let others: Vec<(PlayerId, Hitbox)> =
            tested.iter().filter(|(id, _)| *id != pending.shooter).copied().take(arena_protocol::MAX_PLAYERS).collect();
        if let Some(shooter_client) = shooter_client {
            let result = ShotResult {
                cmd_tick: pending.cmd.tick,
                hit,
                end,
                lag_compensated,
                tested_tick,
                hitboxes: others.clone(),
            };
            send(&mut server, shooter_client, &ToClient::ShotResult(result));
        }
        broadcast(
            &mut server,
            &ToClient::ShotFired { shooter: pending.shooter, from: origin, to: end },
            shooter_client,
        );
        log.0.push_back(ShotRecord {
            shooter: pending.shooter,
            cmd_tick: pending.cmd.tick,
            processed_tick: tick.0,
            shot: pending.shot,
            claimed_tick: pending.cmd.render_tick,
            estimated_tick: estimate,
            tested_tick,
            lag_compensated,
            hit,
            tested: others,
            current: current.into_iter().filter(|(id, _)| *id != pending.shooter).collect(),
        });
        while log.0.len() > SHOT_LOG_LEN {
            log.0.pop_front();
        }
    }
}

fn respawn_the_dead(
    tick: Res<ServerTick>,
    world: Res<SimWorld>,
    mut roster: ResMut<Roster>,
    mut dead: Query<(Entity, &ServerPlayer, &mut Sim, &Dead)>,
    mut commands: Commands,
) {
    for (entity, player, mut sim, dead) in &mut dead {
        if !arena_sim::tick_after(dead.respawn_tick, tick.0) {
            let (pos, yaw) = roster.choose_spawn(&world, Some(player.id));
            sim.0 = sim.respawned_at(pos, yaw);
            if let Some(entry) = roster.players.get_mut(&player.id) {
                entry.last_pos = pos;
            }
            commands.entity(entity).remove::<Dead>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: f32) -> Hitbox {
        Hitbox { feet: Vec3::new(x, 0.0, 0.0), crouched: false, alive: true, spawn_count: 0 }
    }

    fn history() -> LagHistory {
        let mut h = LagHistory::default();
        for tick in 100..=110u32 {
            let x = (tick - 100) as f32;
            h.push(tick, vec![(PlayerId(1), at(x)), (PlayerId(2), Hitbox { crouched: tick >= 105, ..at(-x) })], 8);
        }
        h
    }

    #[test]
    fn history_is_bounded_and_blends_between_ticks() {
        let h = history();
        assert_eq!(h.span(), Some((103, 110)));
        let rewound = h.rewind(104.25);
        assert!((rewound[0].1.feet.x - 4.25).abs() < 1e-5, "{:?}", rewound[0]);
        assert!((rewound[1].1.feet.x + 4.25).abs() < 1e-5);
        assert!(!rewound[1].1.crouched, "crouch from the nearer tick");
        assert!(h.rewind(104.75)[1].1.crouched);
        assert_eq!(h.rewind(110.0)[0].1.feet.x, 10.0);
    }

    fn bounds(estimate: f64) -> RewindBounds {
        RewindBounds { estimate, tolerance: 2.0, oldest: 0.0, span: (103, 110) }
    }

    fn tested(tick: f64, rejected: bool, clamped: bool) -> TestedTick {
        TestedTick { tick, rejected, clamped }
    }

    #[test]
    fn render_times_are_believed_clamped_or_replaced() {
        // Believed: close to the estimate and within the history.
        assert_eq!(choose_tested_tick(106.5, bounds(107.0)), tested(106.5, false, false));
        // Beyond the tolerance: the estimate instead.
        assert_eq!(choose_tested_tick(104.5, bounds(107.0)), tested(107.0, true, false));
        assert_eq!(choose_tested_tick(10.0, bounds(107.0)), tested(107.0, true, false));
        // In the future: rejected, and the estimate clamped to the newest tick.
        assert_eq!(choose_tested_tick(400.0, bounds(112.0)), tested(110.0, true, true));
        // Unknown (0) or garbage: the estimate.
        assert_eq!(choose_tested_tick(0.0, bounds(105.0)), tested(105.0, true, false));
        assert_eq!(choose_tested_tick(f64::NAN, bounds(105.0)), tested(105.0, true, false));
        // Believed but older than the history: clamped.
        assert_eq!(choose_tested_tick(100.0, bounds(101.0)), tested(103.0, false, true));
        // Never older than the rewind limit, even when believed.
        let limited = RewindBounds { oldest: 106.0, ..bounds(106.5) };
        assert_eq!(choose_tested_tick(105.0, limited), tested(106.0, false, true));
        // Garbage bounds still give a time within the history.
        let garbage = RewindBounds { estimate: f64::NAN, tolerance: f64::NAN, oldest: f64::NAN, span: (103, 110) };
        assert_eq!(choose_tested_tick(f64::INFINITY, garbage).tick, 110.0);
    }

    #[test]
    fn the_tolerance_is_two_ticks_plus_the_jitter_within_a_cap() {
        assert_eq!(render_time_tolerance_ticks(0.0, 64), 2.0);
        assert_eq!(render_time_tolerance_ticks(0.5, 64), 3.0);
        assert_eq!(render_time_tolerance_ticks(f32::NAN, 64), 2.0);
        assert!((render_time_tolerance_ticks(100.0, 64) - 6.4).abs() < 1e-9, "capped at 100 ms");
    }

    #[test]
    fn the_dead_and_rewound_death_are_respected() {
        let mut h = LagHistory::default();
        h.push(1, vec![(PlayerId(1), Hitbox { alive: false, ..at(0.0) })], 8);
        h.push(2, vec![(PlayerId(1), at(0.0))], 8);
        let origin = Vec3::new(0.0, 1.0, 5.0);
        assert!(h.rewind(1.0)[0].1.ray_test(origin, Vec3::NEG_Z, 10.0).is_none(), "dead at tick 1");
        assert!(h.rewind(2.0)[0].1.ray_test(origin, Vec3::NEG_Z, 10.0).is_some(), "alive at tick 2");
    }
}
