//! Server-side bots. A bot is a player with no client: its commands come from
//! a small brain instead of the network, and from there on it is like
//! everyone else: the same command buffer, the same movement and weapon code,
//! the same snapshots and scoreboard.
//!
//! Out of a fight a bot walks between random spots along the navigation graph
//! (through doors, up ramps and stairs). In a fight it strafes, jumps now and
//! then, keeps its distance, and aims like a person: it reacts after a delay,
//! turns at a limited speed and aims with an error, all scaled by its skill.
//! At middle distances it takes the rocket launcher and aims at the feet,
//! ahead of where the target runs.

use arena_protocol::modes::Side;
use arena_sim::nav::NavGraph;
use arena_sim::rng::SplitMix64;
use arena_sim::rocket::ROCKET_SPEED_MPS;
use arena_sim::weapon::MAGAZINE;
use arena_sim::{Buttons, Hitbox, ItemKind, PlayerId, PlayerState, UserCmd, Weapon, look_at, yaw_towards};
use bevy::prelude::*;

use super::intake::CommandBuffer;
use super::match_flow::MatchState;
use super::roster::Admission;
use crate::vocabulary::{GameMode, Items, PlayersChanged, Roster, ServerPlayer, ServerTick, Sim, SimWorld, TickRate};

/// Names bots are given, in order.
const NAMES: [&str; 16] = [
    "Hopper", "Lovelace", "Turing", "Hamilton", "Dijkstra", "Knuth", "Liskov", "Ritchie", "Thompson", "Kay", "Lamport",
    "Carmack", "Abrash", "Cray", "Shannon", "Babbage",
];
/// Farthest a bot notices an enemy, metres.
const SIGHT_M: f32 = 45.0;
/// Half the field of view a bot sees in, radians; closer than
/// [`HEARING_M`] it notices anyone.
const HALF_FOV_RAD: f32 = 1.1;
const HEARING_M: f32 = 8.0;
/// How many times a second, at least, a bot looks around for enemies (a
/// ray to every candidate in view; every tick below 64 Hz): a person takes
/// in a scene a few dozen times a second at most and reacts in a fifth of
/// a second or more, so a bot need not look every tick. Between its looks
/// it keeps its eye on the enemy it has (one ray), and looks again at once
/// when it loses it. The bots look on different ticks (by id), so the rays of
/// 48 bots at 128 Hz spread over the ticks; looking every tick, parry's
/// ray casts were 6% of such a server's time.
const LOOKS_PER_S: u32 = 32;
/// Preferred fighting distance band, metres.
const TOO_FAR_M: f32 = 18.0;
const TOO_CLOSE_M: f32 = 7.0;
/// Within this distance of a waypoint, it counts as reached, metres.
const WAYPOINT_REACHED_M: f32 = 1.2;
/// Distances at which a bot takes the rocket launcher, metres (wider once
/// it holds it, so it does not switch back and forth at the edges).
const ROCKET_TAKE_M: std::ops::Range<f32> = 5.0..16.0;
const ROCKET_KEEP_M: std::ops::Range<f32> = 3.5..19.0;

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, (build_navigation, add_bots).chain());
}

/// How many bots to add and how well they play.
#[derive(Resource, Debug, Clone, Copy)]
pub(crate) struct BotSettings {
    pub count: usize,
    /// 0 (hopeless) to 1 (sharp).
    pub skill: f32,
    /// Seeds the bots' choices (routes, aim error, strafing): the same seed
    /// plays the same game against the same inputs.
    pub seed: u64,
    /// Bots take the rocket launcher at middle distances (else the rifle only).
    pub rockets: bool,
}

/// The walkable spots of the arena and the links between them.
#[derive(Resource, Debug)]
pub(crate) struct Navigation(pub NavGraph);

