//! Server and two clients over real UDP on 127.0.0.1, headless, stepped by hand:
//! what a player of the baseline ("dumb client") game would notice.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::UdpSocket;

use std::collections::BTreeMap;
use std::time::Duration;

use arena_client::{
    Baselines, ClientStats, LastDisconnect, LinkConditions, LocalInput, LocalPlayer, NetPlayer, NetState,
    NetcodeSettings, Roster, Session,
};
use arena_lab::harness::{LoopbackGame, client_app, server_app, session, step, step_until};
use arena_protocol::snapshot::RemoteState;
use arena_server::{Roster as ServerRoster, ServerConfig, ServerPlayer, ServerStats, ServerTick, Sim};
use arena_sim::{Buttons, PlayerId, PlayerState};
use bevy::prelude::*;

const HZ: u32 = 64;

fn local_id(client: &App) -> Option<PlayerId> {
    client.world().resource::<Roster>().local_id
}

/// The server's state of the player with `id`.
fn server_state(server: &mut App, id: PlayerId) -> Option<PlayerState> {
    let entity = server.world().resource::<ServerRoster>().players.get(&id)?.entity;
    server.world().get::<Sim>(entity).map(|s| s.0)
}

/// The state a client last received for the player with `id`.
fn seen_by(client: &mut App, id: PlayerId) -> Option<PlayerState> {
    let mut query = client.world_mut().query::<(&NetPlayer, &NetState)>();
    query.iter(client.world()).find(|(p, _)| p.id == id).map(|(_, s)| s.state)
}

fn player_count(client: &mut App) -> usize {
    let mut query = client.world_mut().query::<&NetPlayer>();
    query.iter(client.world()).count()
}

/// A server with two clients, Ada and Bob, both in the game and seeing each other.
fn two_players() -> (App, App, App) {
    let (mut server, info) = server_app(HZ);
    let mut ada = client_app(HZ, info.local_addr, "Ada");
    let mut bob = client_app(HZ, info.local_addr, "Bob");
    let joined = step_until(&mut [&mut server, &mut ada, &mut bob], 5 * HZ as usize, |apps| {
        let [_, ada, bob] = apps else { return false };
        session(ada) == Session::InGame
            && session(bob) == Session::InGame
            && player_count(ada) == 2
            && player_count(bob) == 2
    });
    assert!(joined, "both clients joined within 5 s and see two players");
    (server, ada, bob)
}

#[test]
fn both_connect_and_get_distinct_ids_names_and_spawns() {
    let (mut server, mut ada, mut bob) = two_players();
    let (a, b) = (local_id(&ada).unwrap(), local_id(&bob).unwrap());
    assert_ne!(a, b);
    let names = &ada.world().resource::<Roster>().names;
    assert_eq!(names.get(&a).map(String::as_str), Some("Ada"));
    assert_eq!(names.get(&b).map(String::as_str), Some("Bob"));
    let (sa, sb) = (server_state(&mut server, a).unwrap(), server_state(&mut server, b).unwrap());
    assert!(sa.pos.distance(sb.pos) > 5.0, "spawned apart: {} and {}", sa.pos, sb.pos);
    // Each client marks its own player as local.
    let mut locals = ada.world_mut().query_filtered::<&NetPlayer, With<LocalPlayer>>();
    let local: Vec<PlayerId> = locals.iter(ada.world()).map(|p| p.id).collect();
    assert_eq!(local, vec![a]);
    let _ = &mut bob;
}

