//! Rockets over real UDP on 127.0.0.1 with the link conditioner: what a
//! player would notice. Every rocket we fire is drawn once, never twice,
//! and the server has every one, under loss and reordering; a rocket at
//! one's feet lifts one as predicted, with no correction, at 150 ms; the
//! server's catch-up never goes past the rewind cap; a splash hurts in the
//! open and not behind the centre slab.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{DrawnRockets, LinkConditions, LocalInput, NetcodeSettings, Prediction, RocketStats};
use arena_lab::harness::{LoopbackGame, drawn_self, loopback_config, test_frame, test_frames};
use arena_server::{RocketLog, ServerConfig};
use arena_sim::{Buttons, Hitbox, Weapon};
use bevy::prelude::*;

fn game(config: ServerConfig, conditions: LinkConditions, seed: u64) -> LoopbackGame {
    let netcode = NetcodeSettings { conditions, ..NetcodeSettings::default() };
    let mut game = LoopbackGame::start(&config, &netcode, seed, &["Shooter", "Target"], test_frame()).expect("joined");
    game.step(test_frames(1.0));
    // The shooter on open floor in the north half, the target 12 m west of it.
    game.teleport("Shooter", Vec3::new(8.0, 0.0, 14.0), std::f32::consts::FRAC_PI_2);
    game.teleport("Target", Vec3::new(-4.0, 0.0, 14.0), 0.0);
    hold(&mut game, Buttons::ROCKET);
    game.step(test_frames(1.0));
    game
}

fn hold(game: &mut LoopbackGame, buttons: Buttons) {
    game.clients[0].world_mut().resource_mut::<LocalInput>().held = buttons;
}

/// One rocket at `point`, fired by a click; the trigger let go after a frame.
fn fire_at(game: &mut LoopbackGame, point: Vec3) {
    game.aim(0, point);
    game.clients[0].world_mut().resource_mut::<LocalInput>().press(Buttons::FIRE.union(Buttons::ROCKET));
    game.step(1);
    hold(game, Buttons::ROCKET);
}

/// Whether client 0 draws one of its rockets twice (two within half a metre).
fn drawn_twice(game: &LoopbackGame) -> bool {
    let own: Vec<Vec3> =
        game.clients[0].world().resource::<DrawnRockets>().0.iter().filter(|r| r.own).map(|r| r.pos).collect();
    own.iter().enumerate().any(|(i, a)| own[i + 1..].iter().any(|b| a.distance(*b) < 0.5))
}

#[test]
fn every_rocket_is_drawn_once_and_matched_under_loss_and_reordering() {
    // 10% loss each way and 30 ms of jitter (datagrams overtake each other).
    let conditions = LinkConditions { latency_ms: 120.0, jitter_ms: 30.0, loss: 0.1 };
    let mut game = game(loopback_config(64), conditions, 11);
    let mut twice = 0;
    let rockets = 16;
    for i in 0..rockets {
        let target = game.drawn_other(0).expect("the target is drawn");
        // Alternately at the body and at the floor beside it.
        let point = if i % 2 == 0 { Hitbox::of(&target).body_center() } else { target.pos + Vec3::new(1.5, 0.0, 0.0) };
        fire_at(&mut game, point);
        for _ in 0..test_frames(0.9) {
            game.keep_alive("Target");
            game.step(1);
            twice += usize::from(drawn_twice(&game));
        }
    }
    for _ in 0..test_frames(2.5) {
        game.keep_alive("Target");
        game.step(1);
        twice += usize::from(drawn_twice(&game));
    }
    let stats = game.clients[0].world().resource::<RocketStats>().clone();
    let server = game.server.world().resource::<RocketLog>().0.len();
    assert_eq!(server, rockets, "the server fired every rocket clicked");
    assert_eq!(stats.predicted, rockets as u64, "{stats:?}");
    assert_eq!(stats.confirmed, stats.predicted, "each matched to the server's: {stats:?}");
    assert_eq!((stats.never_on_server, stats.unpredicted, stats.clicks_not_fired), (0, 0, 0), "{stats:?}");
    assert_eq!(twice, 0, "no rocket drawn twice");
    assert_eq!(stats.impact_errors_m.len(), rockets, "every blast compared: {stats:?}");
    // The other player saw them too, and none is left in flight.
    let drawn = game.clients[1].world().resource::<DrawnRockets>().0.len();
    assert_eq!(drawn, 0);
}

