//! Shooting over real UDP on 127.0.0.1 with the link conditioner: walls,
//! lag compensation, rewinding crouch, distrust of claimed render times, and
//! what interpolation does to a remote player's motion.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{LinkConditions, LocalInput, NetcodeSettings, ThisTick};
use arena_lab::harness::{LoopbackGame, drawn_self, loopback_config, test_frame, test_frames};
use arena_server::{CombatStats, ShotLog, ShotRecord};
use arena_sim::pose::Side;
use arena_sim::{BodyPart, Buttons, HitZone, Hitbox, PlayerState};
use bevy::prelude::*;

fn game(latency_ms: f32, netcode: NetcodeSettings) -> LoopbackGame {
    let netcode = NetcodeSettings { conditions: LinkConditions { latency_ms, ..LinkConditions::OFF }, ..netcode };
    let mut game =
        LoopbackGame::start(&loopback_config(64), &netcode, 11, &["Shooter", "Target"], test_frame()).expect("joined");
    game.step(test_frames(2.0));
    game
}

/// The target as the shooter's client draws it.
fn drawn_target(game: &LoopbackGame) -> PlayerState {
    game.drawn_other(0).expect("the target is drawn")
}

fn shot_log(game: &mut LoopbackGame) -> Vec<ShotRecord> {
    game.server.world_mut().resource_mut::<ShotLog>().0.drain(..).collect()
}

/// The shooter holds the trigger at `target`'s body for `seconds`; the
/// shots the server resolved.
fn fire_at_body(game: &mut LoopbackGame, target: &PlayerState, seconds: f64) -> Vec<ShotRecord> {
    game.aim(0, Hitbox::of(target).body_center());
    game.hold_fire(0, true);
    game.step(test_frames(seconds));
    game.hold_fire(0, false);
    game.step(test_frames(0.3));
    shot_log(game)
}

#[test]
fn a_wall_stops_a_shot_that_would_hit() {
    let mut game = game(0.0, NetcodeSettings::default());
    // The centre slab (x -3.5..3.5, z -0.8..0.8, 3 m high) between them.
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 6.0), 0.0);
    game.teleport("Target", Vec3::new(0.0, 0.0, -6.0), std::f32::consts::PI);
    game.step(test_frames(0.5));
    let target = drawn_target(&game);
    assert!(target.pos.distance(Vec3::new(0.0, 0.0, -6.0)) < 0.01);
    let shots = fire_at_body(&mut game, &target, 0.5);
    assert!(shots.len() >= 3, "{} shots", shots.len());
    assert!(shots.iter().all(|s| s.hit.is_none()), "no shot went through the wall");
    // The aim itself was good: the rewound target lay on every shot's line.
    assert!(shots.iter().all(|s| Hitbox::of(&target).ray_test(s.shot.origin, s.shot.dir, 100.0).is_some()));

    // On the shooter's side of the slab, with a clear line, the same aim hits.
    game.teleport("Target", Vec3::new(10.0, 0.0, 5.0), 0.0);
    game.step(test_frames(0.5));
    let target = drawn_target(&game);
    let shots = fire_at_body(&mut game, &target, 0.3);
    assert!(!shots.is_empty() && shots.iter().all(|s| s.hit.is_some()), "clear shots hit");
}

/// Runs a strafing target for a few seconds with the shooter aiming at its
/// drawn body and firing; returns the share of hits.
fn strafe_and_shoot(game: &mut LoopbackGame, seconds: f64) -> f64 {
    game.teleport("Shooter", Vec3::new(0.0, 3.0, 21.5), 0.0);
    game.teleport("Target", Vec3::new(0.0, 0.0, 2.5), std::f32::consts::PI);
    game.step(test_frames(1.0));
    shot_log(game);
    let mut direction = 1.0f32;
    for frame in 0..test_frames(seconds) {
        if frame % test_frames(1.3) == 0 {
            direction = -direction;
        }
        {
            let mut input = game.clients[1].world_mut().resource_mut::<LocalInput>();
            input.yaw = std::f32::consts::PI;
            input.right = direction;
        }
        let target = drawn_target(game);
        game.aim(0, Hitbox::of(&target).body_center());
        game.hold_fire(0, true);
        game.keep_alive("Target");
        game.step(1);
    }
    game.hold_fire(0, false);
    game.step(test_frames(0.5));
    let shots = shot_log(game);
    assert!(shots.len() > 20, "{} shots", shots.len());
    shots.iter().filter(|s| s.hit.is_some()).count() as f64 / shots.len() as f64
}

