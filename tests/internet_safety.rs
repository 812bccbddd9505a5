//! Hostile datagrams, hostile clients and hostile servers, over real UDP on
//! 127.0.0.1, in the dev profile (overflow checks on): no datagram crashes
//! either side, nothing grows without bound, private games need the
//! password, and the rules hold for a client that stalls or lies.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use arena_client::{LastDisconnect, LocalInput, NetcodeSettings, Session, ThisTick};
use arena_lab::harness::{
    HostileServer, LoopbackGame, RawClient, TEST_FPS, client_app_with, client_app_with_password, loopback_config,
    server_app_with_frame, session, step, step_until, test_frame, test_frames,
};
use arena_protocol::key::Password;
use arena_protocol::snapshot::{self, Feedback, Frame, RemoteState};
use arena_protocol::{PlayerInfo, ToClient, Welcome};
use arena_server::{
    CombatStats, DropReason, GuardCounters, SILENT_CLIENT_TIMEOUT, ServerConfig, ServerTransport, ShotLog, Sim,
};
use arena_sim::{Buttons, PlayerId, PlayerState};
use bevy::prelude::*;
use bevy_renet::RenetServer;

const HZ: u32 = 64;

fn counters(server: &App) -> GuardCounters {
    server.world().resource::<ServerTransport>().guard_counters().clone()
}

fn server_addr(server: &App) -> SocketAddr {
    server.world().resource::<ServerTransport>().local_addr().unwrap()
}

fn renet_clients(server: &App) -> usize {
    server.world().resource::<RenetServer>().clients_id().len()
}

/// A deterministic stream of bytes.
struct Noise(u64);

impl Noise {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 as u8
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.byte()).collect()
    }
}

/// Every prefix byte followed by random bodies of every length 0..=1200,
/// then every packet type with an 8-byte sequence of `u64::MAX` and bodies
/// of the sizes netcode expects.
fn hostile_datagrams(seed: u64) -> Vec<Vec<u8>> {
    let mut noise = Noise(seed);
    let mut all = Vec::with_capacity(256 * 1201 + 16 * 8);
    for prefix in 0..=255u8 {
        for len in 0..=1200usize {
            let mut d = vec![prefix];
            d.extend(noise.bytes(len));
            all.push(d);
        }
    }
    for kind in 0..16u8 {
        for body in [0usize, 8, 308, 1, 100, 1300, 1024, 5] {
            let mut d = vec![kind | 0x80];
            d.extend_from_slice(&u64::MAX.to_le_bytes());
            d.extend(noise.bytes(body + 16));
            all.push(d);
        }
    }
    all
}

#[test]
fn no_datagram_from_a_pending_or_connected_address_crashes_the_server_or_drops_a_player() {
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let mut ada = client_app_with(test_frame(), info.local_addr, "Ada", NetcodeSettings::default());
    assert!(step_until(&mut [&mut server, &mut ada], test_frames(5.0), |apps| session(apps[1]) == Session::InGame));
    let addr = server_addr(&server);

    // A raw client that connects honestly, then sends garbage from its address.
    let mut connected = RawClient::new(addr, 10, 300);
    let ok = (0..test_frames(5.0)).any(|_| {
        connected.pump(test_frame());
        step(&mut [&mut server, &mut ada], 1);
        connected.netcode.is_connected()
    });
    assert!(ok, "the raw client connected");
    // Another that only ever asks to connect: its address stays pending.
    let mut pending = RawClient::new(addr, 10, 300);
    let request = pending.netcode.update(Duration::ZERO).map(|(packet, _)| packet.to_vec()).unwrap();
    let players_before = renet_clients(&server);
    assert_eq!(players_before, 2);

    let datagrams = hostile_datagrams(0xBAD5EED);
    let received_before = server.world().resource::<ServerTransport>().traffic.datagrams_in;
    let mut sent = 0u64;
    for (round, chunk) in datagrams.chunks(24).enumerate() {
        if round % 64 == 0 {
            // Ask again (as a client does while connecting): still pending.
            pending.socket.send_to(&request, addr).unwrap();
            sent += 1;
        }
        for d in chunk {
            connected.send_raw(d);
            pending.send_raw(d);
            sent += 2;
        }
        connected.pump(test_frame());
        step(&mut [&mut server, &mut ada], 1);
        assert!(
            round % 512 != 0 || server.world().resource::<ServerTransport>().pending_connections() >= 1,
            "the second address stayed pending"
        );
    }
    step(&mut [&mut server, &mut ada], test_frames(0.5));
    let received = server.world().resource::<ServerTransport>().traffic.datagrams_in - received_before;
    // The honest clients' own packets come on top of the hostile ones.
    assert!(received >= sent, "every hostile datagram reached the server: {received} of {sent}");
    let c = counters(&server);
    assert!(c.dropped_total() > datagrams.len() as u64, "dropped before netcode: {c:?}");
    assert_eq!(session(&ada), Session::InGame, "the connected player is still playing");
    assert!(connected.netcode.is_connected(), "and so is the raw client whose address sent the garbage");
    assert_eq!(renet_clients(&server), 2);
    // Ada still moves.
    let before = server_pos(&mut server);
    ada.world_mut().resource_mut::<LocalInput>().forward = 1.0;
    step(&mut [&mut server, &mut ada], test_frames(0.5));
    assert!(server_pos(&mut server).distance(before) > 1.0, "Ada still plays");
}

