//! Fuzz targets of a player's commands from the wire to the rules: sanitised,
//! buffered by the server, their render time judged for lag compensation,
//! and stepped through the shared movement rules.

use arbitrary::{Arbitrary, Unstructured};
use arena_server::{CommandBuffer, RewindBounds, choose_tested_tick, click_wait_ticks, render_time_tolerance_ticks};
use arena_sim::cmd::MAX_PITCH_RAD;
use arena_sim::{ArenaWorld, Buttons, Click, MapDef, step_player, tick_dt_s};

use super::any::{any_cmd, f32_any, sane_state};
use crate::target::Target;

pub struct Sanitize;

impl Target for Sanitize {
    fn name(&self) -> &'static str {
        "sanitize"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut cmd = any_cmd(&mut u);
        cmd.sanitize();
        assert!(cmd.forward.is_finite() && cmd.right.is_finite() && cmd.yaw.is_finite() && cmd.pitch.is_finite());
        assert!(cmd.forward * cmd.forward + cmd.right * cmd.right <= 1.0 + 1e-4, "{cmd:?}");
        assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&cmd.yaw), "{cmd:?}");
        assert!(cmd.pitch.abs() <= MAX_PITCH_RAD, "{cmd:?}");
        assert!(cmd.render_tick.is_finite() && cmd.render_tick >= 0.0);
        assert_eq!(cmd.buttons.0 & !Buttons::ALL.0, 0);
        if let Some(click) = cmd.click {
            assert!(cmd.held(Buttons::FIRE), "a click only with fire: {cmd:?}");
            assert!((0.0..=arena_sim::cmd::MAX_CLICK_FRACTION).contains(&click.fraction), "{cmd:?}");
            assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&click.yaw), "{cmd:?}");
            assert!(click.pitch.abs() <= MAX_PITCH_RAD, "{cmd:?}");
        }
        let once = cmd;
        assert!(!cmd.sanitize().any(), "sanitising twice changes nothing: {once:?}");
        assert_eq!(once, cmd);
    }
}

/// Offers and takes on a player's command buffer, in any order.
#[derive(Default)]
pub struct Intake;

impl Target for Intake {
    fn name(&self) -> &'static str {
        "intake"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut buffer = CommandBuffer::default();
        let max_ahead = u.int_in_range(0..=256u32).unwrap_or(64);
        let max_repeats = u.int_in_range(0..=16u32).unwrap_or(6);
        let mut server_tick = u32::arbitrary(&mut u).unwrap_or(0);
        while !u.is_empty() {
            if bool::arbitrary(&mut u).unwrap_or(false) {
                let mut cmd = any_cmd(&mut u);
                cmd.sanitize();
                if bool::arbitrary(&mut u).unwrap_or(true) {
                    // Near the server's tick, where the interesting cases are.
                    let offset = i8::arbitrary(&mut u).unwrap_or(0);
                    cmd.tick = server_tick.wrapping_add_signed(i32::from(offset));
                }
                let since = f32_any(&mut u);
                buffer.offer(cmd, server_tick, since, max_ahead);
            } else {
                server_tick = server_tick.wrapping_add(1);
                if let Some(cmd) = buffer.take(server_tick, max_repeats) {
                    assert_eq!(cmd.tick, server_tick, "the command run is stamped with its tick");
                }
            }
            assert!(buffer.queued() <= max_ahead as usize + 1, "the buffer holds at most the budget");
            let jitter = buffer.arrival_jitter_ticks();
            assert!(jitter.is_finite() && jitter >= 0.0, "jitter {jitter}");
        }
    }
}

pub struct StepPlayer {
    /// Foundry, and Yard (its jump pads and teleporters).
    worlds: [ArenaWorld; 2],
}

impl Default for StepPlayer {
    fn default() -> Self {
        let yard = MapDef::built_in("yard").unwrap_or_else(MapDef::foundry);
        Self { worlds: [ArenaWorld::new(MapDef::foundry()), ArenaWorld::new(yard)] }
    }
}

impl Target for StepPlayer {
    fn name(&self) -> &'static str {
        "step_player"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut state = sane_state(&mut u);
        // Any state before it: a click blends the two.
        let mut before = sane_state(&mut u);
        let tick_hz = u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64);
        let world = &self.worlds[usize::from(bool::arbitrary(&mut u).unwrap_or(false))];
        for _ in 0..u.int_in_range(1..=8u8).unwrap_or(1) {
            let mut cmd = any_cmd(&mut u);
            cmd.sanitize();
            let (next, events) = step_player(&before, &state, &cmd, world, tick_dt_s(tick_hz));
            if let Some(shot) = events.weapon.shot {
                assert!(shot.origin.is_finite() && shot.dir.is_finite(), "{shot:?}");
            }
            (before, state) = (state, next);
            assert!(state.pos.is_finite() && state.vel.is_finite(), "{state:?}");
        }
    }
}

pub struct RenderTime;

impl Target for RenderTime {
    fn name(&self) -> &'static str {
        "render_time"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let jitter = f32_any(&mut u);
        let tick_hz = u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64);
        let tolerance = render_time_tolerance_ticks(jitter, tick_hz);
        assert!(tolerance.is_finite() && tolerance >= 0.0);
        // A click's wait moves the floor back by at most two ticks, whatever
        // the fraction says.
        let click = Click { fraction: f32_any(&mut u), yaw: 0.0, pitch: 0.0 };
        let wait = click_wait_ticks(bool::arbitrary(&mut u).unwrap_or(true).then_some(click), tick_hz);
        assert!((0.0..=2.0).contains(&wait), "{wait} for {click:?}");
        let oldest = u32::arbitrary(&mut u).unwrap_or(0);
        let span = (oldest, oldest.saturating_add(u.int_in_range(0..=200u32).unwrap_or(80)));
        let bounds = RewindBounds {
            estimate: f64::arbitrary(&mut u).unwrap_or(0.0),
            tolerance,
            frame_allowance: f64::arbitrary(&mut u).unwrap_or(0.0),
            oldest: f64::arbitrary(&mut u).unwrap_or(0.0),
            span,
        };
        let claimed = f64::arbitrary(&mut u).unwrap_or(0.0);
        let chosen = choose_tested_tick(claimed, bounds);
        assert!(chosen.tick >= f64::from(span.0) && chosen.tick <= f64::from(span.1), "{chosen:?} outside {span:?}");
    }
}