#[test]
fn lag_compensation_hits_what_the_shooter_saw() {
    let mut with = game(200.0, NetcodeSettings::default());
    let hit_with = strafe_and_shoot(&mut with, 4.0);
    let mut without = game(200.0, NetcodeSettings { lag_compensation: false, ..NetcodeSettings::default() });
    let hit_without = strafe_and_shoot(&mut without, 4.0);
    assert!(hit_with >= 0.95, "aiming straight at what you see hits with lag compensation: {hit_with}");
    assert!(hit_without <= 0.5, "and mostly misses without it at 200 ms: {hit_without}");
}

#[test]
fn crouching_is_rewound_too() {
    let mut game = game(200.0, NetcodeSettings::default());
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 8.0), 0.0);
    game.teleport("Target", Vec3::new(8.0, 0.0, -8.0), 0.0);
    game.step(test_frames(0.5));
    // The target crouches for a second, then stands up.
    game.clients[1].world_mut().resource_mut::<LocalInput>().held = Buttons::CROUCH;
    game.step(test_frames(1.0));
    game.clients[1].world_mut().resource_mut::<LocalInput>().held = Buttons::default();
    // The moment the server has it standing again, the shooter, 200 ms behind,
    // still draws it crouched and fires at where a standing head would be.
    assert!(game.step_until(test_frames(1.0), |g| g.sim("Target").is_some_and(|s| !s.crouched)));
    assert!(drawn_target(&game).crouched, "the shooter still sees it crouched");
    let standing_head = Hitbox::of(&PlayerState { crouched: false, ..game.sim("Target").unwrap() }).head_center();
    game.aim(0, standing_head);
    game.tap_fire(0);
    game.step(test_frames(0.6));
    let shots = shot_log(&mut game);
    let shot = shots.first().expect("one shot");
    assert!(shot.tested[0].1.input.crouched, "tested as the shooter saw it: crouched");
    assert!(!shot.current[0].1.input.crouched, "though standing on the server by then");
    assert!(shot.hit.is_none(), "so the head shot at a standing height misses");
}

#[test]
fn a_claimed_render_time_far_in_the_past_is_not_believed() {
    let mut game = game(100.0, NetcodeSettings::default());
    // The shooter's client lies: it claims to see the world 5 s ago.
    game.clients[0].add_systems(
        FixedUpdate,
        (|mut this: ResMut<ThisTick>| {
            if let Some(cmd) = this.0.as_mut() {
                cmd.render_tick -= 320.0;
            }
        })
        .after(arena_client::ClientSet::Sample)
        .before(arena_client::ClientSet::Predict),
    );
    let before = game.server.world().resource::<CombatStats>().render_times_rejected;
    let hit_ratio = strafe_and_shoot(&mut game, 3.0);
    let rejected = game.server.world().resource::<CombatStats>().render_times_rejected - before;
    assert!(rejected > 20, "{rejected} claims rejected");
    // The server's own estimate of what the shooter saw is close enough.
    assert!(hit_ratio >= 0.8, "hits with the server's estimate: {hit_ratio}");
}