fn server_pos(server: &mut App) -> Vec3 {
    let mut q = server.world_mut().query::<(&arena_server::ServerPlayer, &Sim)>();
    let roster = server.world().resource::<arena_server::Roster>();
    let id = roster.players.iter().find(|(_, e)| e.name == "Ada").map(|(id, _)| *id).unwrap();
    q.iter(server.world()).find(|(p, _)| p.id == id).map(|(_, s)| s.pos).unwrap()
}

/// A client joined to a server made by hand, which has welcomed it.
fn hostile_pair() -> (HostileServer, App) {
    let mut hostile = HostileServer::bind();
    let mut client = client_app_with(test_frame(), hostile.addr(), "Ada", NetcodeSettings::default());
    let ok = (0..test_frames(5.0)).any(|_| {
        client.update();
        hostile.pump(test_frame());
        hostile.client_addr().is_some()
    });
    assert!(ok, "the client connected to the hand-made server");
    hostile.send_message(&ToClient::Welcome(Welcome {
        your_id: PlayerId(0),
        tick_hz: HZ,
        snapshot_hz: HZ,
        server_tick: 1000,
        map: arena_protocol::map_transfer::MapId::of("Foundry", arena_sim::map::FOUNDRY_RON.as_bytes()),
        players: vec![PlayerInfo {
            id: PlayerId(0),
            name: "Ada".into(),
            bot: false,
            side: arena_protocol::modes::Side::Free,
        }],
        range: false,
        subtick: true,
        mode: arena_protocol::modes::Mode::Ffa,
    }));
    let ok = (0..test_frames(2.0)).any(|_| {
        hostile.pump(test_frame());
        client.update();
        session(&client) == Session::InGame
    });
    assert!(ok, "the client is in the game");
    (hostile, client)
}

#[test]
fn no_datagram_from_its_server_crashes_a_client() {
    let (mut hostile, mut client) = hostile_pair();
    let to = hostile.client_addr().unwrap();
    let datagrams = hostile_datagrams(0xC11E47);
    for chunk in datagrams.chunks(24) {
        for d in chunk {
            hostile.send_raw(to, d);
        }
        hostile.pump(test_frame());
        client.update();
    }
    let transport = client.world().resource::<arena_client::transport::UdpTransport>();
    let dropped: u64 = transport.dropped.values().sum();
    assert!(dropped > datagrams.len() as u64 / 2, "dropped by the guard: {:?}", transport.dropped);
    assert_eq!(session(&client), Session::InGame, "still connected");
}

