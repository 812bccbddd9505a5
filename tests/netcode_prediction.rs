//! Prediction, reconciliation, clock sync and the command buffer, over real UDP
//! on 127.0.0.1 with the link conditioner on the client: what a player would
//! notice when the network is slow and lossy.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use arena_client::{ClientTick, LinkConditions, LocalInput, NetcodeSettings, PredictedEvents, Prediction, Session};
use arena_lab::harness::{
    TEST_FPS, client_app_with, drawn_self, loopback_config, server_app_with_frame, session, step, step_until,
    test_frame, test_frames,
};
use arena_server::{CommandBuffer, CommandStats, ServerTick, Sim};
use arena_sim::{Buttons, UserCmd};
use bevy::prelude::*;

const HZ: u32 = 64;

/// A server and one client with these conditions, joined and settled.
fn joined(conditions: LinkConditions) -> (App, App) {
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let settings = NetcodeSettings { conditions, conditioner_seed: Some(7), ..NetcodeSettings::default() };
    let mut client = client_app_with(test_frame(), info.local_addr, "Ada", settings);
    let ok = step_until(&mut [&mut server, &mut client], test_frames(5.0), |apps| session(apps[1]) == Session::InGame);
    assert!(ok, "joined within 5 s");
    // Let the clock sync settle.
    step(&mut [&mut server, &mut client], test_frames(2.0));
    (server, client)
}

fn server_sim(server: &mut App) -> Sim {
    let mut query = server.world_mut().query::<&Sim>();
    *query.single(server.world()).expect("one player")
}

fn server_stats(server: &mut App) -> CommandStats {
    let mut query = server.world_mut().query::<&CommandBuffer>();
    query.single(server.world()).expect("one player").stats
}

fn predicted_pos(client: &App) -> Vec3 {
    client.world().resource::<Prediction>().current.expect("predicting").pos
}

fn drawn_pos(client: &App) -> Vec3 {
    drawn_self(client).expect("drawn").pos
}

fn set_input(client: &mut App, forward: f32, right: f32) {
    let mut input = client.world_mut().resource_mut::<LocalInput>();
    input.forward = forward;
    input.right = right;
}

/// Runs until the player stands still on both sides and returns the distance
/// between the client's prediction and the server's state.
fn settle(server: &mut App, client: &mut App) -> f32 {
    set_input(client, 0.0, 0.0);
    client.world_mut().resource_mut::<LocalInput>().held = Buttons::default();
    step(&mut [server, client], test_frames(1.5));
    predicted_pos(client).distance(server_sim(server).pos)
}

#[test]
fn prediction_moves_the_player_at_once_and_agrees_with_the_server() {
    let latency = LinkConditions { latency_ms: 150.0, ..LinkConditions::OFF };
    let (mut server, mut client) = joined(latency);
    let start = drawn_pos(&client);
    set_input(&mut client, 1.0, 0.0);
    // Within one tick (two frames at 128 fps) the drawn player moves...
    step(&mut [&mut server, &mut client], 3);
    assert!(drawn_pos(&client).distance(start) > 0.005, "moved at once with prediction");
    // ...while the server, a round trip away, has not seen the command yet.
    assert!(server_sim(&mut server).pos.distance(start) < 1e-4);
    step(&mut [&mut server, &mut client], test_frames(2.0));
    assert!(settle(&mut server, &mut client) < 0.01, "ends where the server has it");
    assert_eq!(client.world().resource::<Prediction>().mispredictions, 0);
    assert_eq!(server_stats(&mut server).missing, 0);
}

#[test]
fn replay_after_a_correction_converges_without_a_snap() {
    let latency = LinkConditions { latency_ms: 100.0, ..LinkConditions::OFF };
    let (mut server, mut client) = joined(latency);
    set_input(&mut client, 1.0, 0.0);
    step(&mut [&mut server, &mut client], test_frames(0.5));

    // Something the client could not predict: the server moves the player 60 cm.
    let mut query = server.world_mut().query::<&mut Sim>();
    query.single_mut(server.world_mut()).expect("one player").pos.x += 0.6;

    let mut largest_step = 0.0f32;
    let mut last = drawn_pos(&client);
    for _ in 0..test_frames(1.0) {
        step(&mut [&mut server, &mut client], 1);
        let now = drawn_pos(&client);
        largest_step = largest_step.max(now.distance(last));
        last = now;
    }
    let prediction = client.world().resource::<Prediction>();
    assert!(prediction.mispredictions >= 1, "the correction was noticed");
    assert!(prediction.replays >= 1, "and the pending commands replayed");
    assert!((prediction.max_correction_m - 0.6).abs() < 0.05, "{}", prediction.max_correction_m);
    // Running moves the drawn player 7 m/s / 128 fps = 5.5 cm a frame; the
    // 60 cm correction is spread over several frames instead of one.
    assert!(largest_step < 0.25, "largest frame-to-frame step {largest_step} m: a snap");
    assert!(prediction.visual_offset.length() < 0.01, "the offset has faded after a second");
    assert!(settle(&mut server, &mut client) < 0.01);
}