#[test]
fn commands_move_only_their_own_player_and_the_other_client_sees_it() {
    let (mut server, mut ada, mut bob) = two_players();
    let (a, b) = (local_id(&ada).unwrap(), local_id(&bob).unwrap());
    let a_start = server_state(&mut server, a).unwrap();
    let b_start = server_state(&mut server, b).unwrap();

    // Ada runs forward for one second.
    ada.world_mut().resource_mut::<LocalInput>().forward = 1.0;
    step(&mut [&mut server, &mut ada, &mut bob], HZ as usize);
    ada.world_mut().resource_mut::<LocalInput>().forward = 0.0;
    step(&mut [&mut server, &mut ada, &mut bob], HZ as usize);

    let a_now = server_state(&mut server, a).unwrap();
    let b_now = server_state(&mut server, b).unwrap();
    let moved = a_now.pos.distance(a_start.pos);
    assert!(moved > 4.0 && moved < 9.0, "Ada ran {moved} m in a second at ~7 m/s");
    assert!(b_now.pos.distance(b_start.pos) < 0.01, "Bob did not move");
    assert_eq!(a_now.ground_speed(), 0.0, "Ada stopped after letting go");

    // Both clients see Ada where the server has her.
    for (who, client) in [("Ada", &mut ada), ("Bob", &mut bob)] {
        let seen = seen_by(client, a).expect("sees Ada");
        assert!(seen.pos.distance(a_now.pos) < 0.01, "{who} sees Ada at {} but she is at {}", seen.pos, a_now.pos);
    }

    // Bob jumps: Ada sees him leave the ground.
    bob.world_mut().resource_mut::<LocalInput>().press(Buttons::JUMP);
    let mut highest = 0.0f32;
    for _ in 0..20 {
        step(&mut [&mut server, &mut ada, &mut bob], 1);
        bob.world_mut().resource_mut::<LocalInput>().held = Buttons::default();
        highest = highest.max(seen_by(&mut ada, b).unwrap().pos.y - b_start.pos.y);
    }
    assert!(highest > 0.8, "Ada saw Bob jump {highest} m");
}

#[test]
fn turning_is_what_the_tick_sends() {
    let (mut server, mut ada, mut bob) = two_players();
    let a = local_id(&ada).unwrap();
    {
        let mut input = ada.world_mut().resource_mut::<LocalInput>();
        input.yaw = 1.25;
        input.pitch = -0.5;
    }
    step(&mut [&mut server, &mut ada, &mut bob], 4);
    let s = server_state(&mut server, a).unwrap();
    // Angles travel on a grid: within half a step of what was sent.
    let half_yaw_step = std::f32::consts::PI / arena_sim::quant::YAW_STEPS as f32;
    assert!((s.yaw - 1.25).abs() <= half_yaw_step && (s.pitch + 0.5).abs() <= 1e-4, "{} {}", s.yaw, s.pitch);
}

#[test]
fn a_client_that_lost_its_baselines_gets_a_whole_snapshot_and_sees_on() {
    let (mut server, mut ada, mut bob) = two_players();
    let b = local_id(&bob).unwrap();
    let stats = |app: &App| app.world().resource::<ClientStats>().clone();
    step(&mut [&mut server, &mut ada, &mut bob], HZ as usize / 2);
    let before = stats(&ada);
    assert_eq!(before.full_snapshots, 1, "one whole snapshot on joining, deltas after");
    assert!(before.snapshots_received > 10);
    // Ada's client forgets every snapshot it kept: the next delta is
    // against one she no longer has.
    ada.world_mut().resource_mut::<Baselines>().frames.clear();
    bob.world_mut().resource_mut::<LocalInput>().forward = 1.0;
    step(&mut [&mut server, &mut ada, &mut bob], HZ as usize / 2);
    bob.world_mut().resource_mut::<LocalInput>().forward = 0.0;
    step(&mut [&mut server, &mut ada, &mut bob], HZ as usize / 2);
    let after = stats(&ada);
    assert!(after.unknown_baselines >= 1, "the delta against a lost baseline was noticed");
    assert!(after.full_snapshots >= 2, "a whole snapshot came: {after:?}");
    assert_eq!(after.bad_messages, 0);
    // And she sees Bob where he is.
    let (seen, truth) = (seen_by(&mut ada, b).unwrap(), server_state(&mut server, b).unwrap());
    assert!(seen.pos.distance(truth.pos) < 0.01, "Ada sees Bob at {} but he is at {}", seen.pos, truth.pos);
}