#[test]
fn a_hostile_servers_messages_cannot_crash_a_client() {
    let (mut hostile, mut client) = hostile_pair();
    let nan = Vec3::splat(f32::NAN);
    let state = |pos: Vec3| PlayerState { pos, ..PlayerState::spawned_at(Vec3::ZERO, 0.0) };
    let snapshot = |tick: u32, newest: Option<u32>, players: Vec<(u8, PlayerState)>| {
        let frame = Frame {
            tick,
            own: None,
            others: players.into_iter().map(|(id, s)| (PlayerId(id), RemoteState::of(&s))).collect(),
            // An item list that fits no map's (it is not drawn or predicted from).
            items: vec![arena_sim::ItemSlot { taken: Some(arena_sim::Taken { tick: 0, by: PlayerId(1) }) }; 3],
        };
        let feedback = Feedback {
            last_cmd_tick: newest,
            newest_cmd_tick: newest,
            margin_centiticks: Some(i16::MIN),
            sent_after_256ths: u16::MAX,
        };
        ToClient::Snapshot(snapshot::encode(&frame, &feedback, None))
    };
    // Snapshots no honest server sends, made with the encoder (it codes
    // any frame it is given; the client's decoder checks what it reads).
    let dishonest = |own: Option<(u8, PlayerState)>, others: Vec<(u8, RemoteState)>| {
        let frame = Frame {
            tick: 9,
            own: own.map(|(id, s)| (PlayerId(id), snapshot::OwnState::of(&s))),
            others: others.into_iter().map(|(id, s)| (PlayerId(id), s)).collect(),
            items: Vec::new(),
        };
        ToClient::Snapshot(snapshot::encode(&frame, &Feedback::default(), None))
    };
    let messages = vec![
        // Ticks at the edge of wrapping, and far from anything sane.
        snapshot(u32::MAX, Some(0), vec![(1, state(Vec3::ZERO))]),
        snapshot(0, Some(u32::MAX), vec![(1, state(Vec3::ONE))]),
        snapshot(i32::MAX as u32, Some(i32::MIN as u32), vec![(1, state(Vec3::ONE)), (2, state(Vec3::X))]),
        // The same player twice (as itself and as another); a position
        // beyond the world; an id past the player limit; a delta against a
        // snapshot never sent; garbage.
        dishonest(Some((1, state(Vec3::ZERO))), vec![(1, RemoteState::of(&state(Vec3::ONE)))]),
        dishonest(None, vec![(1, RemoteState { pos: [(1 << 25) - 1, 0, 0], ..RemoteState::of(&state(Vec3::ONE)) })]),
        dishonest(None, vec![(100, RemoteState::of(&state(Vec3::ONE)))]),
        ToClient::Snapshot({
            let (before, base) = (Frame { tick: 499, ..Frame::default() }, Frame { tick: 500, ..Frame::default() });
            let baseline = snapshot::Baseline { frame: &base, before: Some(&before), tick_hz: 64 };
            snapshot::encode(&Frame { tick: 501, ..Frame::default() }, &Feedback::default(), Some(baseline))
        }),
        ToClient::Snapshot(vec![0xFF; 37]),
        ToClient::ShotResult(arena_protocol::ShotResult {
            cmd_tick: 3,
            hit: None,
            end: nan,
            lag_compensated: true,
            tested_tick: f64::NAN,
            hitboxes: vec![],
        }),
        ToClient::Damaged { attacker: PlayerId(9), amount: 255, zone: arena_sim::HitZone::Head, from: nan },
        ToClient::Welcome(Welcome {
            your_id: PlayerId(0),
            tick_hz: 0,
            snapshot_hz: u32::MAX,
            server_tick: u32::MAX,
            map: arena_protocol::map_transfer::MapId { name: "x".repeat(1000), hash: [0; 32], bytes: u32::MAX },
            players: vec![],
            range: true,
            subtick: true,
            mode: arena_protocol::modes::Mode::Ffa,
        }),
        ToClient::Range(arena_protocol::RangeReport {
            shots: 1,
            hits: u32::MAX,
            miss: Some(arena_protocol::RangeMiss { target: PlayerId(200), right_m: nan.x, up_m: f32::MAX }),
        }),
        ToClient::Scores(vec![]),
    ];
    for message in &messages {
        hostile.send_message(message);
        hostile.pump(test_frame());
        client.update();
    }
    // A flood: thousands of shots in a frame.
    for _ in 0..20 {
        for i in 0..500u32 {
            hostile.send_message(&ToClient::ShotFired {
                shooter: PlayerId(1),
                trace: arena_protocol::ShotTrace::new(Vec3::ZERO, Vec3::new(i as f32, 1.0, 0.0)),
            });
        }
        hostile.pump(test_frame());
        client.update();
    }
    // Rockets: packed launches and blasts of any bytes (ours and others'), a
    // flood of them in a frame.
    let flood_before = client.world().resource::<arena_client::ClientStats>().flood_dropped;
    for round in 0..10u8 {
        for i in 0..300u32 {
            let bytes: Vec<u8> =
                (0..16u32).map(|k| (i.wrapping_mul(2_654_435_761) >> (k % 24)) as u8 ^ round).collect();
            let mut launch_bytes = vec![0u8];
            launch_bytes.extend(&bytes);
            let shooter = PlayerId((i % 3) as u8);
            if let Ok(launch) = arena_protocol::decode::<arena_protocol::rocket::RocketLaunch>(&bytes) {
                hostile.send_message(&ToClient::RocketFired { shooter, launch });
            }
            if let Ok(blast) = arena_protocol::decode::<arena_protocol::rocket::RocketBlast>(&bytes[..12]) {
                hostile.send_message(&ToClient::RocketExploded { owner: shooter, blast });
            }
        }
        hostile.pump(test_frame());
        client.update();
    }
    for _ in 0..test_frames(1.0) {
        hostile.pump(test_frame());
        client.update();
    }
    let rockets = client.world().resource::<arena_client::ClientRockets>();
    assert!(
        rockets.remote.len() <= arena_client::MAX_REMOTE_ROCKETS && rockets.own.len() <= arena_client::MAX_OWN_ROCKETS
    );
    let stats = client.world().resource::<arena_client::ClientStats>();
    assert!(stats.flood_dropped > flood_before, "the rocket flood was cut too");
    assert!(stats.bad_messages >= 4, "NaN, duplicates and the bad welcome were refused: {}", stats.bad_messages);
    assert!(stats.unknown_baselines >= 1, "the delta against nothing was refused");
    assert!(stats.flood_dropped > 0, "the flood was cut: {}", stats.flood_dropped);
    assert_eq!(session(&client), Session::InGame);
    let roster = client.world().resource::<arena_client::Roster>();
    assert_eq!(roster.tick_hz, HZ, "the absurd welcome changed nothing");
}

