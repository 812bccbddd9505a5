//! The two-view kill-cam over real UDP on 127.0.0.1 with 200 ms of fake
//! latency: a shooter kills a running target; the target's client gets its
//! death as the shooter's client drew it, soon after it sees itself die,
//! within its size budget, with the frozen shot's hitbox the one the
//! shooter's client drew and the server tested, and the server's own
//! victim beside it. Skipping it brings the respawn forward.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{KillCamFeed, LinkConditions, LocalInput, NetcodeSettings, SkipKillCam};
use arena_lab::experiments::{kill_once, part_gap};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};
use arena_protocol::kill_cam::MAX_KILL_CAM_BYTES;
use arena_server::{KILL_CAM_HOLD_S, RESPAWN_DELAY_S, ShotLog};
use arena_sim::{Buttons, Hitbox};
use bevy::prelude::*;

/// A shooter and a target with the kill-cam on, 200 ms apart, 2 s in.
fn shooter_and_target_at_200_ms(seed: u64) -> LoopbackGame {
    let netcode = NetcodeSettings {
        conditions: LinkConditions { latency_ms: 200.0, ..LinkConditions::OFF },
        kill_cam: true,
        ..NetcodeSettings::default()
    };
    let mut game = LoopbackGame::start(&loopback_config(64), &netcode, seed, &["Shooter", "Target"], test_frame())
        .expect("joined");
    game.step(test_frames(2.0));
    game
}

#[test]
fn the_kill_cam_shows_the_fatal_shot_as_the_killer_drew_and_the_server_tested_it() {
    let mut game = shooter_and_target_at_200_ms(23);
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 10.0), 0.0);
    game.teleport("Target", Vec3::new(8.0, 0.0, 4.0), 0.0);
    game.step(test_frames(1.0));
    game.server.world_mut().resource_mut::<ShotLog>().0.clear();

    // The target runs to and fro; the shooter aims at its body as drawn
    // and fires until it dies.
    let kill = kill_once(&mut game, 12.0).expect("the target died and its client got a kill-cam");
    let (cam, bytes, start_after_death_s) = (kill.cam, kill.bytes, kill.start_after_death_s);
    let shot = cam.shot.expect("a hitscan kill has its shot");

    // The server's record of the fatal shot.
    let records: Vec<_> = game.server.world().resource::<ShotLog>().0.iter().cloned().collect();
    let fatal = records.iter().find(|r| r.hit.is_some_and(|h| h.killed)).expect("the fatal shot's record");
    let target_id = game.id_of("Target").unwrap();
    let tested = fatal.tested.iter().find(|(id, _)| *id == target_id).expect("the target was tested").1;
    let server_now = fatal.current.iter().find(|(id, _)| *id == target_id).expect("the target's present").1;
    // What the shooter's client drew at the click.
    let comparisons = game.clients[0].world().resource::<arena_client::ShotComparisons>();
    let fired = comparisons
        .0
        .iter()
        .find(|c| c.fired.cmd_tick == fatal.cmd_tick)
        .map(|c| c.fired.clone())
        .expect("the shooter's client remembers the fatal shot");
    let drawn = fired.seen.iter().find(|(id, _)| *id == target_id).expect("the target was drawn").1;

    let frozen = cam.frames.last().expect("a track").victim.hitbox();
    let drawn_vs_tested = part_gap(&drawn, &tested);
    let frozen_vs_drawn = part_gap(&frozen, &drawn);
    let (gap_m, gap_ms) = cam.gap().unwrap();
    eprintln!(
        "kill-cam: {} frames every {} tick(s), {bytes} bytes; started {:.3} s after the target saw itself die; \
         frozen shot vs drawn {:.4} m, drawn vs tested {:.4} m; the server had the target {gap_m:.2} m / \
         {gap_ms:.0} ms away (cover: {})",
        cam.frames.len(),
        cam.step_ticks,
        start_after_death_s,
        frozen_vs_drawn,
        drawn_vs_tested,
        shot.server_in_cover
    );
    assert!(bytes <= 16_000, "{bytes} bytes (at most {MAX_KILL_CAM_BYTES} ever sent)");
    assert!(start_after_death_s <= 0.5, "the kill-cam started {start_after_death_s:.3} s after death");
    // The frozen shot: the server's tested hitbox itself, the one the
    // shooter's client drew (within the rewind's measured error), and its
    // frame on the wire's grids.
    assert_eq!(shot.drawn, tested, "the kill-cam shows the hitbox the server tested");
    assert!(drawn_vs_tested <= 0.01, "drawn vs tested: {drawn_vs_tested} m");
    assert!(frozen_vs_drawn <= 0.012, "the frozen frame vs drawn: {frozen_vs_drawn} m");
    assert_eq!(shot.server, server_now, "the ghost is where the server had the target");
    assert_eq!(shot.origin, fatal.shot.origin);
    assert!(cam.frames.len() >= 100, "about the last 2.5 s: {} frames", cam.frames.len());
    // 200 ms round trip plus the delay: the server had the target elsewhere.
    assert!(gap_ms > 150.0 && gap_m > 0.1, "{gap_m} m {gap_ms} ms");

    // Held dead while it plays; a skip brings the respawn to the usual delay.
    game.clients[1].world_mut().write_message(SkipKillCam);
    // (The usual delay runs from the death, which was moments ago.)
    let within_s = f64::from(RESPAWN_DELAY_S) + 0.3;
    let skipped = game.step_until(test_frames(within_s), |g| g.sim("Target").is_some_and(|s| s.alive));
    assert!(skipped, "back within {within_s} s of the skip, not after {KILL_CAM_HOLD_S} s");
}

