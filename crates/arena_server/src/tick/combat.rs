//! The combat rules: each shot of this tick, with the other players as lag
//! compensation gave them to it, is tested walls first; the nearest hitbox
//! hit takes the damage (none on a range, none for the protected or the
//! already dead), and a kill goes to `life.rs`. The shooter hears the
//! verdict, the victim its wound, everyone else sees the tracer; the shot
//! is logged and announced as resolved (the range keeps its tally from that).

use std::collections::VecDeque;

use arena_protocol::{HitReport, ShotResult, ShotTrace, ToClient};
use arena_sim::weapon::{BODY_DAMAGE, HEAD_DAMAGE, LIMB_DAMAGE};
use arena_sim::{HitZone, Hitbox, PlayerId, Shot};
use bevy::prelude::*;
use bevy_renet::RenetServer;
use bevy_renet::renet::ClientId;

use super::life::kill;
use crate::net::{broadcast_unreliable, send};
use crate::vocabulary::{
    CombatStats, Frag, GameMode, Range, Roster, ServerPlayer, ServerTick, ShotResolved, Sim, SimWorld, TestedShot,
    TestedShots, TickRate, UnreliableOut,
};

/// Shot records kept for experiments and tests.
const SHOT_LOG_LEN: usize = 4096;
/// How often the log gets a summary of the shots, seconds.
const SUMMARY_PERIOD_S: f64 = 10.0;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ShotLog>()
        .init_resource::<CombatStats>()
        .add_message::<ShotResolved>()
        .add_systems(Last, log_summary);
}

/// Every [`SUMMARY_PERIOD_S`] with shots in it, one line for the admin: how
/// many, how far back their shooters saw (the claimed render times, and the
/// server's own estimate), and how many claims lag compensation did not
/// take as they were.
fn log_summary(
    time: Res<Time<Real>>,
    stats: Res<CombatStats>,
    log: Res<ShotLog>,
    rate: Res<TickRate>,
    mut last: Local<Option<(f64, CombatStats)>>,
) {
    let now = time.elapsed_secs_f64();
    let Some((at, before)) = last.as_ref() else {
        *last = Some((now, stats.clone()));
        return;
    };
    if now - at < SUMMARY_PERIOD_S {
        return;
    }
    if let Some(line) = summary(&before.clone(), &stats, &log, *rate, now - at) {
        info!("{line}");
    }
    *last = Some((now, stats.clone()));
}

/// The summary line of [`log_summary`] for the shots between `before` and
/// `now` (none without shots).
fn summary(before: &CombatStats, now: &CombatStats, log: &ShotLog, rate: TickRate, period_s: f64) -> Option<String> {
    let shots = now.shots.saturating_sub(before.shots);
    if shots == 0 {
        return None;
    }
    let recent = log.0.iter().rev().take(usize::try_from(shots).unwrap_or(usize::MAX)).filter(|r| r.lag_compensated);
    let (mut claimed, mut estimated): (Vec<f64>, Vec<f64>) = recent
        .map(|r| {
            let behind = |t: f64| rate.ticks_to_s(f64::from(r.processed_tick) - t) * 1000.0;
            (behind(r.claimed_tick), behind(r.estimated_tick))
        })
        .filter(|(c, e)| c.is_finite() && e.is_finite())
        .unzip();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).map_or("-".to_string(), |m| format!("{m:.0} ms"))
    };
    Some(format!(
        "shots, last {period_s:.0} s: {shots} ({} hits); seen from (median) {} back, estimated {}; \
         claims not believed {}, moved into the history or the rewind cap {} (by the cap {})",
        now.hits.saturating_sub(before.hits),
        median(&mut claimed),
        median(&mut estimated),
        now.render_times_rejected.saturating_sub(before.render_times_rejected),
        now.render_times_clamped.saturating_sub(before.render_times_clamped),
        now.rewinds_capped.saturating_sub(before.rewinds_capped),
    ))
}

/// What happened to each shot: for experiments, tests and logs.
#[derive(Resource, Debug, Default)]
pub struct ShotLog(pub VecDeque<ShotRecord>);

#[derive(Debug, Clone)]
pub struct ShotRecord {
    pub shooter: PlayerId,
    pub cmd_tick: u32,
    /// For a clicked shot, where within the tick before the command's it was
    /// fired (0..1); none: fired from the tick.
    pub click_fraction: Option<f32>,
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
    /// Fired from a repeat of the shooter's last command (its own had not
    /// come in time): tested where the server guessed it was drawn.
    pub on_repeat: bool,
    pub hit: Option<HitReport>,
    /// Other players as tested, and as they were at the newest tick.
    pub tested: Vec<(PlayerId, Hitbox)>,
    pub current: Vec<(PlayerId, Hitbox)>,
}