#[test]
fn over_a_long_lossy_round_trip_every_delta_lands_on_what_the_server_had() {
    // Eight bots fighting; Eve watches over 100 ms with jitter and 10% loss
    // each way, 32 snapshots a second.
    let config = ServerConfig {
        bind: ([127, 0, 0, 1], 0).into(),
        bots: 8,
        bot_seed: Some(3),
        snapshot_hz: 32,
        ..ServerConfig::default()
    };
    let netcode = NetcodeSettings {
        conditions: LinkConditions { latency_ms: 100.0, jitter_ms: 10.0, loss: 0.1 },
        ..NetcodeSettings::default()
    };
    let frame = Duration::from_secs_f64(1.0 / 240.0);
    let mut game = LoopbackGame::start(&config, &netcode, 5, &["Eve"], frame).expect("Eve joins");
    let eve = local_id(&game.clients[0]).unwrap();
    // What the server had after each tick, as Eve may see it.
    let mut truth: BTreeMap<u32, BTreeMap<PlayerId, RemoteState>> = BTreeMap::new();
    let (mut checked, mut moving) = (0, 0);
    for _ in 0..240 * 8 {
        game.step(1);
        let tick = game.server.world().resource::<ServerTick>().0;
        let world = game.server.world_mut();
        let mut players = world.query::<(&ServerPlayer, &Sim)>();
        let now: BTreeMap<PlayerId, RemoteState> =
            players.iter(world).map(|(p, s)| (p.id, RemoteState::of(&s.0))).collect();
        truth.insert(tick, now);
        // Whatever Eve's newest snapshot says of the others is, bit for bit,
        // what the server had at its tick.
        let client = game.clients[0].world_mut();
        let mut seen = client.query::<(&NetPlayer, &NetState)>();
        let first = truth.keys().next().copied().unwrap_or(0);
        for (player, state) in seen.iter(client).filter(|(p, s)| p.id != eve && s.tick >= first) {
            let had = truth.get(&state.tick).and_then(|t| t.get(&player.id)).expect("a tick the server ran");
            assert_eq!(&RemoteState::of(&state.state), had, "player {:?} at tick {}", player.id, state.tick);
            checked += 1;
            moving += usize::from(had.flags & RemoteState::ALIVE != 0);
        }
    }
    let stats = game.clients[0].world().resource::<ClientStats>().clone();
    assert_eq!((stats.unknown_baselines, stats.bad_messages), (0, 0), "{stats:?}");
    assert!(stats.delta_snapshots > 150, "{stats:?}");
    assert!(stats.deltas_with_motion * 10 > stats.delta_snapshots * 8, "most deltas carry players on: {stats:?}");
    // A round trip of 100 ms and the wait for the next snapshot.
    let mean_age = stats.baseline_age_ticks as f64 / stats.delta_snapshots as f64;
    assert!((6.0..16.0).contains(&mean_age), "baselines {mean_age} ticks old");
    assert!(checked > 10_000 && moving > checked / 3, "{checked} states checked, {moving} alive");
}

#[test]
fn disconnect_removes_the_player_for_everyone() {
    let (mut server, mut ada, mut bob) = two_players();
    let a = local_id(&ada).unwrap();
    ada.world_mut().trigger(arena_client::Disconnect);
    let gone = step_until(&mut [&mut server, &mut ada, &mut bob], HZ as usize, |apps| {
        let [server, _, bob] = apps else { return false };
        !server.world().resource::<ServerRoster>().players.contains_key(&a) && player_count(bob) == 1
    });
    assert!(gone, "Ada's player is gone from the server and from Bob's world within a second");
    assert_eq!(session(&ada), Session::Offline);
    assert_eq!(player_count(&mut ada), 0, "Ada's world is cleared");
    assert_eq!(ada.world().resource::<LastDisconnect>().0, None, "leaving on purpose is not an error");
}

#[test]
fn garbage_datagrams_change_nothing() {
    let (mut server, mut ada, mut bob) = two_players();
    let (a, b) = (local_id(&ada).unwrap(), local_id(&bob).unwrap());
    let server_addr = server.world().resource::<arena_server::ServerTransport>().local_addr().unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seed = 0x9e37_79b9_u32;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let before_a = server_state(&mut server, a).unwrap();
    for round in 0..50 {
        for _ in 0..20 {
            let len = (next() % 1400) as usize;
            let mut packet: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Some with netcode's packet-type prefixes, to get past the first check.
            if let Some(first) = packet.first_mut() {
                *first = (round % 8) as u8;
            }
            socket.send_to(&packet, server_addr).unwrap();
        }
        step(&mut [&mut server, &mut ada, &mut bob], 1);
    }
    assert_eq!(session(&ada), Session::InGame);
    assert_eq!(session(&bob), Session::InGame);
    let roster = server.world().resource::<ServerRoster>();
    assert_eq!(roster.players.len(), 2, "nobody joined or left");
    assert!(server_state(&mut server, a).unwrap().pos.distance(before_a.pos) < 0.01, "nobody moved");
    // And the game still works: Bob's commands still move him.
    bob.world_mut().resource_mut::<LocalInput>().forward = 1.0;
    let b_before = server_state(&mut server, b).unwrap();
    step(&mut [&mut server, &mut ada, &mut bob], 32);
    assert!(server_state(&mut server, b).unwrap().pos.distance(b_before.pos) > 1.0);
}