#[test]
fn redundancy_covers_lost_packets() {
    let lossy = LinkConditions { latency_ms: 60.0, jitter_ms: 0.0, loss: 0.10 };
    let (mut server, mut client) = joined(lossy);
    // The head start grows to cover a lost packet only once packets are
    // seen lost (a clean link keeps it small): five seconds to learn.
    for second in 0..5 {
        set_input(&mut client, 1.0, if second % 2 == 0 { 1.0 } else { -1.0 });
        step(&mut [&mut server, &mut client], test_frames(1.0));
    }
    let before = server_stats(&mut server);
    for second in 0..10 {
        set_input(&mut client, 1.0, if second % 2 == 0 { 1.0 } else { -1.0 });
        client.world_mut().resource_mut::<LocalInput>().yaw += 0.7;
        step(&mut [&mut server, &mut client], test_frames(1.0));
    }
    let after = server_stats(&mut server);
    let transport = client.world().resource::<arena_client::transport::UdpTransport>();
    let (dropped_out, _) = transport.conditioner_drops();
    let ticks = (after.run + after.missing) - (before.run + before.missing);
    let missing = after.missing - before.missing;
    assert!(dropped_out > 30, "the conditioner dropped {dropped_out} command packets");
    assert!(missing * 200 <= ticks, "{missing} of {ticks} ticks ran without their command");
    assert!(settle(&mut server, &mut client) < 0.01);
}

/// Sends two extra commands for future ticks every tick and moves its clock on
/// by as much: a client trying to run three times faster than real time.
#[test]
fn a_slow_frame_sends_every_command_it_made() {
    let (mut server, mut client) = joined(LinkConditions::OFF);
    // The game stutters to 5 frames a second: each frame makes ~13 commands.
    let slow = Duration::from_millis(200);
    client.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(slow));
    let server_frames_per_client_frame = (slow.as_secs_f64() * TEST_FPS).round() as usize;
    let run = |server: &mut App, client: &mut App, client_frames: usize| {
        for _ in 0..client_frames {
            client.update();
            for _ in 0..server_frames_per_client_frame {
                server.update();
            }
        }
    };
    run(&mut server, &mut client, 3);
    let (before, start) = (server_stats(&mut server), server_sim(&mut server).pos);
    set_input(&mut client, 1.0, 0.0);
    run(&mut server, &mut client, 5);
    set_input(&mut client, 0.0, 0.0);
    run(&mut server, &mut client, 10);
    let after = server_stats(&mut server);
    let moved = server_sim(&mut server).pos.distance(start);
    assert!(after.run - before.run > 150, "the server ran our commands: {after:?}");
    // (The clock sync may let one or two arrive late while it learns the
    // new rhythm; a packet of the newest few alone would miss ~50.)
    assert!(after.missing - before.missing <= 2, "ticks went without their commands: {after:?}");
    assert!(moved > 4.0, "a second of running moved the player {moved} m on the server");
    let gap = predicted_pos(&client).distance(server_sim(&mut server).pos);
    assert!(gap < 0.01, "prediction and server agree within {gap} m");
}

fn cheat(mut tick: ResMut<ClientTick>, mut client: ResMut<bevy_renet::RenetClient>) {
    let cmds: Vec<UserCmd> = (0..2).map(|i| UserCmd { tick: tick.0 + i, forward: 1.0, ..Default::default() }).collect();
    let packet = arena_protocol::command_packet::CommandPacket { snapshot_ack: None, cmds };
    if let Ok(bytes) = arena_protocol::encode(&arena_protocol::ToServer::Commands(packet.encode())) {
        client.send_message(arena_protocol::channel::UNRELIABLE, bytes);
    }
    tick.0 += 2;
}