/// A bot's mind.
#[derive(Component, Debug)]
pub(crate) struct BotBrain {
    skill: f32,
    /// Takes the rocket launcher at middle distances.
    rockets: bool,
    rng: SplitMix64,
    /// Waypoints still to walk to, next first.
    path: Vec<Vec3>,
    target: Option<PlayerId>,
    /// Tick at which the current target was first seen.
    noticed_tick: u32,
    yaw: f32,
    pitch: f32,
    /// Current aiming error (yaw, pitch), radians, and when it changes next.
    aim_error: Vec2,
    next_error_tick: u32,
    strafe: f32,
    next_strafe_tick: u32,
    /// Where it was a second ago, to notice being stuck.
    checkpoint: Vec3,
    checkpoint_tick: u32,
    /// Its spawn counter last tick: a change is a teleport (or a respawn),
    /// after which the route goes on from the spot it came out at.
    life: u8,
}

impl BotBrain {
    /// Forgets the way it was walking (the map changed under it).
    pub(crate) fn forget_path(&mut self) {
        self.path.clear();
    }

    fn new(skill: f32, seed: u64, rockets: bool) -> Self {
        Self {
            skill: skill.clamp(0.0, 1.0),
            rockets,
            rng: SplitMix64::new(seed),
            path: Vec::new(),
            target: None,
            noticed_tick: 0,
            yaw: 0.0,
            pitch: 0.0,
            aim_error: Vec2::ZERO,
            next_error_tick: 0,
            strafe: 1.0,
            next_strafe_tick: 0,
            checkpoint: Vec3::ZERO,
            checkpoint_tick: 0,
            life: 0,
        }
    }

    /// Seconds from seeing an enemy to the first shot.
    fn reaction_s(&self) -> f32 {
        0.6 - 0.4 * self.skill
    }

    /// Typical aiming error, radians (about 5 degrees for a novice, 1 for a sharp bot).
    fn aim_spread_rad(&self) -> f32 {
        (5.0 - 4.0 * self.skill).to_radians()
    }

    /// How fast it turns, radians per second.
    fn turn_rate(&self) -> f32 {
        (200.0 + 400.0 * self.skill).to_radians()
    }
}

fn build_navigation(world: Res<SimWorld>, mut commands: Commands) {
    let nav = NavGraph::build(&world);
    debug!("navigation: {} spots", nav.nodes.len());
    commands.insert_resource(Navigation(nav));
}

fn add_bots(settings: Option<Res<BotSettings>>, mut admission: Admission) {
    let Some(settings) = settings else { return };
    for i in 0..settings.count {
        add_bot(&mut admission, &settings, i);
    }
    if settings.count > 0 {
        info!("{} bots joined (skill {:.2})", settings.count, settings.skill);
        admission.commands().trigger(PlayersChanged);
    }
}

/// Adds bot number `i` (named from the list); its id, or none when no id is left.
pub(crate) fn add_bot(admission: &mut Admission, settings: &BotSettings, i: usize) -> Option<PlayerId> {
    // The name is only a name: a bot is a player with no client.
    let name = NAMES[i % NAMES.len()];
    match admission.admit(name, None, false) {
        Ok((id, entity)) => {
            admission.commands().entity(entity).insert(BotBrain::new(
                settings.skill,
                settings.seed ^ u64::from(id.0).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                settings.rockets,
            ));
            Some(id)
        }
        Err(_) => {
            warn!("no player id left for bot {name}");
            None
        }
    }
}

