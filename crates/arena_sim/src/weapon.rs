//! The two weapons' rules, shared: the hitscan rifle (fire rate, magazine,
//! reload), the rocket launcher (its rate; the rocket itself is
//! `rocket.rs`) and switching between them. The server runs them for every
//! player; the client runs them for its own player to predict shots (muzzle
//! flash, tracer, rocket, sound) at once. Whether a shot hits is decided by
//! the server alone.

use glam::Vec3;

use crate::cmd::{Buttons, UserCmd};
pub use crate::player::{MAGAZINE, MAX_HEALTH};
use crate::player::{PlayerState, Weapon, view_forward};

/// Time between shots, seconds (10 shots a second).
pub const FIRE_INTERVAL_S: f32 = 0.1;
/// Time a reload takes, seconds.
pub const RELOAD_S: f32 = 1.6;
/// Farthest a shot reaches, metres.
pub const RANGE_M: f32 = 250.0;
/// Damage of a body hit: four to kill.
pub const BODY_DAMAGE: u8 = 25;
/// Damage of a head hit: two to kill.
pub const HEAD_DAMAGE: u8 = 55;
/// Damage of a rifle hit on an arm or a leg.
pub const LIMB_DAMAGE: u8 = 18;
/// Time between two rockets, seconds (the rocket itself is `rocket.rs`).
pub const ROCKET_INTERVAL_S: f32 = 0.8;
/// Time a weapon switch takes before the new weapon fires, seconds.
pub const SWITCH_S: f32 = 0.35;
/// Rounding allowance when deciding the rifle is ready, seconds.
const READY_EPSILON_S: f32 = 1.0e-6;

/// A shot: a ray from the eye along the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shot {
    pub origin: Vec3,
    pub dir: Vec3,
}

/// Where and when a clicked shot goes (see [`crate::cmd::Click`]): the ray
/// from the eye as drawn at the click, and the click's time from the start
/// of the tick, seconds (negative: during the tick before).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aim {
    pub shot: Shot,
    pub at_s: f32,
}

/// Why a weapon input was ignored (the server counts these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// Fire pressed by a dead player.
    Dead,
    /// Reload pressed with a full magazine.
    FullMagazine,
    /// Fire pressed again before the rifle could fire.
    TooSoon,
}

/// What the weapon did this tick.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WeaponEvents {
    /// A rifle shot (hitscan).
    pub shot: Option<Shot>,
    /// A rocket fired: from where, along what, and when within the tick.
    pub rocket: Option<Aim>,
    /// The other weapon came into the hands this tick.
    pub switched: bool,
    pub reload_started: bool,
    pub reloaded: bool,
    /// Fire held with an empty magazine.
    pub dry_fire: bool,
    pub ignored: Option<Ignored>,
}

