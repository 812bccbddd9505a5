//! Rockets on the server: each launch brought up to the time its shooter
//! fired it (the catch-up, tested against the other players as the shooter
//! saw them, at most the rewind cap), then flown tick by tick against the
//! present; each blast's splash (damage with falloff and line of sight,
//! knockback), the shooter's own landing on its own timeline, at the tick
//! its client predicts it. Everyone is told a launch and a blast; nothing
//! travels per rocket per tick.

use std::collections::VecDeque;

use arena_protocol::rocket::{BlastInfo, MAX_CATCH_UP_MS, RocketBlast, RocketLaunch};
use arena_protocol::{HitReport, ToClient};
use arena_sim::rocket::{self, Launch, ROCKET_SPEED_MPS};
use arena_sim::{ArenaWorld, Hitbox, PlayerId, PlayerState, tick_after};
use bevy::prelude::*;
use bevy_renet::RenetServer;

use super::intake::CommandBuffer;
use super::lag_compensation::{LagHistory, ShooterLink, Unlag};
use super::life::kill;
use crate::net::{broadcast, send};
use crate::vocabulary::{
    ClientPrefs, CombatStats, Frag, GameMode, LagCompensation, PendingRockets, ProjectileCompensation, Range,
    RocketKill, RocketResolved, Roster, ServerPlayer, ServerTick, Sim, SimWorld, TickRate,
};

/// Most rockets in flight at once (a rocket a player each 0.8 s, each
/// flying at most 4 s, is 320 for 64 players); more are not launched.
pub(crate) const MAX_ROCKETS: usize = 512;
/// Rocket records kept for experiments and tests.
const ROCKET_LOG_LEN: usize = 4096;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<PendingRockets>()
        .init_resource::<Rockets>()
        .init_resource::<Blasts>()
        .init_resource::<OwnSplashes>()
        .init_resource::<RocketLog>()
        .add_message::<RocketResolved>()
        .add_message::<RocketKill>();
}

/// A rocket in flight.
#[derive(Debug, Clone, Copy)]
pub struct Flying {
    pub owner: PlayerId,
    pub launch: Launch,
    /// How far the server brought it on at launch (the catch-up), seconds.
    pub head_start_s: f32,
    /// Seconds flown so far (with the head start).
    pub flown_s: f32,
    /// How far it flies before a wall, metres.
    pub wall_m: f32,
    /// Fired with the quad damage: its splash does three times the damage
    /// (Quake 3 decides at the launch, as here).
    pub quad: bool,
}

/// The rockets in flight.
#[derive(Resource, Debug, Default)]
pub struct Rockets(pub Vec<Flying>);

/// A rocket's end, waiting for its splash.
#[derive(Debug, Clone)]
pub(crate) struct Blast {
    owner: PlayerId,
    launch: Launch,
    /// How far it flew, metres.
    distance_m: f32,
    direct: Option<PlayerId>,
    /// The other players as the rocket met them (rewound during the catch-up).
    others: Vec<(PlayerId, Hitbox)>,
    /// The server time of those players, ticks.
    met_tick: f64,
    /// Fired with the quad damage.
    quad: bool,
}

#[derive(Resource, Debug, Default)]
pub(crate) struct Blasts(Vec<Blast>);

/// A shooter's own splash, waiting for the tick of its timeline it lands on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnSplash {
    pub owner: PlayerId,
    pub tick: u32,
    pub point: Vec3,
}

/// Own splashes still to land, at most one per rocket.
#[derive(Resource, Debug, Default)]
pub(crate) struct OwnSplashes(pub Vec<OwnSplash>);

impl OwnSplashes {
    /// The splashes landing on `owner` at `tick`, taken out.
    pub(crate) fn take(&mut self, owner: PlayerId, tick: u32) -> Vec<Vec3> {
        let mut landing = Vec::new();
        self.0.retain(|s| {
            let now = s.owner == owner && s.tick == tick;
            if now {
                landing.push(s.point);
            }
            !now
        });
        landing
    }
}

/// What happened to each rocket: for experiments, tests and logs.
#[derive(Resource, Debug, Default)]
pub struct RocketLog(pub VecDeque<RocketRecord>);