impl ShotRecord {
    fn of(tested: &TestedShot, hit: Option<HitReport>, processed_tick: u32) -> Self {
        let pending = &tested.pending;
        Self {
            shooter: pending.shooter,
            cmd_tick: pending.cmd.tick,
            click_fraction: pending.cmd.click.map(|c| c.fraction),
            processed_tick,
            shot: pending.shot,
            claimed_tick: pending.cmd.render_tick,
            estimated_tick: tested.estimate,
            tested_tick: tested.tick,
            lag_compensated: tested.compensated,
            on_repeat: pending.repeated,
            hit,
            tested: tested.others.clone(),
            current: tested.current.clone(),
        }
    }
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

/// How much a hit in `zone` takes: nothing on a range.
fn damage_for(zone: HitZone, range: bool) -> u8 {
    match (range, zone) {
        (true, _) => 0,
        (false, HitZone::Head) => HEAD_DAMAGE,
        (false, HitZone::Body) => BODY_DAMAGE,
        (false, HitZone::Limb) => LIMB_DAMAGE,
    }
}

pub(crate) fn resolve_shots(
    mut tested: ResMut<TestedShots>,
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    world: Res<SimWorld>,
    (roster, mode): (Res<Roster>, Res<GameMode>),
    range: Option<Res<Range>>,
    (mut server, mut out): (ResMut<RenetServer>, ResMut<UnreliableOut>),
    mut players: Query<(Entity, &ServerPlayer, &mut Sim)>,
    mut stats: ResMut<CombatStats>,
    mut log: ResMut<ShotLog>,
    mut frags: MessageWriter<Frag>,
    mut resolved: MessageWriter<ShotResolved>,
    mut commands: Commands,
) {
    for shot in tested.0.drain(..) {
        let pending = shot.pending;
        let (nearest, end) = world.first_hit(pending.shot, &shot.others);
        // Only the living and unprotected are hurt: a player killed earlier
        // in this tick takes no more damage, a freshly spawned one none.
        // The quad multiplies what its holder deals (Quake 3's `g_quadfactor`).
        let shooter = players.iter().find(|(_, p, _)| p.id == pending.shooter).map(|(_, _, s)| s.0);
        let victim = nearest.and_then(|(id, zone)| {
            let (entity, player, sim) = players.iter_mut().find(|(_, p, _)| p.id == id)?;
            sim.hurtable().then_some((id, entity, player.client_id, sim, zone))
        });
        let hit = victim.map(|(victim, entity, client, mut sim, zone)| {
            // A teammate stops the shot and takes nothing (friendly fire off).
            let spared = !mode.harms(&roster, pending.shooter, victim);
            let base = u32::from(damage_for(zone, range.is_some()));
            let dealt = if spared { 0 } else { shooter.map_or(base, |s| arena_sim::items::dealt(base, &s)) };
            // Armour takes two thirds while it lasts; what a hit took in all
            // is what the shooter is told.
            arena_sim::items::take_damage(&mut sim.0, dealt);
            let damage = dealt.min(u32::from(u8::MAX)) as u8;
            let killed = sim.health == 0;
            stats.hits += u64::from(!spared);
            if killed {
                stats.kills += 1;
                let frag = Frag { killer: pending.shooter, victim, zone };
                info!("{} killed {}{}", roster.label(frag.killer), roster.label(victim), head_shot(zone));
                kill(&mut commands, entity, &mut sim.0, frag, *tick, *rate, &mut frags);
            }
            (HitReport { victim, zone, damage, killed }, client)
        });
        let shooter_client = roster.players.get(&pending.shooter).and_then(|e| e.client_id);
        tell_the_shot((&mut server, &mut out), (shooter_client, hit), &shot, end);
        let hit = hit.map(|(report, _)| report);
        log.0.push_back(ShotRecord::of(&shot, hit, tick.0));
        while log.0.len() > SHOT_LOG_LEN {
            log.0.pop_front();
        }
        resolved.write(ShotResolved { tested: shot, hit });
    }
}

fn head_shot(zone: HitZone) -> &'static str {
    if zone == HitZone::Head { " (head shot)" } else { "" }
}