/// Each tick, every bot decides its command for the tick.
pub(crate) fn think(
    tick: Res<ServerTick>,
    rate: Res<TickRate>,
    world: Res<SimWorld>,
    nav: Res<Navigation>,
    match_state: Res<MatchState>,
    (roster, mode, items): (Res<Roster>, Res<GameMode>, Res<Items>),
    players: Query<(&ServerPlayer, &Sim)>,
    mut bots: Query<(&ServerPlayer, &Sim, &mut BotBrain, &mut CommandBuffer)>,
) {
    // Each body's centre once a tick (the pose behind it is the costly
    // part: once per bot and body, 48 bots spent a third of a 128 Hz
    // server's time posing the same bodies again).
    let everyone: Vec<Seen> = players
        .iter()
        .map(|(p, s)| Seen {
            id: p.id,
            side: roster.side(p.id),
            state: s.0,
            center: s.0.alive.then(|| Hitbox::of(&s.0).body_center()),
        })
        .collect();
    // The items there now (a bot knows the map's items and sees which are up).
    let there: Vec<(Vec3, ItemKind)> = world
        .map()
        .items
        .iter()
        .zip(&items.slots)
        .filter(|(_, slot)| slot.available())
        .map(|(def, _)| (def.pos, def.kind))
        .collect();
    let dt = rate.dt_s();
    // The enemies of each side, listed once a tick for all its bots: the
    // list was rebuilt for every bot, a third of the bots' thinking
    // (callgrind, issue 61). A bot is in its side's list or not as its
    // teammates are, and never its own enemy: a look passes over it, and
    // its target is only ever what a look chose.
    let mut enemies_of: Vec<(Side, Vec<&Seen>)> = Vec::new();
    for (me, sim, mut brain, mut buffer) in &mut bots {
        // A bot plays for its team: its enemies are those it can hurt (as
        // `GameMode::harms` says, with the sides looked up once a tick).
        let my_side = roster.side(me.id);
        let at = match enemies_of.iter().position(|(side, _)| *side == my_side) {
            Some(at) => at,
            None => {
                // By reference: a copy of every player for each bot, each
                // tick, was a copy of the world 48 times a tick.
                let harmed = everyone
                    .iter()
                    .filter(|o| arena_protocol::modes::harms(my_side, o.side, false, mode.friendly_fire));
                enemies_of.push((my_side, harmed.collect()));
                enemies_of.len() - 1
            }
        };
        let others = &enemies_of[at].1;
        let mut cmd = if match_state.is_over() {
            UserCmd { tick: tick.0, yaw: brain.yaw, pitch: brain.pitch, ..Default::default() }
        } else {
            decide(&mut brain, me.id, &sim.0, others, (&world, &nav.0, &there), tick.0, rate.hz(), dt)
        };
        // On the wire's grids, as a client's command arrives (a demo then
        // records it in a few bits).
        cmd.quantize();
        // Filed like a client's command, for the tick about to run.
        buffer.offer(cmd, tick.0.wrapping_sub(1), 0.0, rate.hz());
    }
}

/// Another player as a bot's eyes take it in this tick.
#[derive(Clone, Copy)]
struct Seen {
    id: PlayerId,
    /// Its side this tick.
    side: Side,
    state: PlayerState,
    /// Where its body's centre is (alive only).
    center: Option<Vec3>,
}

