//! The rocket launcher's projectile: a rocket's flight as a pure function of
//! its launch (where, along what, at which instant of which command), where
//! it meets the world or a player, and its splash (damage with falloff and
//! line of sight, knockback). The server flies every rocket with these and
//! the shooter's client flies its own with the same, so both find the same
//! wall at the same tick, and the shooter predicts its own rocket jump.

use glam::Vec3;

use crate::hitbox::{HitZone, Hitbox};
use crate::player::PlayerState;
use crate::time::tick_diff;
use crate::world::ArenaWorld;
use crate::{PlayerId, quant};

/// A rocket's speed, metres per second.
pub const ROCKET_SPEED_MPS: f32 = 25.0;
/// A rocket's radius when it meets a player, metres.
pub const ROCKET_RADIUS_M: f32 = 0.12;
/// Longest a rocket flies, seconds (100 m: farther than any wall).
pub const MAX_FLIGHT_S: f32 = 4.0;
/// Radius of an explosion's splash, metres.
pub const SPLASH_RADIUS_M: f32 = 3.0;
/// Splash damage at the centre, falling off linearly to 0 at the radius.
pub const SPLASH_DAMAGE: f32 = 70.0;
/// Added for a direct hit: a direct hit on a fresh player kills.
pub const DIRECT_HIT_BONUS: u8 = 30;
/// The share of its own splash a shooter takes.
pub const SELF_DAMAGE_FACTOR: f32 = 0.35;
/// Speed a splash gives at its centre, metres per second (falling off like
/// the damage): with a jump, a rocket at one's feet lifts about 5 m.
pub const KNOCKBACK_MPS: f32 = 11.0;
/// How far before the surface it hit a rocket explodes, metres: the splash's
/// line of sight starts in the open, not inside the wall.
const STANDOFF_M: f32 = 0.05;

/// Where and when a rocket left: the sub-tick shot (see [`crate::Aim`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launch {
    pub origin: Vec3,
    /// Unit length.
    pub dir: Vec3,
    /// The command that fired it.
    pub tick: u32,
    /// When within that command's tick, seconds from its start (negative:
    /// during the tick before).
    pub at_s: f32,
}

impl Launch {
    /// Seconds flown at the end of command tick `t` on the shooter's
    /// timeline (negative before it left).
    pub fn flown_s(&self, t: u32, dt_s: f32) -> f32 {
        (tick_diff(t, self.tick) + 1) as f32 * dt_s - self.at_s
    }

    /// Seconds flown at `time` in ticks (tick `t` spans `t..t+1`).
    pub fn flown_at(&self, time_ticks: f64, dt_s: f32) -> f32 {
        ((time_ticks - f64::from(self.tick)) * f64::from(dt_s)) as f32 - self.at_s
    }

    /// Where the rocket is after `flown_s` seconds.
    pub fn pos(&self, flown_s: f32) -> Vec3 {
        self.origin + self.dir * (ROCKET_SPEED_MPS * flown_s.clamp(0.0, MAX_FLIGHT_S))
    }

    /// How far it flies before a wall, metres (its whole flight if none).
    pub fn wall_distance(&self, world: &ArenaWorld) -> f32 {
        let max = ROCKET_SPEED_MPS * MAX_FLIGHT_S;
        world.cast_ray(self.origin, self.dir, max).unwrap_or(max)
    }

    /// The command tick on the shooter's timeline during which the rocket
    /// has flown `distance_m`: where the shooter's own splash lands, on
    /// both sides, from the same numbers.
    pub fn tick_reaching(&self, distance_m: f32, dt_s: f32) -> u32 {
        let ticks = ((distance_m / ROCKET_SPEED_MPS + self.at_s) / dt_s - 1.0).ceil();
        let mut k = if ticks.is_finite() { ticks.clamp(0.0, 4096.0) as u32 } else { 0 };
        // Settle rounding at the boundary with the flight rule itself.
        while k > 0 && self.flown_s(self.tick.wrapping_add(k - 1), dt_s) * ROCKET_SPEED_MPS >= distance_m {
            k -= 1;
        }
        while self.flown_s(self.tick.wrapping_add(k), dt_s) * ROCKET_SPEED_MPS < distance_m && k < 4096 {
            k += 1;
        }
        self.tick.wrapping_add(k)
    }

    /// Where it explodes after `distance_m` of flight: just short of what it hit.
    pub fn blast_point(&self, distance_m: f32) -> Vec3 {
        self.origin + self.dir * (distance_m - STANDOFF_M).max(0.0)
    }

    /// Whether its flight is over after `flown_s`.
    pub fn spent(flown_s: f32) -> bool {
        flown_s >= MAX_FLIGHT_S
    }
}