#[test]
fn a_silent_client_claiming_no_timeout_is_dropped_within_10_s() {
    let (mut server, _) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let addr = server_addr(&server);
    let mut silent = RawClient::new(addr, -1, 3600 * 24 * 365);
    let ok = (0..test_frames(5.0)).any(|_| {
        silent.pump(test_frame());
        server.update();
        silent.netcode.is_connected()
    });
    assert!(ok, "connected");
    assert_eq!(renet_clients(&server), 1);
    // From now on it sends nothing at all.
    let mut waited = 0;
    while renet_clients(&server) == 1 && waited < test_frames(30.0) {
        server.update();
        waited += 1;
    }
    let seconds = waited as f64 / TEST_FPS;
    eprintln!("the silent client was dropped after {seconds:.2} s");
    assert_eq!(renet_clients(&server), 0, "dropped");
    assert!(seconds <= SILENT_CLIENT_TIMEOUT.as_secs_f64() + 1.0 / TEST_FPS, "dropped after {seconds:.2} s of silence");
    assert_eq!(counters(&server).timed_out, 1);
}

#[test]
fn a_flood_of_connection_requests_leaves_room_for_a_real_player() {
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let addr = server_addr(&server);
    // 5000 requests with valid, self-made tokens claiming no timeout and a
    // year of life, from 250 source ports.
    let sockets: Vec<UdpSocket> = (0..250).map(|_| UdpSocket::bind("127.0.0.1:0").unwrap()).collect();
    let mut sent = 0;
    for batch in 0..20 {
        for socket in &sockets {
            let mut attacker = RawClient::new(addr, -1, 3600 * 24 * 365);
            let (packet, _) = attacker.netcode.update(Duration::ZERO).unwrap();
            socket.send_to(packet, addr).unwrap();
            sent += 1;
            if sent % 50 == 0 {
                server.update();
            }
        }
        let _ = batch;
    }
    assert_eq!(sent, 5000);
    server.update();
    let flood = counters(&server);
    // Cut by the budget of tokens that open, or the one of requests to open.
    let limited = flood.dropped(DropReason::RateLimited) + flood.dropped(DropReason::OpensLimited);
    assert!(limited > 4000, "{flood:?}");
    let pending = server.world().resource::<ServerTransport>().pending_connections();
    assert!(pending <= 64, "{pending} pending");
    // Now a real player joins.
    let mut ada = client_app_with(test_frame(), info.local_addr, "Ada", NetcodeSettings::default());
    let mut waited = 0;
    while session(&ada) != Session::InGame && waited < test_frames(10.0) {
        step(&mut [&mut server, &mut ada], 1);
        waited += 1;
    }
    let seconds = waited as f64 / TEST_FPS;
    eprintln!("after 5000 requests ({limited} rate-limited, {pending} pending) a player joined in {seconds:.2} s");
    assert_eq!(session(&ada), Session::InGame);
    assert!(seconds <= 2.0, "joined after {seconds:.2} s");
}