/// A bot's command for one tick.
fn decide(
    brain: &mut BotBrain,
    me_id: PlayerId,
    me: &PlayerState,
    others: &[&Seen],
    (world, nav, items): (&SimWorld, &NavGraph, &[(Vec3, ItemKind)]),
    tick: u32,
    tick_hz: u32,
    dt: f32,
) -> UserCmd {
    let seconds = |s: f32| (s * tick_hz as f32).round() as u32;
    let mut cmd = UserCmd { tick, ..Default::default() };
    if !me.alive {
        brain.path.clear();
        brain.target = None;
        cmd.yaw = brain.yaw;
        return cmd;
    }
    let eye = me.eye_pos();
    let forward = arena_sim::player::view_forward(brain.yaw, 0.0);

    // Who can it see?
    let visible = |o: &Seen| {
        let Some(point) = o.center else { return false };
        let to = point - eye;
        let distance = to.length();
        let dir = to / distance.max(1e-3);
        let in_view = distance < HEARING_M || dir.dot(forward) > HALF_FOV_RAD.cos();
        o.state.alive && distance < SIGHT_M && in_view && world.cast_ray(eye, dir, distance).is_none()
    };
    let enemy = choose_enemy(brain.target, looks_around(me_id, tick, tick_hz), me_id, me.pos, others, visible)
        .map(|o| (o.id, o.state));
    if enemy.map(|(id, _)| id) != brain.target {
        brain.target = enemy.map(|(id, _)| id);
        brain.noticed_tick = tick;
    }

    let (desired_yaw, desired_pitch);
    if let Some((_, target)) = enemy {
        // Fight: aim (with an error that wanders), strafe, keep a distance.
        if !arena_sim::tick_after(brain.next_error_tick, tick) {
            let spread = brain.aim_spread_rad();
            brain.aim_error = Vec2::new(brain.rng.range(-spread, spread), brain.rng.range(-spread, spread) * 0.5);
            brain.next_error_tick = tick.wrapping_add(seconds(brain.rng.range(0.3, 0.8)));
        }
        let distance = (target.pos - me.pos).length();
        let band = if me.weapon == Weapon::Rocket { ROCKET_KEEP_M } else { ROCKET_TAKE_M };
        // At the feet, where the target will be when the rocket gets there.
        let flight_s = distance / ROCKET_SPEED_MPS;
        let ahead = Vec3::new(target.vel.x, 0.0, target.vel.z) * flight_s;
        let feet = target.pos + ahead + Vec3::Y * if target.on_ground { 0.1 } else { 0.6 };
        // Only with the way to the feet clear: over cover (Spire's crates and
        // parapets) a rocket bursts on the cover, and the rifle does better.
        let feet_clear = || {
            let to_feet = feet - eye;
            world.cast_ray(eye, to_feet.normalize_or_zero(), (to_feet.length() - 0.5).max(0.0)).is_none()
        };
        let rocket = brain.rockets && band.contains(&distance) && feet_clear();
        cmd.buttons.set(Buttons::ROCKET, rocket);
        let aim_point = if rocket { feet } else { Hitbox::of(&target).body_center() };
        let to = aim_point - eye;
        let (yaw, pitch) = look_at(eye, aim_point);
        desired_yaw = yaw + brain.aim_error.x;
        desired_pitch = pitch + brain.aim_error.y;
        if !arena_sim::tick_after(brain.next_strafe_tick, tick) {
            brain.strafe = -brain.strafe;
            brain.next_strafe_tick = tick.wrapping_add(seconds(brain.rng.range(0.4, 1.4)));
        }
        let distance = to.length();
        cmd.right = brain.strafe;
        cmd.forward = if distance > TOO_FAR_M {
            1.0
        } else if distance < TOO_CLOSE_M {
            -1.0
        } else {
            0.0
        };
        // No strafing or backing off an edge (Yard's slabs end in the void):
        // the other way, or stand.
        let view_yaw = brain.yaw;
        let ground_that_way = |forward: f32, right: f32| {
            let (sin, cos) = view_yaw.sin_cos();
            let dir = Vec3::new(-sin, 0.0, -cos) * forward + Vec3::new(cos, 0.0, -sin) * right;
            ground_ahead(world, me.pos, dir)
        };
        if !ground_that_way(0.0, cmd.right) {
            brain.strafe = -brain.strafe;
            cmd.right = if ground_that_way(0.0, brain.strafe) { brain.strafe } else { 0.0 };
        }
        if cmd.forward != 0.0 && !ground_that_way(cmd.forward, 0.0) {
            cmd.forward = 0.0;
        }
        if brain.rng.next_f32() < 0.01 {
            cmd.buttons.set(Buttons::JUMP, true);
        }
        let reacted = arena_sim::tick_diff(tick, brain.noticed_tick) as f32 >= brain.reaction_s() * tick_hz as f32;
        let on_target = angle_between(brain.yaw, brain.pitch, desired_yaw, desired_pitch) < 4f32.to_radians();
        if reacted && on_target && (rocket || me.ammo > 0) {
            cmd.buttons.set(Buttons::FIRE, true);
        } else if me.ammo == 0 && me.reload_s == 0.0 {
            // Empty in a fight: reload at once rather than stare.
            cmd.buttons.set(Buttons::RELOAD, true);
        }
        brain.path.clear();
    } else {
        // Roam: to an item worth having (health when hurt; armour, the
        // mega and the quad, contested), else to a random spot, and on.
        if brain.path.is_empty() {
            brain.path =
                item_route(nav, me, items, &mut brain.rng).unwrap_or_else(|| new_route(nav, me.pos, &mut brain.rng));
        }
        let near =
            |w: &Vec3| flat_distance(*w, me.pos) < WAYPOINT_REACHED_M && (w.y - me.pos.y).abs() < WAYPOINT_REACHED_UP_M;
        if me.spawn_count != brain.life {
            // Through a teleporter: the route goes on from its destination
            // (a later spot, reached at once).
            if let Some(reached) = brain.path.iter().take(ROUTE_LOOKAHEAD).rposition(near) {
                brain.path.drain(..=reached);
            }
        }
        if !me.on_ground {
            // Thrown by the pad its route took: that spot is behind, the
            // landing ahead (a jump or a kick elsewhere keeps the route).
            let thrown_by = |w: &Vec3| {
                world.map().jump_pad_at(*w, arena_sim::player::STAND_HEIGHT_M).is_some()
                    && flat_distance(*w, me.pos) < THROWN_WITHIN_M
            };
            while brain.path.first().is_some_and(thrown_by) {
                brain.path.remove(0);
            }
        }
        // A pad's or a teleporter's spot is reached by the trigger taking
        // hold (handled above), not by coming near it: the next spot is
        // across the void.
        let trigger = |w: &Vec3| {
            let map = world.map();
            let height = arena_sim::player::STAND_HEIGHT_M;
            map.jump_pad_at(*w, height).is_some() || map.teleporter_at(*w, height).is_some()
        };
        while brain.path.first().is_some_and(|w| near(w) && !trigger(w)) {
            brain.path.remove(0);
        }
        match brain.path.first() {
            Some(waypoint) => {
                let to = *waypoint - me.pos;
                desired_yaw = yaw_towards(to);
                cmd.forward = 1.0;
                // Jump down ledges and over whatever it bumps into.
                if waypoint.y < me.pos.y - 1.0 && flat_distance(*waypoint, me.pos) < 2.5 {
                    cmd.buttons.set(Buttons::JUMP, true);
                }
            }
            None => desired_yaw = brain.yaw,
        }
        desired_pitch = 0.0;
        // Out of a fight, the weapon in hand stays.
        cmd.buttons.set(Buttons::ROCKET, me.weapon == Weapon::Rocket);
        if me.ammo < MAGAZINE / 3 && me.reload_s == 0.0 {
            cmd.buttons.set(Buttons::RELOAD, true);
        }
    }

    brain.life = me.spawn_count;
    // What it meant to do, before the edge's veto: a bot that wants to
    // move and cannot is stuck (and takes another route).
    let wants_to_move = cmd.forward != 0.0 || cmd.right != 0.0;
    // Never on into the void: no step where the floor ends ahead (along
    // the way it wants to go, or the way it is already sliding), whatever
    // it was doing; it turns on the spot instead (a drop the bots' routes
    // take is within `EDGE_DROP_M`).
    if me.on_ground {
        let (sin, cos) = brain.yaw.sin_cos();
        let wish = Vec3::new(-sin, 0.0, -cos) * cmd.forward + Vec3::new(cos, 0.0, -sin) * cmd.right;
        let sliding = Vec3::new(me.vel.x, 0.0, me.vel.z) * SLIDE_LOOKAHEAD_S;
        if !ground_ahead(world, me.pos, wish) || !ground_ahead(world, me.pos + sliding, sliding) {
            cmd.forward = 0.0;
            cmd.right = 0.0;
        }
        // Nor a jump that comes down over nothing (a jump at a run covers
        // about 5 m): along the way it goes, floor all the way.
        let going = Vec3::new(me.vel.x, 0.0, me.vel.z) + wish;
        // Felt for only when it means to jump: otherwise four rays a bot
        // and tick, for nothing.
        let lands = || (1..=JUMP_PROBES).all(|k| ground_at(world, me.pos, going, EDGE_PROBE_M + k as f32));
        if cmd.held(Buttons::JUMP) && going.length() > 0.1 && !lands() {
            cmd.buttons.set(Buttons::JUMP, false);
        }
    }

    // Stuck (walking into something for a second): jump, then take another route.
    if arena_sim::tick_diff(tick, brain.checkpoint_tick) >= tick_hz as i32 {
        let moved = flat_distance(brain.checkpoint, me.pos);
        if moved < 0.5 && wants_to_move {
            // Over what it walks into; not where the floor ends (the edge's
            // veto stopped it: another route is the way).
            let vetoed = cmd.forward == 0.0 && cmd.right == 0.0;
            cmd.buttons.set(Buttons::JUMP, !vetoed);
            brain.path.clear();
        }
        brain.checkpoint = me.pos;
        brain.checkpoint_tick = tick;
    }

    // Turn towards where it wants to look, no faster than it can.
    let max_turn = brain.turn_rate() * dt;
    brain.yaw = arena_sim::cmd::wrap_angle(
        brain.yaw + arena_sim::cmd::wrap_angle(desired_yaw - brain.yaw).clamp(-max_turn, max_turn),
    );
    brain.pitch += (desired_pitch - brain.pitch).clamp(-max_turn, max_turn);
    cmd.yaw = brain.yaw;
    cmd.pitch = brain.pitch;
    cmd.sanitize();
    cmd
}