#[test]
fn a_rocket_jump_is_predicted_with_no_correction_at_150_ms() {
    let conditions = LinkConditions { latency_ms: 150.0, jitter_ms: 0.0, loss: 0.0 };
    let mut game = game(loopback_config(64), conditions, 5);
    let start = drawn_self(&game.clients[0]).expect("drawn");
    assert_eq!(game.sim("Shooter").map(|s| s.weapon), Some(Weapon::Rocket));
    let mispredicted = game.clients[0].world().resource::<Prediction>().mispredictions;
    // Straight down in front of the feet, and jump as it lands.
    fire_at(&mut game, start.pos + Vec3::new(-0.3, 0.0, 0.0));
    let mut apex = start.pos.y;
    for frame in 0..test_frames(1.5) {
        let jump = if (5..30).contains(&frame) { Buttons::ROCKET.union(Buttons::JUMP) } else { Buttons::ROCKET };
        hold(&mut game, jump);
        game.step(1);
        apex = apex.max(drawn_self(&game.clients[0]).expect("drawn").pos.y);
    }
    let prediction = game.clients[0].world().resource::<Prediction>();
    let log = game.server.world().resource::<RocketLog>();
    let blast = log.0.back().and_then(|r| r.blast.clone()).expect("it blew up");
    assert!(blast.point.distance(start.pos) < 1.5, "at its feet: {}", blast.point);
    assert!(apex - start.pos.y > 2.5, "a rocket jump lifts well above a jump: {} m", apex - start.pos.y);
    assert_eq!(prediction.mispredictions, mispredicted, "the server agreed to the bit: no correction");
    let health = game.sim("Shooter").expect("on the server").health;
    assert!(health < arena_sim::player::MAX_HEALTH && health > 50, "a little self-damage: {health}");
}

#[test]
fn the_catch_up_stops_at_the_rewind_cap() {
    // A 300 ms round trip against a 100 ms cap.
    let conditions = LinkConditions { latency_ms: 300.0, jitter_ms: 0.0, loss: 0.0 };
    let mut game = game(ServerConfig { max_unlag_ms: 100, ..loopback_config(64) }, conditions, 7);
    for _ in 0..3 {
        let target = game.drawn_other(0).expect("the target is drawn");
        fire_at(&mut game, Hitbox::of(&target).body_center());
        game.step(test_frames(1.0));
    }
    let log: Vec<_> = game.server.world().resource::<RocketLog>().0.iter().cloned().collect();
    assert_eq!(log.len(), 3);
    for r in &log {
        assert!(r.catch_up_ms <= 100 && r.capped, "{r:?}");
    }
    // Without the cap's bite (a 20 ms round trip) it is caught up the whole way.
    let mut near = game_with(20.0);
    let target = near.drawn_other(0).expect("the target is drawn");
    fire_at(&mut near, Hitbox::of(&target).body_center());
    near.step(test_frames(1.0));
    let r = near.server.world().resource::<RocketLog>().0.back().cloned().expect("fired");
    assert!(!r.capped && r.catch_up_ms > 10 && r.catch_up_ms < 100, "{r:?}");
}

fn game_with(latency_ms: f32) -> LoopbackGame {
    game(
        ServerConfig { max_unlag_ms: 100, ..loopback_config(64) },
        LinkConditions { latency_ms, jitter_ms: 0.0, loss: 0.0 },
        9,
    )
}

/// Hit markers the shooter's client showed.
#[derive(Resource, Default)]
struct Marked(Vec<arena_client::HitConfirmed>);

fn mark(mut hits: MessageReader<arena_client::HitConfirmed>, mut marked: ResMut<Marked>) {
    marked.0.extend(hits.read().copied());
}

#[test]
fn a_splash_hurts_in_the_open_and_not_behind_the_slab() {
    let mut game = game(loopback_config(64), LinkConditions::OFF, 3);
    game.clients[0].init_resource::<Marked>().add_systems(Update, mark);
    // In the open: at the floor a metre from the target.
    let target = game.drawn_other(0).expect("drawn");
    fire_at(&mut game, target.pos + Vec3::new(1.0, 0.0, 0.0));
    game.step(test_frames(1.0));
    let hurt = game.sim("Target").expect("on the server").health;
    assert!(hurt < arena_sim::player::MAX_HEALTH, "the splash reached it: {hurt}");
    let blast = game.server.world().resource::<RocketLog>().0.back().and_then(|r| r.blast.clone()).expect("blew up");
    assert_eq!(blast.direct, None);
    // The shooter sees its hit marker.
    let target_id = game.id_of("Target").unwrap();
    let marked = &game.clients[0].world().resource::<Marked>().0;
    assert!(marked.iter().any(|h| h.victim == target_id && !h.predicted), "{} markers", marked.len());
    assert_eq!(blast.victims.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![game.id_of("Target").unwrap()]);
    // Crouched behind the centre slab (z -0.8..0.8), the blast on its far side.
    game.teleport("Target", Vec3::new(0.0, 0.0, -1.3), 0.0);
    game.clients[1].world_mut().resource_mut::<LocalInput>().held = Buttons::CROUCH;
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 8.0), 0.0);
    game.step(test_frames(0.6));
    fire_at(&mut game, Vec3::new(0.0, 0.3, 0.81));
    game.step(test_frames(1.0));
    let blast = game.server.world().resource::<RocketLog>().0.back().and_then(|r| r.blast.clone()).expect("blew up");
    assert!(blast.point.distance(Vec3::new(0.0, 0.3, 0.85)) < 0.5, "on the slab: {}", blast.point);
    assert!(blast.point.distance(Vec3::new(0.0, 0.5, -1.3)) < 3.0, "within the radius of it");
    assert!(blast.victims.is_empty(), "the slab shields it: {blast:?}");
}