#[test]
fn undecodable_and_out_of_range_messages_are_dropped_or_repaired() {
    let (mut server, mut ada, mut bob) = two_players();
    let a = local_id(&ada).unwrap();
    // Garbage inside a valid connection: renet delivers it, our codec rejects it.
    {
        let mut client = ada.world_mut().resource_mut::<bevy_renet::RenetClient>();
        client.send_message(arena_protocol::channel::UNRELIABLE, vec![0xffu8; 40]);
        client.send_message(arena_protocol::channel::RELIABLE, vec![1u8, 2, 3]);
    }
    // A command full of NaN and absurd values.
    {
        let mut input = ada.world_mut().resource_mut::<LocalInput>();
        input.forward = f32::NAN;
        input.right = 1e9;
        input.yaw = f32::INFINITY;
        input.pitch = -1e9;
    }
    // Stamped with the client's next tick, so the server runs it (the client's
    // own command for that tick then counts as a duplicate).
    let next_tick = ada.world().resource::<arena_client::ClientTick>().0 + 1;
    // (On the wire's grid the axes are whole numbers, so the worst a packet
    // can say is full forward and full right at once: faster than allowed.)
    let raw = arena_sim::UserCmd {
        tick: next_tick,
        forward: 1.0,
        right: 50.0,
        yaw: f32::NAN,
        pitch: 7.0,
        buttons: Buttons(0xff),
        render_tick: f64::NAN,
        click: None,
        drawn_between: None,
    };
    let packet = arena_protocol::command_packet::CommandPacket { snapshot_ack: None, cmds: vec![raw] };
    let bytes = arena_protocol::encode(&arena_protocol::ToServer::Commands(packet.encode())).unwrap();
    ada.world_mut().resource_mut::<bevy_renet::RenetClient>().send_message(arena_protocol::channel::UNRELIABLE, bytes);
    step(&mut [&mut server, &mut ada, &mut bob], HZ as usize);

    let stats = server.world().resource::<ServerStats>().clone();
    assert!(stats.bad_messages >= 2, "{stats:?}");
    assert!(stats.repaired_commands >= 1, "{stats:?}");
    let s = server_state(&mut server, a).unwrap();
    assert!(s.pos.is_finite() && s.vel.is_finite() && s.yaw.is_finite());
    assert!(s.ground_speed() <= arena_sim::movement::MAX_GROUND_SPEED_MPS + 0.01, "never faster: {}", s.ground_speed());
    assert_eq!(session(&ada), Session::InGame, "a client sending junk is not a crash");
}

#[test]
fn joining_an_address_with_no_server_fails_with_a_clear_message() {
    // A port nobody listens on: bind one, learn its number, close it.
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut client = client_app(HZ, ([127, 0, 0, 1], port).into(), "Ada");
    let failed = step_until(&mut [&mut client], 10 * HZ as usize, |apps| session(apps[0]) == Session::Offline);
    assert!(failed, "gave up within 10 s");
    let reason = client.world().resource::<LastDisconnect>().0.clone().unwrap_or_default();
    assert!(reason.contains("No Arena server answered"), "{reason}");
}

#[test]
fn a_server_shutting_down_sends_clients_back_with_a_reason() {
    let (mut server, mut ada, mut bob) = two_players();
    server.world_mut().write_message(AppExit::Success);
    server.update();
    let back =
        step_until(&mut [&mut ada, &mut bob], HZ as usize, |apps| apps.iter().all(|c| session(c) == Session::Offline));
    assert!(back, "both clients noticed within a second");
    let reason = ada.world().resource::<LastDisconnect>().0.clone().unwrap_or_default();
    assert!(reason.contains("closed the connection"), "{reason}");
}

#[test]
fn a_server_that_vanishes_times_out() {
    let (server, mut ada, _bob) = two_players();
    drop(server);
    let back = step_until(&mut [&mut ada], 15 * HZ as usize, |apps| session(apps[0]) == Session::Offline);
    assert!(back, "gave up within 15 s");
    let reason = ada.world().resource::<LastDisconnect>().0.clone().unwrap_or_default();
    assert!(reason.contains("nothing heard"), "{reason}");
}