#[test]
fn head_shots_kill_in_two_and_the_dead_respawn() {
    let mut game = game(0.0, NetcodeSettings::default());
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 6.0), 0.0);
    game.teleport("Target", Vec3::new(10.0, 0.0, 5.0), 0.0);
    game.step(test_frames(0.5));
    for _ in 0..2 {
        let target = drawn_target(&game);
        game.aim(0, Hitbox::of(&target).head_center());
        game.tap_fire(0);
        game.step(test_frames(0.3));
    }
    let shots = shot_log(&mut game);
    assert_eq!(shots.len(), 2);
    assert!(shots.iter().all(|s| s.hit.is_some_and(|h| h.zone == HitZone::Head)), "{shots:?}");
    assert!(shots[1].hit.is_some_and(|h| h.killed), "two head shots kill");
    assert!(!game.sim("Target").unwrap().alive);
    assert!(game.step_until(test_frames(3.0), |g| g.sim("Target").is_some_and(|s| s.alive && s.health == 100)));
}

/// Largest frame-to-frame jump of the target as the shooter draws it, while
/// the target runs back and forth, with 20 snapshots a second and a little
/// jitter. (With loss, two snapshots lost in a row make interpolation
/// extrapolate and then correct by a few centimetres: the lab measures that.)
fn largest_drawn_step(interpolation: bool) -> f32 {
    let netcode = NetcodeSettings { interpolation, ..NetcodeSettings::default() };
    let config = arena_server::ServerConfig { snapshot_hz: 20, ..loopback_config(64) };
    let conditions = LinkConditions { latency_ms: 80.0, jitter_ms: 5.0, loss: 0.0 };
    let mut game = LoopbackGame::start(
        &config,
        &NetcodeSettings { conditions, ..netcode },
        5,
        &["Shooter", "Target"],
        test_frame(),
    )
    .expect("joined");
    game.step(test_frames(2.0));
    let mut last = drawn_target(&game).pos;
    let mut largest = 0.0f32;
    for frame in 0..test_frames(4.0) {
        game.clients[1].world_mut().resource_mut::<LocalInput>().right =
            if (frame / 200) % 2 == 0 { 1.0 } else { -1.0 };
        game.step(1);
        let now = drawn_target(&game).pos;
        largest = largest.max(now.distance(last));
        last = now;
    }
    largest
}

#[test]
fn interpolation_is_smooth_and_its_absence_is_jerky() {
    // At 7 m/s and 128 frames a second a frame moves 5.5 cm. Snapshots come
    // every 3.2 ticks, 50 ms: without interpolation the drawn player jumps
    // by a snapshot's worth (35 cm) and then stands still.
    let smooth = largest_drawn_step(true);
    let jerky = largest_drawn_step(false);
    assert!(smooth < 0.12, "interpolated: largest step {smooth} m");
    assert!(jerky > 0.3, "not interpolated: largest step {jerky} m");
}

/// A point on `part` of `state`'s hitboxes: `along` its axis, moved
/// `across` (right, up) of its radius as seen from `eye`.
fn point_on(state: &PlayerState, part: BodyPart, eye: Vec3, (along, across): (f32, Vec2)) -> Vec3 {
    let c = Hitbox::of(state).parts()[part.index()];
    let on_axis = c.a + (c.b - c.a) * along;
    let view = (on_axis - eye).normalize_or_zero();
    let right = view.cross(Vec3::Y).normalize_or_zero();
    let up = right.cross(view);
    on_axis + (right * across.x + up * across.y) * c.radius
}

/// Where on `part` a player at `eye` can see it (the ray there meets that
/// part first), as a player aims at the part of it in view; None if it is
/// hidden behind the others.
fn visible_on(state: &PlayerState, part: BodyPart, eye: Vec3) -> Option<(f32, Vec2)> {
    let hitbox = Hitbox::of(state);
    let offsets = [Vec2::ZERO, Vec2::new(0.0, 0.5), Vec2::new(0.0, -0.5), Vec2::new(0.5, 0.0), Vec2::new(-0.5, 0.0)];
    [0.5, 0.3, 0.7, 0.15, 0.85].into_iter().flat_map(|along| offsets.map(|across| (along, across))).find(|&at| {
        let dir = (point_on(state, part, eye, at) - eye).normalize_or_zero();
        hitbox.ray_part(eye, dir, 250.0).map(|(_, p)| p) == Some(part)
    })
}