#[derive(Debug, Clone)]
pub struct RocketRecord {
    pub owner: PlayerId,
    /// The server tick it was launched in.
    pub launched_tick: u32,
    pub launch: Launch,
    pub catch_up_ms: u16,
    /// Whether the catch-up was cut short by the cap.
    pub capped: bool,
    pub blast: Option<BlastRecord>,
}

#[derive(Debug, Clone)]
pub struct BlastRecord {
    pub point: Vec3,
    pub direct: Option<PlayerId>,
    /// The other players its splash reached, and the damage each would
    /// take (before protection and the range's no-damage rule).
    pub victims: Vec<(PlayerId, u8)>,
    /// The server tick it exploded in.
    pub tick: u32,
    /// The tick of its shooter's timeline its own splash lands on.
    pub own_tick: u32,
}

/// How a rocket's catch-up goes: how far the server brings it on, and the
/// server times along the way whose players each piece of the path is
/// tested against (the shooter's render time, then a tick at a time up to
/// the present).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CatchUp {
    pub head_start_s: f32,
    pub capped: bool,
}

/// The catch-up for a rocket fired at `at_s` into the command of server
/// tick `now` by a shooter who saw the others at `tested_tick`: the time
/// from when its screen showed the server's state of a tick to when it
/// shows its rocket's flight at the end of that tick, so that at the end of
/// each tick the server's rocket is where the shooter's screen draws it
/// beside the others of that tick. That is the shooter's view behind its
/// own clock at the click: its own time then (`now - 1` ticks plus `at_s`,
/// on the timeline where a state after tick `t` is drawn at `t`) less
/// `tested_tick`. At most `cap_s` (and what a launch can say), in whole
/// milliseconds as it travels.
pub(crate) fn catch_up(now: u32, at_s: f32, tested_tick: f64, cap_s: f64, dt_s: f32) -> CatchUp {
    let gap_s = ((f64::from(now) - 1.0 - tested_tick) * f64::from(dt_s) + f64::from(at_s)).max(0.0);
    let cap_s = cap_s.clamp(0.0, f64::from(MAX_CATCH_UP_MS) / 1000.0);
    let capped = gap_s > cap_s + 1e-6;
    let ms = (gap_s.min(cap_s) * 1000.0).round();
    CatchUp { head_start_s: if ms.is_finite() { ms as f32 / 1000.0 } else { 0.0 }, capped }
}

/// Tests a piece of a rocket's flight (`from_s` to `to_s` seconds flown)
/// against `others` and the wall: how far it flew if it ended there, and
/// whom it met.
fn meet(flying: &Flying, (from_s, to_s): (f32, f32), others: &[(PlayerId, Hitbox)]) -> Option<(f32, Option<PlayerId>)> {
    let (from_m, to_m) = (from_s.max(0.0) * ROCKET_SPEED_MPS, to_s.max(0.0) * ROCKET_SPEED_MPS);
    let reach = to_m.min(flying.wall_m);
    match rocket::player_hit(&flying.launch, flying.owner, (from_m, reach), others) {
        Some((id, at)) => Some((at, Some(id))),
        None if to_m >= flying.wall_m => Some((flying.wall_m, None)),
        None => None,
    }
}

/// Every rocket in flight one tick on, against the players as they are now.
pub(crate) fn fly_rockets(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    history: Res<LagHistory>,
    mut rockets: ResMut<Rockets>,
    mut blasts: ResMut<Blasts>,
    mut resolved: MessageWriter<RocketResolved>,
) {
    let present = history.latest();
    let dt = rate.dt_s();
    rockets.0.retain_mut(|flying| {
        let to_s = flying.launch.flown_s(tick.0, dt) + flying.head_start_s;
        let met = meet(flying, (flying.flown_s, to_s), &present);
        flying.flown_s = to_s;
        if let Some((distance_m, direct)) = met {
            let others = present.iter().filter(|(id, _)| *id != flying.owner).copied().collect();
            let met_tick = f64::from(tick.0);
            blasts.0.push(Blast {
                owner: flying.owner,
                launch: flying.launch,
                distance_m,
                direct,
                others,
                met_tick,
                quad: flying.quad,
            });
            return false;
        }
        if Launch::spent(to_s) {
            // Gone into the sky: a shot that reached nobody.
            resolved.write(RocketResolved { owner: flying.owner, reached: Vec::new() });
            return false;
        }
        true
    });
}