/// The victim hears of its wound (from where), the shooter the verdict (with
/// the hitboxes near the line, as tested); everyone else sees the tracer.
fn tell_the_shot(
    (server, out): (&mut RenetServer, &mut UnreliableOut),
    (shooter_client, hit): (Option<ClientId>, Option<(HitReport, Option<ClientId>)>),
    shot: &TestedShot,
    end: Vec3,
) {
    let pending = &shot.pending;
    let result = ToClient::ShotResult(ShotResult {
        cmd_tick: pending.cmd.tick,
        hit: hit.map(|(report, _)| report),
        end,
        lag_compensated: shot.compensated,
        tested_tick: shot.tick,
        hitboxes: near_the_shot(&shot.others, pending.shot),
    });
    let fired = ToClient::ShotFired { shooter: pending.shooter, trace: ShotTrace::new(pending.shot.origin, end) };
    if let Some((report, Some(victim))) = hit.filter(|(report, _)| report.damage > 0) {
        let (amount, zone, from) = (report.damage, report.zone, pending.shot.origin);
        send(server, victim, &ToClient::Damaged { attacker: pending.shooter, amount, zone, from });
    }
    if let Some(client) = shooter_client {
        send(server, client, &result);
    }
    let others: Vec<ClientId> = server.clients_id().into_iter().filter(|c| Some(*c) != shooter_client).collect();
    broadcast_unreliable(out, &others, &fired);
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_sim::{MapDef, PlayerState};

    fn standing(x: f32, z: f32) -> Hitbox {
        Hitbox::of(&PlayerState::spawned_at(Vec3::new(x, 0.0, z), 0.0))
    }

    #[test]
    fn the_summary_counts_the_period_and_its_shots_behind() {
        let rate = TickRate(arena_sim::TickRate::new(64));
        let record = |claimed: f64| ShotRecord {
            shooter: PlayerId(1),
            cmd_tick: 200,
            click_fraction: None,
            processed_tick: 200,
            shot: Shot { origin: Vec3::ZERO, dir: Vec3::Z },
            claimed_tick: claimed,
            estimated_tick: 184.0,
            tested_tick: claimed,
            lag_compensated: true,
            on_repeat: false,
            hit: None,
            tested: Vec::new(),
            current: Vec::new(),
        };
        let log = ShotLog([record(100.0), record(168.0), record(184.0), record(192.0)].into_iter().collect());
        let before = CombatStats { shots: 5, hits: 1, ..CombatStats::default() };
        assert_eq!(summary(&before, &before, &log, rate, 10.0), None, "no shots, no line");
        let now = CombatStats { shots: 8, hits: 3, render_times_rejected: 1, ..CombatStats::default() };
        let line = summary(&before, &now, &log, rate, 10.0).expect("a line");
        // The last three shots: 32, 16 and 8 ticks back; the median 16 ticks = 250 ms.
        assert!(
            line.starts_with("shots, last 10 s: 3 (2 hits); seen from (median) 250 ms back, estimated 250 ms"),
            "{line}"
        );
        assert!(line.contains("claims not believed 1"), "{line}");
    }

    #[test]
    fn the_nearest_player_in_front_of_any_wall_is_hit() {
        let world = SimWorld(std::sync::Arc::new(arena_sim::ArenaWorld::new(MapDef::foundry())));
        let near = standing(0.0, 12.0);
        let far = standing(0.0, 10.0);
        let eye = Vec3::new(0.0, near.body_center().y, 14.0);
        let shot = Shot { origin: eye, dir: Vec3::NEG_Z };
        let others = [(PlayerId(1), far), (PlayerId(2), near)];
        let (hit, end) = world.first_hit(shot, &others);
        assert_eq!(hit, Some((PlayerId(2), HitZone::Body)), "the nearer of the two, whatever the order");
        assert!(end.z > 11.0 && end.z < 13.0, "{end}");
        // Behind the centre slab (z -0.8..0.8) nobody is hit.
        let hidden = [(PlayerId(3), standing(0.0, -6.0))];
        assert_eq!(world.first_hit(Shot { origin: Vec3::new(0.0, 1.2, 6.0), dir: Vec3::NEG_Z }, &hidden).0, None);
    }

    #[test]
    fn nobody_is_hurt_on_a_range_and_a_head_shot_hurts_more() {
        assert_eq!(damage_for(HitZone::Head, true), 0);
        assert_eq!(damage_for(HitZone::Body, false), BODY_DAMAGE);
        assert!(damage_for(HitZone::Head, false) > BODY_DAMAGE);
    }
}