fn private_server(password: &str) -> (App, SocketAddr) {
    let config = ServerConfig { password: Password::new(password).unwrap(), ..loopback_config(HZ) };
    let (server, info) = server_app_with_frame(&config, test_frame());
    (server, info.local_addr)
}

fn try_join(server: &mut App, addr: SocketAddr, password: &str) -> (Session, Option<String>, App) {
    let mut client = client_app_with_password(
        test_frame(),
        addr,
        "Ada",
        NetcodeSettings::default(),
        Password::new(password).unwrap(),
    );
    step_until(&mut [server, &mut client], test_frames(10.0), |apps| session(apps[1]) != Session::Connecting);
    let reason = client.world().resource::<LastDisconnect>().0.clone();
    (session(&client), reason, client)
}

#[test]
fn a_private_game_refuses_a_wrong_password_with_a_message_and_takes_the_right_one() {
    let (mut server, addr) = private_server("swordfish");
    let (state, reason, _) = try_join(&mut server, addr, "sword");
    assert_eq!(state, Session::Offline);
    assert!(reason.as_deref().unwrap_or_default().contains("wrong password"), "{reason:?}");
    let (state, reason, _) = try_join(&mut server, addr, "");
    assert_eq!(state, Session::Offline);
    assert!(reason.as_deref().unwrap_or_default().contains("needs a password"), "{reason:?}");
    assert!(counters(&server).dropped(DropReason::WrongKey) >= 2);
    assert_eq!(renet_clients(&server), 0, "nobody without the password became even pending");

    let (state, _, mut ada) = try_join(&mut server, addr, "swordfish");
    assert_eq!(state, Session::InGame);
    let before = server_pos(&mut server);
    ada.world_mut().resource_mut::<LocalInput>().forward = 1.0;
    step(&mut [&mut server, &mut ada], test_frames(0.5));
    assert!(server_pos(&mut server).distance(before) > 1.0, "the right password plays");

    // And a password given to an open game is refused with its own message.
    let (mut open, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let (state, reason, _) = try_join(&mut open, info.local_addr, "swordfish");
    assert_eq!(state, Session::Offline);
    assert!(reason.as_deref().unwrap_or_default().contains("has no password"), "{reason:?}");
}

/// A renet packet with zero-length reliable messages: `count` of them from
/// message id `first` on.
fn zero_length_reliable(sequence: u64, first: u64, count: u16) -> Vec<u8> {
    let mut buf = vec![0u8; 1400];
    let mut o = octets::OctetsMut::with_slice(&mut buf);
    o.put_u8(0).unwrap();
    o.put_varint(sequence).unwrap();
    o.put_u8(arena_protocol::channel::RELIABLE).unwrap();
    o.put_u16(count).unwrap();
    for i in 0..u64::from(count) {
        o.put_varint(first + i).unwrap();
        o.put_varint(0).unwrap();
    }
    let len = o.off();
    buf.truncate(len);
    buf
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

#[test]
fn zero_length_reliable_messages_after_a_gap_do_not_grow_the_server() {
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let mut ada = client_app_with(test_frame(), info.local_addr, "Ada", NetcodeSettings::default());
    assert!(step_until(&mut [&mut server, &mut ada], test_frames(5.0), |apps| session(apps[1]) == Session::InGame));
    let mut attacker = RawClient::new(server_addr(&server), 10, 300);
    assert!((0..test_frames(5.0)).any(|_| {
        attacker.pump(test_frame());
        server.update();
        attacker.netcode.is_connected()
    }));
    step(&mut [&mut server, &mut ada], test_frames(0.5));
    let before = resident_bytes();
    // A million empty messages after a gap of ten in the ids, 200 a packet.
    let mut id = 10u64;
    for packet in 0..5000u64 {
        attacker.send_payload(&zero_length_reliable(packet, id, 200));
        id += 200;
        if packet % 8 == 0 {
            attacker.pump(test_frame());
            step(&mut [&mut server, &mut ada], 1);
        }
    }
    step(&mut [&mut server, &mut ada], test_frames(1.0));
    let grown = resident_bytes().saturating_sub(before);
    eprintln!("resident memory grew by {} KiB", grown >> 10);
    assert!(grown < 16 << 20, "the server grew by {} MiB", grown >> 20);
    let c = counters(&server);
    let refused = c.dropped(DropReason::Payload(arena_protocol::payload_guard::PayloadReject::EmptyMessage))
        + c.dropped(DropReason::Payload(arena_protocol::payload_guard::PayloadReject::OutOfWindow));
    assert!(refused >= 1, "the guard refused them: {c:?}");
    assert_eq!(c.disconnected_for_bad_messages, 1, "and disconnected the sender");
    assert_eq!(session(&ada), Session::InGame);
}

#[test]
fn a_stalled_client_stops_moving_and_firing_within_half_a_second() {
    let mut game = LoopbackGame::start(&loopback_config(HZ), &NetcodeSettings::default(), 3, &["Ada"], test_frame())
        .expect("joined");
    game.step(test_frames(1.0));
    {
        let mut input = game.clients[0].world_mut().resource_mut::<LocalInput>();
        input.forward = 1.0;
        input.held = Buttons::FIRE;
    }
    game.step(test_frames(1.0));
    let shots_before_stall = game.server.world().resource::<CombatStats>().shots;
    assert!(shots_before_stall > 3, "firing and running before the stall");
    // The client's commands stop reaching the server (its link goes dead).
    game.clients[0].world_mut().resource_mut::<NetcodeSettings>().conditions =
        arena_client::LinkConditions { loss: 1.0, ..arena_client::LinkConditions::OFF };
    game.clients[0].update();
    let mut still_at = None;
    let mut last_pos = game.sim("Ada").unwrap().pos;
    let mut last_shots = game.server.world().resource::<CombatStats>().shots;
    for f in 0..test_frames(2.0) {
        game.server.update();
        let pos = game.sim("Ada").unwrap().pos;
        let shots = game.server.world().resource::<CombatStats>().shots;
        let quiet = pos.distance(last_pos) < 1e-4 && shots == last_shots;
        if !quiet {
            still_at = None;
        } else if still_at.is_none() {
            still_at = Some(f);
        }
        last_pos = pos;
        last_shots = shots;
    }
    let stopped_after = still_at.expect("it stopped") as f64 / TEST_FPS;
    eprintln!("the stalled player stopped moving and firing {stopped_after:.3} s after its link died");
    assert!(stopped_after <= 0.5, "stopped moving and firing {stopped_after:.2} s after its commands stopped");
    let player = game.player("Ada").unwrap();
    let neutral = game.server.world().get::<arena_server::CommandBuffer>(player).unwrap().stats.neutral;
    assert!(neutral > 0);
}

#[test]
fn a_claimed_render_time_300_ms_older_than_the_estimate_is_not_believed() {
    let mut game = LoopbackGame::start(
        &loopback_config(HZ),
        &NetcodeSettings {
            conditions: arena_client::LinkConditions { latency_ms: 100.0, ..Default::default() },
            ..Default::default()
        },
        5,
        &["Shooter", "Target"],
        test_frame(),
    )
    .expect("joined");
    game.step(test_frames(2.0));
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 8.0), 0.0);
    game.teleport("Target", Vec3::new(0.0, 0.0, 0.0), std::f32::consts::PI);
    game.step(test_frames(1.0));
    // The shooter's client claims to see the world 300 ms further back than it does.
    let back_ticks = 0.3 * f64::from(HZ);
    game.clients[0].add_systems(
        FixedUpdate,
        (move |mut this: ResMut<ThisTick>| {
            if let Some(cmd) = this.0.as_mut() {
                cmd.render_tick -= back_ticks;
            }
        })
        .after(arena_client::ClientSet::Sample)
        .before(arena_client::ClientSet::Predict),
    );
    game.server.world_mut().resource_mut::<ShotLog>().0.clear();
    let rejected_before = game.server.world().resource::<CombatStats>().render_times_rejected;
    for _ in 0..10 {
        game.keep_alive("Target");
        game.clients[0].world_mut().resource_mut::<LocalInput>().press(Buttons::FIRE);
        game.step(test_frames(0.25));
    }
    game.step(test_frames(0.5));
    let log: Vec<_> = game.server.world_mut().resource_mut::<ShotLog>().0.drain(..).collect();
    let rejected = game.server.world().resource::<CombatStats>().render_times_rejected - rejected_before;
    assert!(log.len() >= 8, "{} shots", log.len());
    assert_eq!(rejected as usize, log.len(), "no claim 300 ms off was believed");
    for shot in &log {
        assert!((shot.tested_tick - shot.claimed_tick).abs() > back_ticks * 0.8, "{shot:?}");
    }
}