/// This tick's rockets launched: brought up to their shooters' time along
/// a path tested against the others as each shooter saw them, then told to
/// everyone (the shooter too, to match it to the rocket it drew).
pub(crate) fn launch_rockets(
    (tick, rate, world): (Res<ServerTick>, Res<TickRate>, Res<SimWorld>),
    (history, switch, projectiles): (Res<LagHistory>, Res<LagCompensation>, Res<ProjectileCompensation>),
    mut pending: ResMut<PendingRockets>,
    mut rockets: ResMut<Rockets>,
    mut blasts: ResMut<Blasts>,
    mut log: ResMut<RocketLog>,
    (mut server, round_trips): (ResMut<RenetServer>, Res<crate::vocabulary::RoundTrips>),
    shooters: Query<(&ServerPlayer, &ClientPrefs, &CommandBuffer, Option<&Sim>)>,
    mut stats: ResMut<CombatStats>,
) {
    let dt = rate.dt_s();
    for (shot, at_s) in pending.0.drain(..) {
        let Some((shooter, prefs, buffer, sim)) = shooters.iter().find(|(p, ..)| p.id == shot.shooter) else {
            continue;
        };
        if rockets.0.len() >= MAX_ROCKETS {
            stats.rockets_dropped += 1;
            continue;
        }
        let launch = Launch { origin: shot.shot.origin, dir: shot.shot.dir, tick: shot.cmd.tick, at_s };
        let compensate = switch.on && projectiles.0 && prefs.0.projectile_compensation && shooter.client_id.is_some();
        let link = ShooterLink {
            rtt_s: shooter.client_id.map(|c| round_trips.of(c, &server)).unwrap_or(0.0),
            interp_ms: prefs.0.interp_ms,
            arrival_jitter_ticks: buffer.arrival_jitter_ticks(),
            frame_ticks: buffer.frame_ticks(rate.hz()),
        };
        // When the shooter saw the others: the same rule as a hitscan shot's rewind.
        let seen = history.tested_for(
            shot,
            Unlag { compensate, max_unlag_s: switch.max_unlag_s },
            link,
            (*tick, *rate),
            &mut stats,
        );
        let catch = if compensate {
            let mut catch = catch_up(tick.0, at_s, seen.tick, switch.max_unlag_s, dt);
            // The rewind stopped at the cap's floor: the catch-up stops there too.
            let floor = f64::from(tick.0) - rate.s_to_ticks(switch.max_unlag_s.max(0.0));
            catch.capped |= (seen.tick - floor).abs() < 1e-3;
            catch
        } else {
            CatchUp { head_start_s: 0.0, capped: false }
        };
        stats.rockets_fired += 1;
        stats.catch_ups_capped += u64::from(catch.capped);
        let mut flying = Flying {
            owner: shot.shooter,
            launch,
            head_start_s: catch.head_start_s,
            flown_s: 0.0,
            wall_m: launch.wall_distance(&world),
            quad: sim.is_some_and(|s| s.quad_s > 0.0),
        };
        let catch_up_ms = (catch.head_start_s * 1000.0).round() as u16;
        broadcast(
            &mut server,
            &ToClient::RocketFired { shooter: shot.shooter, launch: RocketLaunch::new(&launch, dt, catch_up_ms) },
            None,
        );
        log.0.push_back(RocketRecord {
            owner: shot.shooter,
            launched_tick: tick.0,
            launch,
            catch_up_ms,
            capped: catch.capped,
            blast: None,
        });
        while log.0.len() > ROCKET_LOG_LEN {
            log.0.pop_front();
        }
        // The path up to the present, a tick at a time from when the
        // shooter saw the others (without compensation: the present only).
        let end_s = launch.flown_s(tick.0, dt) + catch.head_start_s;
        let steps = (f64::from(catch.head_start_s) / f64::from(dt)).ceil() as u32;
        let mut ended = None;
        for k in 0..=steps {
            let behind_ticks = f64::from(steps - k).min(f64::from(catch.head_start_s / dt));
            let to_s = end_s - behind_ticks as f32 * dt;
            let others: Vec<(PlayerId, Hitbox)> =
                if k == steps { history.latest() } else { history.rewind(f64::from(tick.0) - behind_ticks) };
            let others: Vec<_> = others.into_iter().filter(|(id, _)| *id != shot.shooter).collect();
            let met = meet(&flying, (flying.flown_s, to_s), &others);
            flying.flown_s = to_s.max(flying.flown_s);
            if let Some((distance_m, direct)) = met {
                let met_tick = f64::from(tick.0) - behind_ticks;
                let quad = flying.quad;
                ended = Some(Blast { owner: shot.shooter, launch, distance_m, direct, others, met_tick, quad });
                break;
            }
        }
        match ended {
            Some(blast) => blasts.0.push(blast),
            None => rockets.0.push(flying),
        }
    }
}