/// The enemy a bot fights this tick, of `others` as `visible` judges them.
/// On a look (`looking`), the nearest it sees. Between looks, the one it
/// has (`target`) while it still sees it; one it has lost (dead, behind
/// cover, on its side now, or gone) makes it look around at once, so a
/// bot in a fight turns to the next enemy as it did when it looked every
/// tick; with none, none until its next look.
fn choose_enemy<'a>(
    target: Option<PlayerId>,
    looking: bool,
    me_id: PlayerId,
    me_pos: Vec3,
    others: &[&'a Seen],
    visible: impl Fn(&Seen) -> bool,
) -> Option<&'a Seen> {
    // The nearest it sees: nearest first, so that a ray goes only to those
    // nearer than that one and to it (the rays are the cost), not to all
    // in view. The sort is stable, so of two as near the first is taken,
    // as `min_by` over the seen would.
    let look = || {
        let mut near: Vec<(f32, &'a Seen)> =
            others.iter().filter(|o| o.id != me_id).map(|o| (o.state.pos.distance_squared(me_pos), *o)).collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near.into_iter().map(|(_, o)| o).find(|o| visible(o))
    };
    match target {
        _ if looking => look(),
        Some(id) => others.iter().copied().find(|o| o.id == id).filter(|o| visible(o)).or_else(look),
        None => None,
    }
}