/// Runs the rifle for one tick on a state whose movement for the tick is
/// done. A shot fired by a press with a [`Aim`] (a click) goes along it and
/// counts from its time; any other shot leaves the eye along the view at the
/// moment the rifle is ready.
pub fn update_weapon(s: &mut PlayerState, cmd: &UserCmd, dt_s: f32, click: Option<Aim>) -> WeaponEvents {
    let mut events = WeaponEvents::default();
    let fire = cmd.held(Buttons::FIRE);
    let reload = cmd.held(Buttons::RELOAD);
    let fire_pressed = fire && !s.fire_held;
    let reload_pressed = reload && !s.reload_held;
    s.fire_held = fire;
    s.reload_held = reload;
    if !s.alive {
        if fire_pressed {
            events.ignored = Some(Ignored::Dead);
        }
        return events;
    }

    // A switch cancels a reload and makes the new weapon wait.
    let wanted = if cmd.held(Buttons::ROCKET) { Weapon::Rocket } else { Weapon::Rifle };
    if wanted != s.weapon {
        s.weapon = wanted;
        s.reload_s = 0.0;
        s.fire_cooldown_s = s.fire_cooldown_s.max(SWITCH_S);
        events.switched = true;
    }
    if s.weapon == Weapon::Rocket {
        // The launcher has no magazine: reload does nothing.
        if fire && s.fire_cooldown_s <= READY_EPSILON_S {
            let ready_s = s.fire_cooldown_s;
            let aim = match click.filter(|_| fire_pressed) {
                Some(aim) => Aim { at_s: aim.at_s.max(ready_s), ..aim },
                None => Aim {
                    shot: Shot { origin: s.eye_pos(), dir: view_forward(s.yaw, s.pitch) },
                    at_s: if fire_pressed { ready_s.max(0.0) } else { ready_s },
                },
            };
            s.fire_cooldown_s = aim.at_s + ROCKET_INTERVAL_S;
            events.rocket = Some(aim);
        } else if fire_pressed {
            events.ignored = Some(Ignored::TooSoon);
        }
        s.fire_cooldown_s = (s.fire_cooldown_s - dt_s).max(-dt_s);
        return events;
    }

    // `fire_cooldown_s` is the time from the start of this tick until the
    // rifle is ready; below zero it has been ready for that long. A shot
    // happens at a time within the tick, and the next one can come exactly
    // the fire interval later: 10 a second whatever the tick rate.
    if s.reload_s > 0.0 {
        s.reload_s -= dt_s;
        if s.reload_s <= 0.0 {
            s.reload_s = 0.0;
            s.ammo = MAGAZINE;
            events.reloaded = true;
        }
    } else if reload_pressed {
        if s.ammo < MAGAZINE {
            s.reload_s = RELOAD_S;
            events.reload_started = true;
        } else {
            events.ignored = Some(Ignored::FullMagazine);
        }
    }

    if fire && s.reload_s == 0.0 {
        if s.ammo == 0 {
            // Pulling the trigger on an empty magazine reloads.
            events.dry_fire = true;
            s.reload_s = RELOAD_S;
            events.reload_started = true;
        } else if s.fire_cooldown_s <= READY_EPSILON_S {
            let ready_s = s.fire_cooldown_s;
            // When the shot happens: at the click, held, at the moment the
            // rifle became ready; pressed without a click, at the tick.
            let (at_s, shot) = match click.filter(|_| fire_pressed) {
                Some(aim) => (aim.at_s.max(ready_s), aim.shot),
                None => {
                    let at_s = if fire_pressed { ready_s.max(0.0) } else { ready_s };
                    (at_s, Shot { origin: s.eye_pos(), dir: view_forward(s.yaw, s.pitch) })
                }
            };
            s.ammo -= 1;
            s.fire_cooldown_s = at_s + FIRE_INTERVAL_S;
            events.shot = Some(shot);
        } else if fire_pressed {
            events.ignored = Some(Ignored::TooSoon);
        }
    }
    // At most one tick's worth of readiness is carried (so a trigger held
    // through a reload banks no burst).
    s.fire_cooldown_s = (s.fire_cooldown_s - dt_s).max(-dt_s);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armed() -> PlayerState {
        PlayerState::spawned_at(Vec3::ZERO, 0.0)
    }

    fn cmd(buttons: Buttons) -> UserCmd {
        UserCmd { buttons, ..Default::default() }
    }

    fn fire(s: &mut PlayerState, buttons: Buttons, dt_s: f32) -> WeaponEvents {
        update_weapon(s, &cmd(buttons), dt_s, None)
    }

    #[test]
    fn fires_ten_times_a_second_at_any_tick_rate() {
        for hz in [20u32, 32, 64, 128] {
            let mut s = armed();
            let shots = (0..hz).filter(|_| fire(&mut s, Buttons::FIRE, 1.0 / hz as f32).shot.is_some()).count();
            assert_eq!(shots, 10, "at {hz} Hz");
        }
    }

    #[test]
    fn a_magazine_empties_then_reloads() {
        let mut s = armed();
        let dt = 1.0 / 64.0;
        let mut shots_before_reload = 0;
        let mut reload_started_at = None;
        for tick in 0..300 {
            let e = fire(&mut s, Buttons::FIRE, dt);
            if reload_started_at.is_none() {
                shots_before_reload += usize::from(e.shot.is_some());
            }
            if e.reload_started {
                assert!(e.dry_fire, "the empty trigger starts it");
                reload_started_at.get_or_insert(tick);
            }
            if e.reloaded {
                let started = reload_started_at.expect("started");
                let took = (tick - started) as f32 * dt;
                assert!((took - RELOAD_S).abs() <= dt, "reload took {took} s");
                assert!(e.shot.is_some(), "fires again as soon as it is loaded");
                assert_eq!(s.ammo, MAGAZINE - 1);
                break;
            }
        }
        assert_eq!(shots_before_reload, usize::from(MAGAZINE));
    }

    #[test]
    fn holding_the_trigger_through_a_reload_banks_no_burst() {
        let mut s = armed();
        s.ammo = 1;
        let dt = 1.0 / 64.0;
        let shot_ticks: Vec<u32> = (0..400).filter(|_| fire(&mut s, Buttons::FIRE, dt).shot.is_some()).collect();
        assert!(shot_ticks.len() > 20);
        for pair in shot_ticks.windows(2) {
            assert!(pair[1] - pair[0] >= 6, "shots {pair:?} closer than the fire rate allows");
        }
    }

    #[test]
    fn pointless_inputs_are_ignored() {
        let mut s = armed();
        let e = fire(&mut s, Buttons::RELOAD, 1.0 / 64.0);
        assert_eq!(e.ignored, Some(Ignored::FullMagazine));
        assert!(!e.reload_started);
        let mut s = armed();
        assert!(fire(&mut s, Buttons::FIRE, 1.0 / 64.0).shot.is_some());
        fire(&mut s, Buttons::default(), 1.0 / 64.0);
        let e = fire(&mut s, Buttons::FIRE, 1.0 / 64.0);
        assert_eq!((e.shot, e.ignored), (None, Some(Ignored::TooSoon)), "tapping faster than the fire rate");
        s.alive = false;
        fire(&mut s, Buttons::default(), 1.0 / 64.0);
        assert_eq!(fire(&mut s, Buttons::FIRE, 1.0 / 64.0).ignored, Some(Ignored::Dead));
    }

    #[test]
    fn a_clicked_shot_goes_along_its_aim_and_counts_from_its_time() {
        let dt = 1.0 / 64.0;
        let mut s = armed();
        // Released long ago: ready since a tick.
        fire(&mut s, Buttons::default(), dt);
        let aim = Aim { shot: Shot { origin: Vec3::new(1.0, 2.0, 3.0), dir: Vec3::X }, at_s: -0.75 * dt };
        let e = update_weapon(&mut s, &cmd(Buttons::FIRE), dt, Some(aim));
        assert_eq!(e.shot, Some(aim.shot));
        // Ready again exactly 0.1 s after the click: 0.1 - 0.75 tick - the tick run.
        assert!((s.fire_cooldown_s - (FIRE_INTERVAL_S - 1.75 * dt)).abs() < 1e-6, "{}", s.fire_cooldown_s);
        // A held trigger's next shot is not a click: it leaves the eye.
        let mut next = None;
        for _ in 0..10 {
            next = next.or(update_weapon(&mut s, &cmd(Buttons::FIRE), dt, Some(aim)).shot);
        }
        assert_eq!(next.map(|shot| shot.origin), Some(s.eye_pos()));
    }

    #[test]
    fn clicking_as_early_as_possible_never_beats_the_fire_rate() {
        for hz in [20u32, 64, 128] {
            let dt = 1.0 / hz as f32;
            let mut s = armed();
            let mut shot_times = Vec::new();
            for tick in 0..hz * 4 {
                // A click at the very start of every other tick's interval.
                let click = Aim { shot: Shot { origin: Vec3::ZERO, dir: Vec3::X }, at_s: -dt };
                let buttons = if tick % 2 == 0 { Buttons::FIRE } else { Buttons::default() };
                if update_weapon(&mut s, &cmd(buttons), dt, Some(click)).shot.is_some() {
                    // When it went: the cooldown it left, less the interval and the tick run.
                    shot_times.push(tick as f32 * dt + s.fire_cooldown_s - FIRE_INTERVAL_S + dt);
                }
            }
            let closest = shot_times.windows(2).map(|w| w[1] - w[0]).fold(f32::MAX, f32::min);
            assert!(closest >= FIRE_INTERVAL_S - 1e-4, "{hz} Hz: shots {closest} s apart");
        }
    }

    #[test]
    fn switching_weapons_waits_and_the_launcher_fires_slowly() {
        let dt = 1.0 / 64.0;
        let mut s = armed();
        let rocket = |b: Buttons| b.union(Buttons::ROCKET);
        // Mid-reload, switch: the reload is dropped and the launcher waits.
        s.ammo = 3;
        fire(&mut s, Buttons::RELOAD, dt);
        assert!(s.reload_s > 0.0);
        let e = fire(&mut s, rocket(Buttons::FIRE), dt);
        assert!(e.switched && e.rocket.is_none() && e.shot.is_none());
        assert_eq!((s.weapon, s.reload_s), (Weapon::Rocket, 0.0));
        let mut fired_at = Vec::new();
        for tick in 1..200u32 {
            if fire(&mut s, rocket(Buttons::FIRE), dt).rocket.is_some() {
                fired_at.push(tick);
            }
        }
        assert_eq!(fired_at[0], (SWITCH_S / dt).ceil() as u32, "first rocket once the switch is done");
        for pair in fired_at.windows(2) {
            let apart = (pair[1] - pair[0]) as f32 * dt;
            assert!((apart - ROCKET_INTERVAL_S).abs() <= dt, "{apart} s apart");
        }
        assert_eq!(s.ammo, 3, "rockets do not use the rifle's rounds");
        // And back: the rifle waits for the switch too.
        let e = fire(&mut s, Buttons::FIRE, dt);
        assert!(e.switched && e.shot.is_none());
        assert_eq!(s.weapon, Weapon::Rifle);
    }

    #[test]
    fn shots_leave_the_eye_along_the_view() {
        let mut s = armed();
        s.yaw = std::f32::consts::FRAC_PI_2;
        let shot = fire(&mut s, Buttons::FIRE, 1.0 / 64.0).shot.expect("fires");
        assert_eq!(shot.origin, s.eye_pos());
        assert!(shot.dir.distance(Vec3::NEG_X) < 1e-6, "{}", shot.dir);
    }
}