/// Each blast's splash: damage and a kick for every player within reach
/// and in the open (the others as the rocket met them, hurt and pushed as
/// they are now); the shooter's own at the tick of its timeline the
/// rocket got there, now or when that tick runs. Everyone sees the blast.
pub(crate) fn splash_blasts(
    (tick, rate, world, range): (Res<ServerTick>, Res<TickRate>, Res<SimWorld>, Option<Res<Range>>),
    mut blasts: ResMut<Blasts>,
    mut own: ResMut<OwnSplashes>,
    mut log: ResMut<RocketLog>,
    mut server: ResMut<RenetServer>,
    mut players: Query<(Entity, &ServerPlayer, &mut Sim)>,
    mut stats: ResMut<CombatStats>,
    (roster, mode): (Res<Roster>, Res<GameMode>),
    (mut frags, mut resolved, mut kills): (
        MessageWriter<Frag>,
        MessageWriter<RocketResolved>,
        MessageWriter<RocketKill>,
    ),
    mut commands: Commands,
) {
    let dt = rate.dt_s();
    for blast in blasts.0.drain(..) {
        // The quad (at the launch) multiplies the splash on others.
        let quad = blast.quad;
        let point = blast.launch.blast_point(blast.distance_m);
        let own_tick = blast.launch.tick_reaching(blast.distance_m, dt);
        stats.rocket_blasts += 1;
        stats.rocket_direct_hits += u64::from(blast.direct.is_some());
        let mut victims = Vec::new();
        let mut hits = Vec::new();
        for (id, hitbox) in &blast.others {
            let Some(splash) = rocket::splash(&world, point, hitbox, false, blast.direct == Some(*id)) else {
                continue;
            };
            victims.push((*id, splash.damage));
            let Some((entity, player, mut sim)) = players.iter_mut().find(|(_, p, _)| p.id == *id) else { continue };
            if !sim.hurtable() {
                continue;
            }
            stats.splash_hits += 1;
            sim.0 = rocket::knock(&sim.0, splash.kick);
            // A teammate's splash pushes but does not hurt (friendly fire off).
            let spared = range.is_some() || !mode.harms(&roster, blast.owner, *id);
            let dealt = u32::from(splash.damage) * if quad { arena_sim::items::QUAD_FACTOR } else { 1 };
            let damage = if spared { 0 } else { dealt.min(u32::from(u8::MAX)) as u8 };
            hurt(&mut sim.0, damage, (blast.owner, *id), entity, (*tick, *rate), &mut frags, &mut commands);
            let zone = rocket::SPLASH_ZONE;
            if let (Some(client), true) = (player.client_id, damage > 0) {
                send(
                    &mut server,
                    client,
                    &ToClient::Damaged { attacker: blast.owner, amount: damage, zone, from: point },
                );
            }
            if damage > 0 {
                hits.push(HitReport { victim: *id, zone, damage, killed: !sim.alive });
            }
            if !sim.alive {
                kills.write(RocketKill {
                    killer: blast.owner,
                    victim: *id,
                    origin: blast.launch.origin,
                    dir: blast.launch.dir,
                    blast: point,
                    met_tick: blast.met_tick,
                    met: *hitbox,
                });
            }
        }
        // The shooter's hit marker, for each player its splash hurt.
        if let Some(client) = players.iter().find(|(_, p, _)| p.id == blast.owner).and_then(|(_, p, _)| p.client_id) {
            for report in hits {
                send(&mut server, client, &ToClient::RocketHit(report));
            }
        }
        if tick_after(own_tick, tick.0) {
            own.0.push(OwnSplash { owner: blast.owner, tick: own_tick, point });
        } else if let Some((entity, _, mut sim)) = players.iter_mut().find(|(_, p, _)| p.id == blast.owner) {
            land(
                &world,
                point,
                &mut sim.0,
                (blast.owner, entity),
                (*tick, *rate),
                range.is_some(),
                &mut frags,
                &mut commands,
            );
        }
        let own_ticks = arena_sim::tick_diff(own_tick, blast.launch.tick).clamp(0, i32::from(u16::MAX)) as u16;
        let info = BlastInfo { tick_low: blast.launch.tick as u16, point, own_ticks, direct: blast.direct };
        broadcast(&mut server, &ToClient::RocketExploded { owner: blast.owner, blast: RocketBlast::new(&info) }, None);
        resolved.write(RocketResolved { owner: blast.owner, reached: victims.iter().map(|(id, _)| *id).collect() });
        if let Some(record) =
            log.0.iter_mut().rev().find(|r| r.owner == blast.owner && r.launch.tick == blast.launch.tick)
        {
            record.blast = Some(BlastRecord { point, direct: blast.direct, victims, tick: tick.0, own_tick });
        }
    }
    // Splashes whose shooter's tick has passed without it (it left) are dropped.
    own.0.retain(|s| tick_after(s.tick, tick.0));
    own.0.truncate(MAX_ROCKETS);
}

