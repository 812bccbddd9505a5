//! Fuzz targets of a client's reading of its server's timing: the clock
//! sync on any feedback, the interpolation history and delay on any ticks.

use arbitrary::{Arbitrary, Unstructured};
use arena_client::ClockSync;
use arena_client::interpolation::History;

use super::any::sane_state;
use crate::target::Target;

pub struct ClockSyncTarget;

impl Target for ClockSyncTarget {
    fn name(&self) -> &'static str {
        "clock_sync"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let mut sync = ClockSync::new(u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64));
        let server = u32::arbitrary(&mut u).unwrap_or(0);
        let rtt = std::time::Duration::from_millis(u.int_in_range(0..=10_000u64).unwrap_or(0));
        let mut client_tick = sync.initial_tick(server, rtt);
        while !u.is_empty() {
            // A frame's snapshots (none, one, or a slow server's batch),
            // then the one decision the game makes on them.
            for _ in 0..u.int_in_range(0..=24u8).unwrap_or(1) {
                let snapshot_tick = u32::arbitrary(&mut u).unwrap_or(0);
                let newest = Option::<u32>::arbitrary(&mut u).unwrap_or(None);
                let margin = Option::<f32>::arbitrary(&mut u).unwrap_or(None);
                sync.take_feedback(snapshot_tick, newest, margin);
            }
            let jump = sync.settle(client_tick);
            client_tick = client_tick.wrapping_add(jump);
            assert!(jump <= arena_client::MAX_JUMP_TICKS && sync.hold_ticks <= arena_client::MAX_JUMP_TICKS);
            let rate = sync.rate;
            assert!(rate.is_finite() && (rate - 1.0).abs() <= arena_client::MAX_RATE_ADJUST + 1e-9, "{rate}");
            assert!(sync.timestep().as_secs_f64() > 0.0);
        }
    }
}

pub struct InterpolationHistory;

impl Target for InterpolationHistory {
    fn name(&self) -> &'static str {
        "interp_history"
    }

    fn run(&mut self, input: &[u8]) {
        let mut u = Unstructured::new(input);
        let tick_hz = u.int_in_range(arena_sim::TICK_HZ_RANGE).unwrap_or(64);
        let mut history = History::default();
        // The adaptive delay takes what a server's ticks and our clock make
        // of each gap: anything at all from a hostile server.
        let mut delay = arena_client::InterpDelay::default();
        let interval_s = 1.0 / f64::from(tick_hz);
        let max_s = f64::from(arena_protocol::MAX_INTERP_MS) / 1000.0;
        let mut tick = u32::arbitrary(&mut u).unwrap_or(0);
        while !u.is_empty() {
            if u8::arbitrary(&mut u).unwrap_or(0).is_multiple_of(4) {
                let (now_s, need_s) = (f64::arbitrary(&mut u).unwrap_or(0.0), f64::arbitrary(&mut u).unwrap_or(0.0));
                delay.observe(now_s, need_s, interval_s);
                let d = delay.update(now_s, interval_s);
                assert!(d.is_finite() && (0.0..=max_s.max(2.0 * interval_s)).contains(&d), "delay {d}");
            } else if bool::arbitrary(&mut u).unwrap_or(true) {
                tick = tick.wrapping_add_signed(i32::from(i8::arbitrary(&mut u).unwrap_or(1)));
                history.push(tick, sane_state(&mut u), tick_hz);
                assert!(history.entries.len() <= 2 * tick_hz as usize + 2, "bounded: {}", history.entries.len());
            } else {
                let at = f64::arbitrary(&mut u).unwrap_or(0.0);
                if let Some((state, _)) = history.sample(at, tick_hz) {
                    assert!(state.pos.is_finite(), "{state:?} at {at}");
                }
            }
        }
    }
}
