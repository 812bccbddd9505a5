//! Sub-tick shots over real UDP on 127.0.0.1: one scripted timeline of
//! mouse motion and clicks, in wall-clock time, played at 30, 60, 144 and
//! 300 frames a second on a shooting range, gives the server the same shots
//! (from the same eye, along the same view, rewound to the same time)
//! and the same hits; and with sub-tick shots off, the shots follow the tick.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use arena_client::{LocalInput, NetcodeSettings};
use arena_lab::harness::{LoopbackGame, drawn_self, loopback_config};
use arena_server::{LANES, ServerConfig, ShotLog, ShotRecord};
use arena_sim::{Buttons, HitZone, Hitbox, PlayerId, PlayerState, look_at};
use bevy::prelude::*;

const HZ: u32 = 64;
/// About how far behind the server's tick the shooter's client draws the
/// others (two snapshot intervals, and a little), ticks.
const DRAWN_BEHIND_TICKS: f64 = 2.3;

/// The script, in the apps' time (seconds since they started, the same in
/// every app whatever the frame rate): clicks at these times, each at the
/// target of a lane, or above it by so many metres (a miss).
const CLICKS: [(f64, usize, f32); 12] = [
    (6.10, 0, 0.0),
    (6.45, 1, 0.0),
    (6.83, 2, 1.3),
    (7.21, 3, 0.0),
    (7.64, 0, 1.2),
    (8.02, 1, 0.0),
    (8.37, 2, 0.0),
    (8.81, 3, 1.4),
    (9.16, 0, 0.0),
    (9.55, 1, 1.6),
    (9.93, 2, 0.0),
    (10.32, 3, 0.0),
];
/// The grid of a command's render time on the wire, ticks.
const RENDER_TICK_STEP: f64 = 1.0 / 256.0;
/// How long each click holds the button, seconds.
const HOLD_S: f64 = 0.04;
const END_S: f64 = 10.8;

/// The view at `t_s`, from `eye`: following the target of the next click's
/// lane as the client about draws it (so the mouse moves all the time), on
/// it or above it as that click wants.
fn view_at(t_s: f64, eye: Vec3) -> (f32, f32) {
    let &(_, lane, above_m) = CLICKS.iter().find(|c| c.0 >= t_s).unwrap_or(&CLICKS[CLICKS.len() - 1]);
    let drawn_s = (t_s * f64::from(HZ) - DRAWN_BEHIND_TICKS) / f64::from(HZ);
    let (feet, _) = LANES[lane].at(lane, drawn_s);
    let body = Hitbox::of(&PlayerState::spawned_at(feet, 0.0)).body_center();
    look_at(eye, body + Vec3::Y * above_m)
}

/// One server shot, as the test compares them.
#[derive(Debug, Clone, PartialEq)]
struct Fired {
    origin: Vec3,
    dir: Vec3,
    tested_tick: f64,
    hit: Option<(PlayerId, HitZone)>,
    clicked: bool,
}

/// Plays the script at `fps` and returns the server's shots and the eye.
fn play(fps: f64, subtick: bool) -> (Vec<Fired>, Vec3) {
    let frame = Duration::from_secs_f64(1.0 / fps);
    let config = ServerConfig { range: true, subtick, ..loopback_config(HZ) };
    // A fixed interpolation delay: the adaptive one rightly grows at low
    // frame rates (a 30 fps client reads snapshots up to 33 ms after they
    // came), and this test asks whether the clocks are frame-rate free.
    let netcode = NetcodeSettings { subtick, interp_ms: Some(31), ..NetcodeSettings::default() };
    let mut game = LoopbackGame::start(&config, &netcode, 17, &["Shooter"], frame).expect("joined");
    let clock = |game: &LoopbackGame| game.clients[0].world().resource::<Time<Real>>().elapsed_secs_f64();
    let start_s = CLICKS[0].0 - 0.5;
    assert!(clock(&game) < start_s - 2.0, "joined in time for the script");
    game.step(((start_s - clock(&game)) * fps) as usize);
    let eye = drawn_self(&game.clients[0]).expect("standing on the firing line").eye_pos();
    game.server.world_mut().resource_mut::<ShotLog>().0.clear();
    while clock(&game) < END_S {
        // Between the frame drawn last and this one: what happened, in order.
        let last = clock(&game);
        let now = last + frame.as_secs_f64();
        let mut input = game.clients[0].world_mut().resource_mut::<LocalInput>();
        for &(click, ..) in CLICKS.iter().filter(|c| (last..now).contains(&c.0)) {
            (input.yaw, input.pitch) = view_at(click, eye);
            input.press_after(Buttons::FIRE, click - last);
        }
        let held = CLICKS.iter().any(|c| (c.0..c.0 + HOLD_S).contains(&now));
        input.held = if held { Buttons::FIRE } else { Buttons::default() };
        (input.yaw, input.pitch) = view_at(now, eye);
        game.step(1);
    }
    let log: Vec<ShotRecord> = game.server.world().resource::<ShotLog>().0.iter().cloned().collect();
    let shots = log
        .iter()
        .map(|r| Fired {
            origin: r.shot.origin,
            dir: r.shot.dir,
            tested_tick: r.tested_tick,
            hit: r.hit.map(|h| (h.victim, h.zone)),
            clicked: r.click_fraction.is_some(),
        })
        .collect();
    (shots, eye)
}

#[test]
fn the_same_clicks_give_the_same_shots_at_any_frame_rate() {
    let (reference, eye) = play(300.0, true);
    assert_eq!(reference.len(), CLICKS.len(), "one shot a click: {reference:?}");
    assert!(reference.iter().all(|f| f.clicked), "every shot from its click");
    let hits: Vec<bool> = reference.iter().map(|f| f.hit.is_some()).collect();
    let aimed: Vec<bool> = CLICKS.iter().map(|c| c.2 == 0.0).collect();
    assert_eq!(hits, aimed, "the clicks on a target hit it, the others miss");
    for fps in [30.0, 60.0, 144.0] {
        let (shots, from) = play(fps, true);
        assert_eq!(from, eye, "{fps} fps: the same place on the firing line");
        assert_eq!(shots.len(), reference.len(), "{fps} fps");
        for (i, (shot, want)) in shots.iter().zip(&reference).enumerate() {
            assert!(shot.clicked, "{fps} fps, click {i}");
            // The same eye and view, to the bit.
            assert_eq!((shot.origin, shot.dir), (want.origin, want.dir), "{fps} fps, click {i}");
            // Rewound to the render time at the click, within the wire's
            // grid for it: the client's clock takes out the server's frame
            // timing (each snapshot says how late its frame sent it), and
            // the server lets a click be as old as it waited for its frame.
            let apart = (shot.tested_tick - want.tested_tick).abs();
            assert!(apart <= RENDER_TICK_STEP, "{fps} fps, click {i}: {shot:?} vs {want:?}");
            assert_eq!(shot.hit, want.hit, "{fps} fps, click {i}");
        }
    }
}

#[test]
fn without_sub_tick_shots_the_view_of_the_tick_is_used() {
    let (shots, _) = play(30.0, false);
    assert_eq!(shots.len(), CLICKS.len());
    assert!(shots.iter().all(|f| !f.clicked));
    // At 30 frames a second the tick's view trails the click's by up to a
    // frame of the mouse's motion: not the clicked direction.
    let (clicked, _) = play(30.0, true);
    let apart = shots.iter().zip(&clicked).filter(|(a, b)| a.dir.angle_between(b.dir) > 1e-3).count();
    assert!(apart > CLICKS.len() / 2, "{apart} of {} shots went elsewhere", CLICKS.len());
}