/// A shooter's own splash landing on it: the kick, and the damage unless
/// on a range or protected; a death is its own.
#[allow(clippy::too_many_arguments)]
pub(crate) fn land(
    world: &ArenaWorld,
    point: Vec3,
    sim: &mut PlayerState,
    (owner, entity): (PlayerId, Entity),
    (tick, rate): (ServerTick, TickRate),
    range: bool,
    frags: &mut MessageWriter<Frag>,
    commands: &mut Commands,
) {
    let Some((knocked, damage)) = rocket::own_splash(world, point, sim) else { return };
    let hurtable = sim.hurtable();
    *sim = knocked;
    if hurtable && !range {
        hurt(sim, damage, (owner, owner), entity, (tick, rate), frags, commands);
    }
}

/// Damage from a rocket: a kill at no health left.
fn hurt(
    sim: &mut PlayerState,
    damage: u8,
    (killer, victim): (PlayerId, PlayerId),
    entity: Entity,
    (tick, rate): (ServerTick, TickRate),
    frags: &mut MessageWriter<Frag>,
    commands: &mut Commands,
) {
    if damage == 0 || !sim.alive {
        return;
    }
    // Armour takes two thirds while it lasts.
    arena_sim::items::take_damage(sim, u32::from(damage));
    if sim.health == 0 {
        kill(commands, entity, sim, Frag { killer, victim, zone: rocket::SPLASH_ZONE }, tick, rate, frags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catch_up_is_the_gap_to_what_the_shooter_saw_at_most_the_cap() {
        let dt = 1.0 / 64.0;
        // Clicked half a tick into the command's tick, the others drawn at 990.
        let c = catch_up(1000, 0.5 * dt, 990.0, 0.4, dt);
        assert!((c.head_start_s - 0.148).abs() < 1e-6 && !c.capped, "{c:?}");
        let c = catch_up(1000, 0.0, 960.0, 0.4, dt);
        assert!((c.head_start_s - 0.4).abs() < 1e-6 && c.capped, "{c:?}");
        // What a launch can say bounds it too; a future claim gives none.
        assert!(catch_up(1000, 0.0, 0.0, 5.0, dt).head_start_s <= f32::from(MAX_CATCH_UP_MS) / 1000.0);
        assert_eq!(catch_up(1000, 0.0, 1010.0, 0.4, dt).head_start_s, 0.0);
        assert_eq!(catch_up(1000, 0.0, f64::NAN, 0.4, dt).head_start_s, 0.0);
    }
}
