//! The adaptive interpolation delay over real UDP on 127.0.0.1 with the link
//! conditioner: a jittery, lossy link still draws a running player between
//! snapshots in nearly every frame, a clean link gets about one snapshot
//! interval, and an outage (0.5, 1.5 or 3 s) does not leave the delay long
//! behind it.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{InterpStats, LinkConditions, LocalInput, NetcodeSettings, Roster, ServerClock};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};

/// An observer and a target that runs in circles, over `conditions`.
fn game(conditions: LinkConditions, seed: u64) -> LoopbackGame {
    let netcode = NetcodeSettings { conditions, ..NetcodeSettings::default() };
    let mut game = LoopbackGame::start(&loopback_config(64), &netcode, seed, &["Observer", "Target"], test_frame())
        .expect("joined");
    game.teleport("Observer", bevy::math::Vec3::new(0.0, 0.0, 12.0), 0.0);
    game.teleport("Target", bevy::math::Vec3::new(0.0, 0.0, 6.0), 0.0);
    run(&mut game, 3.0);
    game
}

/// Steps `seconds` with the target running in a circle.
fn run(game: &mut LoopbackGame, seconds: f64) {
    for _ in 0..test_frames(seconds) {
        let mut input = game.clients[1].world_mut().resource_mut::<LocalInput>();
        input.forward = 1.0;
        input.yaw = arena_sim::cmd::wrap_angle(input.yaw + 1.5 / 128.0);
        game.step(1);
    }
}

fn delay_ms(game: &LoopbackGame) -> f64 {
    let world = game.clients[0].world();
    world.resource::<ServerClock>().delay_ms(world.resource::<Roster>().tick_rate())
}

fn drawing(game: &LoopbackGame) -> InterpStats {
    game.clients[0].world().resource::<InterpStats>().clone()
}

#[test]
fn jitter_and_loss_rarely_extrapolate() {
    let mut game = game(LinkConditions { latency_ms: 60.0, jitter_ms: 20.0, loss: 0.05 }, 3);
    let before = drawing(&game);
    run(&mut game, 20.0);
    let after = drawing(&game);
    let interpolated = after.interpolated_frames - before.interpolated_frames;
    let extrapolated = after.extrapolated_frames - before.extrapolated_frames;
    let held = after.held_frames - before.held_frames;
    let frames = interpolated + extrapolated + held;
    assert!(frames > 2000, "{frames} frames drawn");
    let share = extrapolated as f64 / frames as f64;
    eprintln!(
        "{extrapolated} of {frames} frames extrapolated ({:.2}%), delay {:.1} ms",
        share * 100.0,
        delay_ms(&game)
    );
    assert!(share < 0.01, "{extrapolated} of {frames} frames extrapolated, with a {:.1} ms delay", delay_ms(&game));
    // Not by drawing far in the past: about a snapshot interval (15.6 ms)
    // plus the ±20 ms the jitter spreads arrivals over, and no more than
    // the loss needs on top.
    let delay = delay_ms(&game);
    assert!((20.0..80.0).contains(&delay), "{delay} ms");
}

#[test]
fn a_clean_link_draws_a_snapshot_interval_behind_and_an_outage_does_not_stay() {
    for outage_s in [0.5, 1.5, 3.0] {
        outage(outage_s);
    }
}

fn outage(outage_s: f64) {
    let mut game = game(LinkConditions::OFF, 4);
    let clean: f64 = (0..128)
        .map(|_| {
            run(&mut game, 1.0 / 128.0);
            delay_ms(&game)
        })
        .sum::<f64>()
        / 128.0;
    // One snapshot interval at 64 Hz, and a frame's worth of wobble (128
    // fps): well below the two intervals (31 ms) it starts from.
    assert!(clean <= 15.6 + 9.0, "clean delay {clean} ms");
    // Nothing gets through for half a second, each way.
    let set = |game: &mut LoopbackGame, conditions: LinkConditions| {
        game.clients[0].world_mut().resource_mut::<NetcodeSettings>().conditions = conditions;
    };
    set(&mut game, LinkConditions { loss: 1.0, ..LinkConditions::OFF });
    run(&mut game, outage_s);
    set(&mut game, LinkConditions::OFF);
    let mut back_after = None;
    for frame in 0..test_frames(2.0) {
        run(&mut game, 1.0 / 128.0);
        let off = (delay_ms(&game) - clean).abs() / clean;
        match (off <= 0.1, back_after) {
            (true, None) => back_after = Some(frame),
            (false, Some(_)) => back_after = None,
            _ => {}
        }
    }
    let back_after = back_after.unwrap_or_else(|| {
        panic!("{outage_s} s outage: the delay is back within 10% of {clean} ms within 2 s, and stays")
    });
    let end = delay_ms(&game);
    assert!((end - clean).abs() <= 0.1 * clean, "{outage_s} s outage: {end} ms against {clean} ms");
    eprintln!("{outage_s} s outage: clean {clean:.1} ms; back within 10% {:.2} s after it", back_after as f64 / 128.0);
}