#[test]
fn a_crouching_running_target_aiming_up_is_hit_on_the_part_aimed_at_200_ms() {
    let mut game = game(200.0, NetcodeSettings::default());
    // Both on the north side of the centre slab, 10 m apart.
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 10.0), 0.0);
    // Facing the shooter, so the arms held up are in front of the body.
    let facing = arena_sim::yaw_towards(Vec3::new(-8.0, 0.0, 6.0));
    game.teleport("Target", Vec3::new(8.0, 0.0, 4.0), facing);
    game.step(test_frames(0.5));
    let aimed = [
        BodyPart::Head,
        BodyPart::Torso,
        BodyPart::Pelvis,
        BodyPart::Thigh(Side::Left),
        BodyPart::Shin(Side::Right),
        BodyPart::UpperArm(Side::Right),
        BodyPart::Forearm(Side::Left),
        BodyPart::Thigh(Side::Right),
    ];
    let (mut hits, mut hidden) = (Vec::new(), Vec::new());
    for (i, part) in aimed.into_iter().enumerate() {
        // The target crouches, runs across the shooter's view (left, then
        // right) and looks up, the whole time, from the same place each shot.
        game.teleport("Target", Vec3::new(8.0, 0.0, 4.0), facing);
        {
            let mut input = game.clients[1].world_mut().resource_mut::<LocalInput>();
            input.held = Buttons::CROUCH;
            input.right = if i % 2 == 0 { 1.0 } else { -1.0 };
            (input.yaw, input.pitch) = (facing, 0.8);
        }
        game.step(test_frames(0.6));
        let drawn = drawn_target(&game);
        assert!(drawn.crouched && drawn.ground_speed() > 2.0 && drawn.pitch > 0.7, "{drawn:?}");
        // Aim at the part where it is in view (an arm raised in front of
        // the face hides the head's middle), where it will be drawn next
        // frame (it moves on between frames as the interpolation does).
        let eye = drawn_self(&game.clients[0]).expect("the shooter is drawn").eye_pos();
        let Some(at) = visible_on(&drawn, part, eye) else {
            hidden.push(part);
            continue;
        };
        let before = point_on(&drawn, part, eye, at);
        game.step(1);
        let now = point_on(&drawn_target(&game), part, eye, at);
        game.aim(0, now + (now - before));
        game.tap_fire(0);
        game.step(test_frames(0.6));
        let shot = shot_log(&mut game).pop().expect("the shot was resolved");
        // What the shooter's client drew at the click.
        let fired = game.clients[0]
            .world()
            .resource::<arena_client::ShotComparisons>()
            .0
            .back()
            .map(|c| c.fired.clone())
            .expect("the shot's comparison");
        let seen = fired.seen.first().expect("the target was drawn").1;
        let drawn_part = seen.ray_part(fired.shot.origin, fired.shot.dir, 250.0).map(|(_, p)| p);
        let tested_part = shot.tested[0].1.ray_part(shot.shot.origin, shot.shot.dir, 250.0).map(|(_, p)| p);
        assert!(shot.tested[0].1.input.crouched && shot.tested[0].1.input.pitch > 0.7, "rewound crouched, aiming up");
        assert_eq!(tested_part, drawn_part, "the server tested the pose the shooter drew ({part:?})");
        assert_eq!(
            shot.hit.map(|h| h.zone),
            tested_part.map(|p| p.zone()),
            "{part:?}: the verdict is that part's: {shot:?}"
        );
        hits.push((part, tested_part));
    }
    let on_aimed = hits.iter().filter(|(aimed, hit)| Some(*aimed) == *hit).count();
    assert_eq!(on_aimed, hits.len(), "each shot hit the part aimed at: {hits:?} (hidden: {hidden:?})");
    // Head, body and limbs were all shot at.
    for zone in [HitZone::Head, HitZone::Body, HitZone::Limb] {
        assert!(hits.iter().any(|(part, _)| part.zone() == zone), "{zone:?}: {hits:?} (hidden: {hidden:?})");
    }
    assert!(hits.len() >= 6, "{hits:?} (hidden: {hidden:?})");
    println!("hit on the part aimed at: {hits:?}; hidden behind other parts: {hidden:?}");
}