/// The first player a rocket meets between `from_m` and `to_m` of its
/// flight (never `owner`): who, and how far it had flown.
pub fn player_hit(
    launch: &Launch,
    owner: PlayerId,
    (from_m, to_m): (f32, f32),
    players: &[(PlayerId, Hitbox)],
) -> Option<(PlayerId, f32)> {
    let start = launch.origin + launch.dir * from_m.max(0.0);
    let length = (to_m - from_m.max(0.0)).max(0.0);
    players
        .iter()
        .filter(|(id, _)| *id != owner)
        .filter_map(|(id, h)| {
            h.sweep_test(start, launch.dir, length, ROCKET_RADIUS_M).map(|t| (*id, from_m.max(0.0) + t))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// What a splash does to one player.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Splash {
    /// 1 at the centre, 0 at the radius.
    pub falloff: f32,
    pub damage: u8,
    /// The change of velocity it gives, m/s.
    pub kick: Vec3,
}

/// What an explosion at `point` does to a player with `hitbox`: nothing
/// beyond the radius or behind a wall; else damage and a kick away from the
/// point, both falling off with the distance to the nearest point of the
/// body. `own` (the shooter's own) takes [`SELF_DAMAGE_FACTOR`] of the
/// damage and the whole kick; `direct`, the player it hit, the bonus.
pub fn splash(world: &ArenaWorld, point: Vec3, hitbox: &Hitbox, own: bool, direct: bool) -> Option<Splash> {
    if !hitbox.alive || !point.is_finite() {
        return None;
    }
    let nearest = hitbox.nearest_point(point);
    let to = nearest - point;
    let distance = to.length();
    if distance > SPLASH_RADIUS_M {
        return None;
    }
    if distance > 1e-3 && world.cast_ray(point, to / distance, distance).is_some() && !direct {
        return None;
    }
    let falloff = 1.0 - distance / SPLASH_RADIUS_M;
    let raw = SPLASH_DAMAGE * falloff * if own { SELF_DAMAGE_FACTOR } else { 1.0 };
    let bonus = if direct { DIRECT_HIT_BONUS } else { 0 };
    let damage = (raw.round() as u8).saturating_add(bonus);
    // Away from the point towards the body's centre, so a blast at the
    // feet lifts; straight up from inside.
    let away = (hitbox.body_center() - point).try_normalize().unwrap_or(Vec3::Y);
    Some(Splash { falloff, damage, kick: away * (KNOCKBACK_MPS * falloff) })
}

/// A splash's kick on a player's state: the velocity changes, and an upward
/// kick lifts it off the ground. Snapped to the grids, like every state.
pub fn knock(state: &PlayerState, kick: Vec3) -> PlayerState {
    if !state.alive || !kick.is_finite() {
        return *state;
    }
    let mut next = *state;
    next.vel += kick;
    if kick.y > 0.0 {
        next.on_ground = false;
    }
    quant::snap_state(&next)
}

/// A shooter's own splash on its state after the tick it lands on: the
/// state kicked (which its client predicts with this same rule) and the
/// damage (which only the server decides). None out of reach.
pub fn own_splash(world: &ArenaWorld, point: Vec3, state: &PlayerState) -> Option<(PlayerState, u8)> {
    let hit = splash(world, point, &Hitbox::of(state), true, false)?;
    Some((knock(state, hit.kick), hit.damage))
}

/// The zone a rocket's damage counts as (for the kill feed).
pub const SPLASH_ZONE: HitZone = HitZone::Body;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::MapDef;
    use crate::{MoveEvents, UserCmd, step_player, tick_dt_s};

    const DT: f32 = 1.0 / 64.0;

    fn launch(origin: Vec3, dir: Vec3) -> Launch {
        Launch { origin, dir: dir.normalize(), tick: 100, at_s: -0.25 * DT }
    }

    #[test]
    fn flight_is_a_function_of_the_launch_and_the_tick() {
        let l = launch(Vec3::ZERO, Vec3::NEG_Z);
        assert!((l.flown_s(100, DT) - 1.25 * DT).abs() < 1e-7);
        assert!((l.flown_s(110, DT) - 11.25 * DT).abs() < 1e-6);
        assert_eq!(l.flown_s(99, DT), l.flown_at(100.0, DT));
        assert!(l.pos(1.0).distance(Vec3::new(0.0, 0.0, -ROCKET_SPEED_MPS)) < 1e-4);
        assert_eq!(l.pos(-1.0), Vec3::ZERO, "not before it left");
        assert!(l.pos(100.0).length() <= ROCKET_SPEED_MPS * MAX_FLIGHT_S + 1e-3);
    }

    #[test]
    fn the_tick_reaching_a_distance_is_the_first_whose_flight_covers_it() {
        let l = launch(Vec3::ZERO, Vec3::NEG_Z);
        for d in [0.0f32, 0.01, 0.48, 0.49, 1.0, 7.3, 25.0, 99.0] {
            let t = l.tick_reaching(d, DT);
            assert!(l.flown_s(t, DT) * ROCKET_SPEED_MPS >= d, "{d}: {t}");
            if t != l.tick {
                assert!(l.flown_s(t - 1, DT) * ROCKET_SPEED_MPS < d, "{d}: {t} is not the first");
            }
        }
    }

    fn standing(x: f32, z: f32) -> Hitbox {
        Hitbox::of(&PlayerState::spawned_at(Vec3::new(x, 0.0, z), 0.0))
    }

    #[test]
    fn a_rocket_meets_the_nearest_player_in_its_path_never_its_owner() {
        let l = launch(Vec3::new(0.0, 1.0, 0.0), Vec3::NEG_Z);
        let players = [
            (PlayerId(1), standing(0.0, 0.0)),
            (PlayerId(2), standing(0.3, -10.0)),
            (PlayerId(3), standing(0.0, -6.0)),
        ];
        let (who, at) = player_hit(&l, PlayerId(1), (0.0, 20.0), &players).expect("hits");
        assert_eq!(who, PlayerId(3));
        // Its back (it faces away), a torso's and a rocket's radius short of its spine.
        let reach = crate::hitbox::TORSO_RADIUS_M + ROCKET_RADIUS_M;
        assert!(at > 6.0 - reach - 0.05 && at < 6.0 - reach + 0.05, "{at}");
        assert_eq!(player_hit(&l, PlayerId(1), (0.0, 5.0), &players), None, "not yet there");
        assert_eq!(player_hit(&l, PlayerId(1), (7.0, 20.0), &players).map(|h| h.0), Some(PlayerId(2)));
        // Its own shooter stands where it starts: never hit.
        assert_eq!(player_hit(&l, PlayerId(3), (5.0, 7.0), &players[..1]), None);
    }

    #[test]
    fn splash_falls_off_stops_at_the_radius_and_at_walls() {
        let world = ArenaWorld::new(MapDef::foundry());
        // Open floor in the north half of the arena.
        let target = standing(5.0, 14.0);
        let at_feet = Vec3::new(5.0, 0.05, 14.5);
        let near = splash(&world, at_feet, &target, false, false).expect("in the open");
        let farther = splash(&world, Vec3::new(5.0, 0.05, 16.0), &target, false, false).expect("within 3 m");
        assert!(near.damage > farther.damage && near.falloff > farther.falloff);
        assert!(near.kick.y > 0.0 && near.kick.length() <= KNOCKBACK_MPS);
        assert_eq!(splash(&world, Vec3::new(5.0, 0.05, 18.0), &target, false, false), None, "beyond the radius");
        let own = splash(&world, at_feet, &target, true, false).expect("own");
        assert!(own.damage < near.damage && own.kick == near.kick, "less damage, the same kick");
        let direct = splash(&world, at_feet, &target, false, true).expect("direct");
        assert_eq!(direct.damage, near.damage + DIRECT_HIT_BONUS);
        // The centre slab (z -0.8..0.8, 1.2 m high) shields a crouching player behind it.
        let mut hidden = standing(0.0, -1.4);
        hidden.input.crouched = true;
        assert_eq!(splash(&world, Vec3::new(0.0, 0.5, 1.0), &hidden, false, false), None, "behind the slab");
        let dead = Hitbox { alive: false, ..target };
        assert_eq!(splash(&world, at_feet, &dead, false, false), None);
    }

    #[test]
    fn a_rocket_at_ones_feet_is_a_rocket_jump_the_same_on_both_sides() {
        let world = ArenaWorld::new(MapDef::foundry());
        let dt = tick_dt_s(64);
        let start = PlayerState::spawned_at(Vec3::new(5.0, 0.0, 14.0), 0.0);
        let down = crate::player::view_forward(0.0, -1.2);
        let l = Launch { origin: start.eye_pos(), dir: down, tick: 0, at_s: 0.0 };
        let wall = l.wall_distance(&world);
        let boom = l.tick_reaching(wall, dt);
        let run = || {
            let (mut s, mut apex) = (start, 0.0f32);
            let mut jumped = MoveEvents::default();
            for tick in 0..120u32 {
                let buttons = if tick == boom { crate::Buttons::JUMP } else { crate::Buttons::default() };
                let cmd = UserCmd { tick, buttons, pitch: -1.2, ..Default::default() };
                let (next, events) = step_player(&s, &s, &cmd, &world, dt);
                s = next;
                jumped.jumped |= events.movement.jumped;
                if tick == boom {
                    let kick = splash(&world, l.blast_point(wall), &Hitbox::of(&s), true, false).expect("at its feet");
                    s = knock(&s, kick.kick);
                }
                apex = apex.max(s.pos.y);
            }
            (s, apex, jumped)
        };
        let (a, apex, jumped) = run();
        let (b, ..) = run();
        assert!(jumped.jumped);
        assert!(apex > 2.5, "a rocket jump lifts higher than a jump: {apex} m");
        assert_eq!(a.pos.to_array().map(f32::to_bits), b.pos.to_array().map(f32::to_bits), "bit for bit");
    }
}