#[test]
fn without_a_skip_the_respawn_waits_for_the_kill_cam_and_without_the_setting_it_does_not() {
    for kill_cam in [true, false] {
        let netcode = NetcodeSettings { kill_cam, ..NetcodeSettings::default() };
        let mut game =
            LoopbackGame::start(&loopback_config(64), &netcode, 5, &["Shooter", "Target"], test_frame()).expect("in");
        game.step(test_frames(1.0));
        game.teleport("Shooter", Vec3::new(0.0, 0.0, 10.0), 0.0);
        game.teleport("Target", Vec3::new(4.0, 0.0, 6.0), 0.0);
        game.step(test_frames(0.5));
        let mut frames_dead = 0usize;
        let mut died = false;
        for _ in 0..test_frames(12.0) {
            if !died {
                if let Some(target) = game.drawn_other(0) {
                    game.aim(0, Hitbox::of(&target).head_center());
                    game.hold_fire(0, true);
                }
            } else {
                game.hold_fire(0, false);
            }
            game.step(1);
            let alive = game.sim("Target").is_some_and(|s| s.alive);
            if !alive {
                died = true;
                frames_dead += 1;
            } else if died {
                break;
            }
        }
        let dead_s = frames_dead as f64 * test_frame().as_secs_f64();
        eprintln!("kill_cam {kill_cam}: dead {dead_s:.2} s");
        let expected = if kill_cam { f64::from(KILL_CAM_HOLD_S) } else { f64::from(RESPAWN_DELAY_S) };
        assert!(died && (dead_s - expected).abs() < 0.1, "dead {dead_s} s, expected {expected}");
        let got = game.clients[1].world().resource::<KillCamFeed>().received;
        assert_eq!(got > 0, kill_cam, "a kill-cam only with the setting on");
    }
}

#[test]
fn a_rocket_kill_freezes_on_the_rocket_and_the_victim_as_it_met_them() {
    let mut game = shooter_and_target_at_200_ms(29);
    game.teleport("Shooter", Vec3::new(8.0, 0.0, 14.0), std::f32::consts::FRAC_PI_2);
    // Near enough for the rocket to meet it within its catch-up (a round
    // trip and the delay at 25 m/s: about 6 m), out of its own splash.
    game.teleport("Target", Vec3::new(4.0, 0.0, 14.0), 0.0);
    let hold = |game: &mut LoopbackGame, buttons: Buttons| {
        game.clients[0].world_mut().resource_mut::<LocalInput>().held = buttons;
    };
    hold(&mut game, Buttons::ROCKET);
    game.step(test_frames(1.0));
    game.clients[1].world_mut().resource_mut::<KillCamFeed>().current = None;

    // A rocket at the target's body as drawn every second until it dies
    // and its client has the kill-cam (a direct hit kills).
    let mut cam = None;
    for frame in 0..test_frames(20.0) {
        if frame % test_frames(1.0) == 0
            && let Some(target) = game.drawn_other(0).filter(|t| t.alive)
        {
            game.aim(0, Hitbox::of(&target).body_center());
            game.clients[0].world_mut().resource_mut::<LocalInput>().press(Buttons::FIRE.union(Buttons::ROCKET));
        }
        game.step(1);
        hold(&mut game, Buttons::ROCKET);
        if let Some(feed) = &game.clients[1].world().resource::<KillCamFeed>().current {
            cam = Some(feed.cam.clone());
            break;
        }
    }
    let cam = cam.expect("a rocket killed the target and its client got a kill-cam");
    cam.validate().expect("a valid kill-cam");
    let shot = cam.shot.expect("a rocket kill has its frozen shot");
    let blast = shot.blast.expect("the frozen shot is a rocket's");
    let (gap_m, gap_ms) = cam.gap().expect("a gap");
    eprintln!(
        "rocket kill-cam: blast {blast}, {:.2} m from the victim as met; the server had it {gap_m:.2} m / \
         {gap_ms:.0} ms away",
        blast.distance(shot.drawn.body_center())
    );
    // The flight: from the launch along its line to the blast, which the
    // victim as met was within reach of.
    let along = (blast - shot.origin).normalize();
    assert!(along.dot(shot.dir) > 0.999, "the blast lies on the rocket's line");
    assert!(
        blast.distance(shot.drawn.body_center()) <= arena_sim::rocket::SPLASH_RADIUS_M + 1.0,
        "the victim as met was within the splash"
    );
    // The frozen frame is the victim as met, and the launch's eye.
    let last = cam.frames.last().expect("a track");
    assert!(part_gap(&last.victim.hitbox(), &shot.drawn) <= 0.012);
    assert!(last.killer.pos().distance(shot.origin) < 0.01);
    // At 200 ms the rocket was brought up to the time its shooter fired it
    // (about 0.25 s of flight, farther than the target): it met the victim
    // as the shooter saw it, ticks before the blast's tick.
    assert!(gap_ms > 30.0, "met {gap_ms} ms before the blast's tick");
    // The server's record of that rocket: brought up to its shooter's time
    // and exploded in the tick it was launched in, the gap the catch-up's.
    let log = game.server.world().resource::<arena_server::RocketLog>();
    let fatal = log.0.iter().find(|r| r.blast.as_ref().is_some_and(|b| b.point.distance(blast) < 0.01));
    let fatal = fatal.expect("the server's record of the fatal rocket");
    assert_eq!(fatal.blast.as_ref().map(|b| b.tick), Some(fatal.launched_tick), "met during its catch-up");
    assert!(f32::from(fatal.catch_up_ms) >= gap_ms - 16.0, "{} ms caught up, met {gap_ms} ms back", fatal.catch_up_ms);
}