/// Whether bot `id` looks around on `tick`: on every tick below twice
/// [`LOOKS_PER_S`] ticks a second, else on every n-th tick (n the tick
/// rate over [`LOOKS_PER_S`], rounded down: at least that many looks a
/// second), bots on different ticks by id.
fn looks_around(id: PlayerId, tick: u32, tick_hz: u32) -> bool {
    let every = (tick_hz / LOOKS_PER_S).max(1);
    tick.wrapping_add(u32::from(id.0)) % every == 0
}

/// How far ahead a bot feels for the floor before stepping, metres.
const EDGE_PROBE_M: f32 = 1.5;
/// How far from a pad's spot a bot in the air has been thrown by that pad, metres.
const THROWN_WITHIN_M: f32 = 4.0;
/// Points (a metre apart, past `EDGE_PROBE_M`) a bot feels for the floor
/// along a jump's way before it jumps.
const JUMP_PROBES: usize = 4;
/// How far ahead of its slide a bot looks for the floor, seconds of it.
const SLIDE_LOOKAHEAD_S: f32 = 0.15;
/// How far down the floor ahead may be and still be stepped onto, metres
/// (a ledge the bot may drop down).
const EDGE_DROP_M: f32 = 4.0;

/// Whether there is floor `EDGE_PROBE_M` from `feet` along `dir` (none
/// asked: yes).
fn ground_ahead(world: &SimWorld, feet: Vec3, dir: Vec3) -> bool {
    ground_at(world, feet, dir, EDGE_PROBE_M)
}

/// Whether there is floor `distance_m` from `feet` along `dir` (none asked: yes).
fn ground_at(world: &SimWorld, feet: Vec3, dir: Vec3, distance_m: f32) -> bool {
    let Some(dir) = dir.try_normalize() else { return true };
    let probe = feet + dir * distance_m + Vec3::Y * 0.5;
    world.cast_ray(probe, Vec3::NEG_Y, EDGE_DROP_M + 0.5).is_some()
}

