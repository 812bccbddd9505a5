//! The hitscan rifle: fire rate, magazine and reload, as shared rules. The
//! server runs them for every player; the client runs them for its own player
//! to predict shots (muzzle flash, tracer, sound) at once. Whether a shot hits
//! is decided by the server alone.

use glam::Vec3;

use crate::cmd::{Buttons, UserCmd};
pub use crate::player::{MAGAZINE, MAX_HEALTH};
use crate::player::{PlayerState, view_forward};

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
/// Rounding allowance when deciding the rifle is ready, seconds.
const READY_EPSILON_S: f32 = 1.0e-6;

/// A shot: a ray from the eye along the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shot {
    pub origin: Vec3,
    pub dir: Vec3,
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
    pub shot: Option<Shot>,
    pub reload_started: bool,
    pub reloaded: bool,
    /// Fire held with an empty magazine.
    pub dry_fire: bool,
    pub ignored: Option<Ignored>,
}

/// Runs the rifle for one tick on a state whose movement for the tick is done.
pub fn update_weapon(s: &mut PlayerState, cmd: &UserCmd, dt_s: f32) -> WeaponEvents {
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

    // `fire_cooldown_s` is the time from the start of this tick until the
    // rifle is ready. It may end a tick below zero by part of a tick while the
    // trigger is held: carrying that over keeps the rate at exactly 10 a
    // second whatever the tick rate.
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
            s.ammo -= 1;
            s.fire_cooldown_s += FIRE_INTERVAL_S;
            events.shot = Some(Shot { origin: s.eye_pos(), dir: view_forward(s.yaw, s.pitch) });
        } else if fire_pressed {
            events.ignored = Some(Ignored::TooSoon);
        }
    }
    // Held, at most one tick's worth is carried (so a trigger held through a
    // reload does not bank a burst); released, nothing.
    let floor = if fire { -dt_s } else { 0.0 };
    s.fire_cooldown_s = (s.fire_cooldown_s - dt_s).max(floor);
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

    #[test]
    fn fires_ten_times_a_second_at_any_tick_rate() {
        for hz in [20u32, 32, 64, 128] {
            let mut s = armed();
            let shots =
                (0..hz).filter(|_| update_weapon(&mut s, &cmd(Buttons::FIRE), 1.0 / hz as f32).shot.is_some()).count();
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
            let e = update_weapon(&mut s, &cmd(Buttons::FIRE), dt);
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
        let shot_ticks: Vec<u32> =
            (0..400).filter(|_| update_weapon(&mut s, &cmd(Buttons::FIRE), dt).shot.is_some()).collect();
        assert!(shot_ticks.len() > 20);
        for pair in shot_ticks.windows(2) {
            assert!(pair[1] - pair[0] >= 6, "shots {pair:?} closer than the fire rate allows");
        }
    }

    #[test]
    fn pointless_inputs_are_ignored() {
        let mut s = armed();
        let e = update_weapon(&mut s, &cmd(Buttons::RELOAD), 1.0 / 64.0);
        assert_eq!(e.ignored, Some(Ignored::FullMagazine));
        assert!(!e.reload_started);
        let mut s = armed();
        assert!(update_weapon(&mut s, &cmd(Buttons::FIRE), 1.0 / 64.0).shot.is_some());
        update_weapon(&mut s, &cmd(Buttons::default()), 1.0 / 64.0);
        let e = update_weapon(&mut s, &cmd(Buttons::FIRE), 1.0 / 64.0);
        assert_eq!((e.shot, e.ignored), (None, Some(Ignored::TooSoon)), "tapping faster than the fire rate");
        s.alive = false;
        update_weapon(&mut s, &cmd(Buttons::default()), 1.0 / 64.0);
        assert_eq!(update_weapon(&mut s, &cmd(Buttons::FIRE), 1.0 / 64.0).ignored, Some(Ignored::Dead));
    }

    #[test]
    fn shots_leave_the_eye_along_the_view() {
        let mut s = armed();
        s.yaw = std::f32::consts::FRAC_PI_2;
        let shot = update_weapon(&mut s, &cmd(Buttons::FIRE), 1.0 / 64.0).shot.expect("fires");
        assert_eq!(shot.origin, s.eye_pos());
        assert!(shot.dir.distance(Vec3::NEG_X) < 1e-6, "{}", shot.dir);
    }
}