#[test]
fn a_client_sending_too_fast_gains_nothing() {
    let (mut server, mut client) = joined(LinkConditions::OFF);
    client.add_systems(FixedUpdate, cheat.after(arena_client::ClientSet::Record).run_if(in_state(Session::InGame)));
    set_input(&mut client, 1.0, 0.0);
    let start = server_sim(&mut server).pos;
    let start_tick = server.world().resource::<ServerTick>().0;
    let before = server_stats(&mut server);
    step(&mut [&mut server, &mut client], test_frames(3.0));
    let ticks = server.world().resource::<ServerTick>().0 - start_tick;
    let after = server_stats(&mut server);
    let moved = server_sim(&mut server).pos.distance(start);
    assert_eq!(
        (after.run + after.missing) - (before.run + before.missing),
        u64::from(ticks),
        "one command per tick, no more"
    );
    let limit = arena_sim::movement::MAX_GROUND_SPEED_MPS * ticks as f32 / HZ as f32;
    assert!(moved <= limit + 0.01, "moved {moved} m in {ticks} ticks; the speed limit allows {limit}");
    assert!(after.too_far_ahead > 0, "commands beyond the budget were dropped and counted");
}

#[test]
fn switching_prediction_and_reconciliation_at_run_time() {
    let conditions = LinkConditions { latency_ms: 120.0, jitter_ms: 10.0, loss: 0.02 };
    let (mut server, mut client) = joined(conditions);
    let switches =
        [(true, true), (true, false), (false, true), (false, false), (true, true), (false, true), (true, true)];
    let mut rubber_band = 0.0f32;
    for (i, (prediction, reconciliation)) in switches.into_iter().enumerate() {
        {
            let mut settings = client.world_mut().resource_mut::<NetcodeSettings>();
            settings.prediction = prediction;
            settings.reconciliation = reconciliation;
        }
        set_input(&mut client, 1.0, if i % 2 == 0 { 0.5 } else { -0.5 });
        client.world_mut().resource_mut::<LocalInput>().yaw += 1.3;
        let mut last = drawn_pos(&client);
        for _ in 0..test_frames(1.0) {
            step(&mut [&mut server, &mut client], 1);
            let now = drawn_pos(&client);
            assert!(now.is_finite());
            if prediction && !reconciliation {
                rubber_band = rubber_band.max(last.distance(now));
            }
            last = now;
        }
    }
    // Without reconciliation every snapshot pulls the player back to where the
    // server had it a round trip ago: far more than a frame's running.
    assert!(rubber_band > 0.3, "rubber-banding of {rubber_band} m a frame");
    assert!(settle(&mut server, &mut client) < 0.01, "no desync after all the switching");
}

#[derive(Resource, Default)]
struct Effects {
    jumps: usize,
    landings: usize,
}

fn count_effects(mut events: MessageReader<PredictedEvents>, mut effects: ResMut<Effects>) {
    for event in events.read() {
        effects.jumps += usize::from(event.events.movement.jumped);
        effects.landings += usize::from(event.events.movement.landed.is_some());
    }
}

#[test]
fn effects_play_once_even_when_ticks_are_replayed() {
    let latency = LinkConditions { latency_ms: 150.0, ..LinkConditions::OFF };
    let (mut server, mut client) = joined(latency);
    client.init_resource::<Effects>().add_systems(Update, count_effects);
    set_input(&mut client, 1.0, 0.0);
    client.world_mut().resource_mut::<LocalInput>().press(Buttons::JUMP);
    step(&mut [&mut server, &mut client], 2);
    client.world_mut().resource_mut::<LocalInput>().held = Buttons::default();
    // Mid-jump, force corrections (and so replays of the jump's ticks).
    for _ in 0..3 {
        step(&mut [&mut server, &mut client], test_frames(0.1));
        let mut query = server.world_mut().query::<&mut Sim>();
        query.single_mut(server.world_mut()).expect("one player").pos.z += 0.05;
    }
    step(&mut [&mut server, &mut client], test_frames(1.5));
    let replays = client.world().resource::<Prediction>().replays;
    let effects = client.world().resource::<Effects>();
    assert!(replays >= 2, "ticks were replayed {replays} times");
    assert_eq!((effects.jumps, effects.landings), (1, 1), "one jump and one landing, however often replayed");
}