fn flat_distance(a: Vec3, b: Vec3) -> f32 {
    Vec2::new(a.x - b.x, a.z - b.z).length()
}

fn angle_between(yaw_a: f32, pitch_a: f32, yaw_b: f32, pitch_b: f32) -> f32 {
    let a = arena_sim::player::view_forward(yaw_a, pitch_a);
    let b = arena_sim::player::view_forward(yaw_b, pitch_b);
    a.dot(b).clamp(-1.0, 1.0).acos()
}

/// Waypoints ahead a bot looks for one it is at, after a teleport.
const ROUTE_LOOKAHEAD: usize = 6;
/// How far above or below a waypoint a bot may be and have reached it, metres.
const WAYPOINT_REACHED_UP_M: f32 = 2.5;
/// Below this health a bot goes for health.
const HURT_HEALTH: u8 = 60;
/// Longest route a bot takes to an item, spots.
const MAX_ITEM_ROUTE: usize = 40;

/// A route to the nearest item the bot wants and may take: health when
/// hurt, otherwise (half the time) armour, the mega or the quad.
fn item_route(nav: &NavGraph, me: &PlayerState, items: &[(Vec3, ItemKind)], rng: &mut SplitMix64) -> Option<Vec<Vec3>> {
    let hurt = me.health < HURT_HEALTH;
    let wanted = |kind: ItemKind| match kind {
        ItemKind::Health | ItemKind::LargeHealth => hurt,
        ItemKind::MegaHealth => true,
        ItemKind::YellowArmour | ItemKind::RedArmour | ItemKind::QuadDamage => !hurt,
    };
    if !hurt && rng.next_f32() < 0.5 {
        return None;
    }
    let start = nav.nearest(me.pos)?;
    items
        .iter()
        .filter(|(_, kind)| wanted(*kind) && arena_sim::items::can_grab(*kind, me))
        .filter_map(|(pos, _)| {
            let path = nav.path(start, nav.nearest(*pos)?)?;
            let mut route: Vec<Vec3> = path.into_iter().map(|i| nav.nodes[i]).collect();
            // The last spot is near the item; the item itself is the goal.
            route.push(*pos);
            (route.len() <= MAX_ITEM_ROUTE).then_some(route)
        })
        .min_by_key(|route| route.len())
}