#[test]
fn names_that_pose_as_bots_or_look_like_a_players_are_refused_with_a_reason() {
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let mut ada = client_app_with(test_frame(), info.local_addr, "Ada", NetcodeSettings::default());
    assert!(step_until(&mut [&mut server, &mut ada], test_frames(5.0), |apps| session(apps[1]) == Session::InGame));
    for (name, expected) in [("Eve (bot)", "poses as a bot"), ("\u{0410}da", "looks too much like \"Ada\"")] {
        let mut impostor = client_app_with(test_frame(), info.local_addr, name, NetcodeSettings::default());
        let out = step_until(&mut [&mut server, &mut ada, &mut impostor], test_frames(5.0), |apps| {
            session(apps[2]) == Session::Offline
        });
        assert!(out, "{name} was sent away");
        let reason = impostor.world().resource::<LastDisconnect>().0.clone().unwrap_or_default();
        assert!(reason.contains(expected), "{name}: {reason}");
    }
    // Invisible characters are removed: "A\u{200B}da" becomes "Ada", a plain
    // duplicate, and is numbered rather than refused.
    let mut twin = client_app_with(test_frame(), info.local_addr, "A\u{200B}da", NetcodeSettings::default());
    assert!(step_until(&mut [&mut server, &mut ada, &mut twin], test_frames(5.0), |apps| session(apps[2])
        == Session::InGame));
    let names: Vec<String> =
        server.world().resource::<arena_server::Roster>().players.values().map(|e| e.name.clone()).collect();
    assert!(names.contains(&"Ada 2".to_string()), "{names:?}");
    assert_eq!(server.world().resource::<arena_server::ServerStats>().names_refused, 2);
}

#[test]
fn bots_and_clients_together_never_exceed_the_player_limit() {
    let over = arena_protocol::MAX_PLAYERS - 16 + 1;
    let config = ServerConfig { bots: over, max_clients: 16, ..loopback_config(HZ) };
    let mut app = App::new();
    app.add_plugins(MinimalPlugins);
    let refused = arena_server::add_server(&mut app, &config).map(|_| ()).unwrap_err().to_string();
    assert!(refused.contains("more than the 64 players"), "{refused}");
    // Exactly at the limit is allowed.
    let config = ServerConfig { bots: over - 1, max_clients: 16, ..loopback_config(HZ) };
    let mut app = App::new();
    app.add_plugins(MinimalPlugins);
    assert!(arena_server::add_server(&mut app, &config).is_ok());
}