/// A route to a random spot at least 10 m away.
fn new_route(nav: &NavGraph, from: Vec3, rng: &mut SplitMix64) -> Vec<Vec3> {
    let Some(start) = nav.nearest(from) else { return Vec::new() };
    for _ in 0..8 {
        let goal = rng.below(nav.nodes.len());
        if nav.nodes[goal].distance(from) < 10.0 {
            continue;
        }
        if let Some(path) = nav.path(start, goal) {
            return path.into_iter().map(|i| nav.nodes[i]).collect();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bots_look_around_at_least_32_times_a_second_on_ticks_spread_among_them() {
        // At 128 Hz each bot looks every fourth tick, and 48 bots' looks
        // fall 12 to a tick; at 64 Hz every second tick.
        for (tick_hz, every) in [(128, 4), (64, 2)] {
            for id in 0..48u8 {
                let looks: Vec<u32> =
                    (1000..1000 + tick_hz).filter(|t| looks_around(PlayerId(id), *t, tick_hz)).collect();
                assert_eq!(looks.len() as u32, LOOKS_PER_S, "bot {id} at {tick_hz} Hz");
                assert!(looks.windows(2).all(|w| w[1] - w[0] == every));
            }
            for tick in 1000..1000 + tick_hz {
                let lookers = (0..48u8).filter(|id| looks_around(PlayerId(*id), tick, tick_hz)).count() as u32;
                assert_eq!(lookers, 48 / every, "tick {tick} at {tick_hz} Hz");
            }
        }
        // Below 64 Hz, every tick; at 100 Hz every third (33 a second).
        for tick_hz in [20, 32, 60] {
            assert!((0..tick_hz).all(|t| looks_around(PlayerId(7), t, tick_hz)));
        }
        assert_eq!((0..100).filter(|t| looks_around(PlayerId(7), *t, 100)).count(), 33);
    }

    /// Player `id`, alive, `x` metres along the x axis from a bot at the origin.
    fn seen(id: u8, x: f32) -> Seen {
        let pos = Vec3::new(x, 0.0, 0.0);
        Seen {
            id: PlayerId(id),
            side: Side::Free,
            state: PlayerState { pos, alive: true, ..Default::default() },
            center: Some(pos),
        }
    }

    #[test]
    fn between_looks_a_bot_keeps_its_enemy_and_looks_again_when_it_loses_it() {
        // Player 1 is near, 2 farther, 3 farthest; the bot is 0, at the origin.
        let listed = [seen(0, 0.0), seen(1, 5.0), seen(2, 10.0), seen(3, 20.0)];
        let others: Vec<&Seen> = listed.iter().collect();
        let me = PlayerId(0);
        let choose = |target: Option<u8>, looking: bool, hidden: &[u8]| {
            let visible = |o: &Seen| !hidden.contains(&o.id.0);
            choose_enemy(target.map(PlayerId), looking, me, Vec3::ZERO, &others, visible).map(|o| o.id.0)
        };
        // A look: the nearest it sees, never itself.
        assert_eq!(choose(Some(3), true, &[]), Some(1));
        assert_eq!(choose(None, true, &[1]), Some(2));
        // Between looks: the enemy it has, though a nearer one is in sight.
        assert_eq!(choose(Some(3), false, &[]), Some(3));
        // Lost from sight: it looks again at once.
        assert_eq!(choose(Some(3), false, &[3]), Some(1));
        assert_eq!(choose(Some(3), false, &[1, 3]), Some(2));
        // Gone from its enemies (left, or on its side now): the same.
        assert_eq!(choose(Some(9), false, &[]), Some(1));
        // Nobody in sight: none.
        assert_eq!(choose(Some(3), false, &[1, 2, 3]), None);
        // No enemy and no look: none until its next look.
        assert_eq!(choose(None, false, &[]), None);
    }

    #[test]
    fn a_look_asks_after_the_nearest_first_and_stops_at_the_first_it_sees() {
        // Listed out of distance order; 4 and 2 as near as each other.
        let listed = [seen(5, 30.0), seen(4, 10.0), seen(0, 0.0), seen(2, 10.0), seen(1, 20.0), seen(3, 5.0)];
        let others: Vec<&Seen> = listed.iter().collect();
        let look = |hidden: &[u8]| {
            let asked = std::cell::RefCell::new(Vec::new());
            let visible = |o: &Seen| {
                asked.borrow_mut().push(o.id.0);
                !hidden.contains(&o.id.0)
            };
            let chosen = choose_enemy(None, true, PlayerId(0), Vec3::ZERO, &others, visible).map(|o| o.id.0);
            (chosen, asked.into_inner())
        };
        // Each ask is a ray: none past the nearest seen, never itself.
        assert_eq!(look(&[]), (Some(3), vec![3]));
        // Of two as near, the first listed (as the nearest of all seen was).
        assert_eq!(look(&[3]), (Some(4), vec![3, 4]));
        assert_eq!(look(&[3, 4]), (Some(2), vec![3, 4, 2]));
        assert_eq!(look(&[1, 2, 3, 4, 5]), (None, vec![3, 4, 2, 1, 5]));

        // A full game's list, many as near as each other: of those, still
        // the first listed that it sees.
        let crowd: Vec<Seen> =
            (1..48u8).map(|id| seen(id, [10.0, 20.0, 10.0, 30.0, 20.0][usize::from(id) % 5])).collect();
        let others: Vec<&Seen> = crowd.iter().collect();
        let nearest: Vec<u8> = crowd.iter().filter(|o| o.state.pos.x == 10.0).map(|o| o.id.0).collect();
        for hidden in 0..nearest.len() {
            let visible = |o: &Seen| !nearest[..hidden].contains(&o.id.0);
            let chosen = choose_enemy(None, true, PlayerId(0), Vec3::ZERO, &others, visible).map(|o| o.id.0);
            assert_eq!(chosen, Some(nearest[hidden]));
        }
    }
}
