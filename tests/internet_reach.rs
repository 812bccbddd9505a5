//! Reaching a server from anywhere, over real UDP in the dev profile
//! (overflow checks on): players sharing one address join while garbage
//! comes from it too, and a game over IPv6 plays like one over IPv4.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};

use arena_client::{NetcodeSettings, Session};
use arena_lab::harness::{
    LoopbackGame, RawClient, TEST_FPS, client_app_with, drawn_self, loopback_config, server_app_with_frame, session,
    test_frame, test_frames,
};
use arena_protocol::datagram::CONNECTION_REQUEST_BYTES;
use arena_server::{CombatStats, DropReason, ServerConfig, ServerTransport, ShotLog};
use arena_sim::rng::SplitMix64;
use arena_sim::{Hitbox, PlayerState};
use bevy::prelude::*;

const HZ: u32 = 64;

/// Connection requests of the right size and protocol whose token does not
/// open (a few bytes of a real one's token changed), as a broken or hostile
/// client behind the same address would send.
fn mangled_requests(server: SocketAddr, count: usize, noise: &mut SplitMix64) -> Vec<Vec<u8>> {
    let mut raw = RawClient::new(server, 10, 300);
    let (request, _) = raw.netcode.update(std::time::Duration::ZERO).expect("a request");
    let request = request.to_vec();
    assert_eq!(request.len(), CONNECTION_REQUEST_BYTES);
    (0..count)
        .map(|_| {
            let mut mangled = request.clone();
            for _ in 0..1 + noise.next_u64() % 4 {
                let at = CONNECTION_REQUEST_BYTES - 1 - (noise.next_u64() % 1024) as usize;
                mangled[at] ^= 1 + (noise.next_u64() % 255) as u8;
            }
            mangled
        })
        .collect()
}

#[test]
fn eight_players_behind_one_address_join_through_garbage_from_it() {
    let (mut server, info) = server_app_with_frame(&loopback_config(HZ), test_frame());
    let addr = info.local_addr;
    let mut noise = SplitMix64::new(0x5eed);
    // Ten sockets on 127.0.0.1 send ~50 mangled requests a second in all,
    // from before the players start until the end.
    let senders: Vec<UdpSocket> = (0..10).map(|_| UdpSocket::bind("127.0.0.1:0").unwrap()).collect();
    let per_frame = 50.0 / TEST_FPS;
    let mut owed = 0.0;
    let mut garbage_sent = 0usize;
    let mut send_garbage = |server: &mut App, noise: &mut SplitMix64| {
        owed += per_frame;
        while owed >= 1.0 {
            owed -= 1.0;
            let request = mangled_requests(addr, 1, noise).remove(0);
            senders[garbage_sent % senders.len()].send_to(&request, addr).unwrap();
            garbage_sent += 1;
        }
        server.update();
    };
    for _ in 0..test_frames(2.0) {
        send_garbage(&mut server, &mut noise);
    }
    let mut players: Vec<App> = (0..8)
        .map(|i| client_app_with(test_frame(), addr, &format!("Player {i}"), NetcodeSettings::default()))
        .collect();
    let mut frames = 0;
    let mut joined_at: Vec<Option<usize>> = vec![None; players.len()];
    while frames < test_frames(10.0) && joined_at.iter().any(Option::is_none) {
        send_garbage(&mut server, &mut noise);
        for (i, player) in players.iter_mut().enumerate() {
            player.update();
            if joined_at[i].is_none() && session(player) == Session::InGame {
                joined_at[i] = Some(frames);
            }
        }
        frames += 1;
    }
    let counters = server.world().resource::<ServerTransport>().guard_counters().clone();
    let seconds: Vec<f64> = joined_at.iter().map(|f| f.map_or(f64::INFINITY, |f| f as f64 / TEST_FPS)).collect();
    eprintln!(
        "{garbage_sent} mangled requests ({} refused as wrong key, {} rate limited); players in after {seconds:.2?} s",
        counters.dropped(DropReason::WrongKey),
        counters.dropped(DropReason::RateLimited) + counters.dropped(DropReason::OpensLimited),
    );
    assert!(garbage_sent >= 50 * 2, "the garbage went out ({garbage_sent})");
    assert!(counters.dropped(DropReason::WrongKey) >= 50, "the garbage reached the guard: {counters:?}");
    assert!(seconds.iter().all(|s| *s <= 2.0), "every player in within 2 s: {seconds:.2?}");
}

#[test]
fn a_game_over_ipv6_plays_like_one_over_ipv4() {
    if UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback on this machine: nothing to test");
        return;
    }
    let config = ServerConfig { bind: "[::1]:0".parse().unwrap(), ..loopback_config(HZ) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 3, &["Shooter", "Target"], test_frame())
        .expect("both joined over IPv6");
    let transport = game.server.world().resource::<ServerTransport>();
    assert!(transport.local_addr().unwrap().is_ipv6());
    // The shooter walks: its client predicts it, the server agrees.
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 12.0), std::f32::consts::PI);
    game.teleport("Target", Vec3::new(0.0, 0.0, 4.0), std::f32::consts::PI);
    game.step(test_frames(0.5));
    let start = game.sim("Shooter").expect("on the server").pos;
    game.clients[0].world_mut().resource_mut::<arena_client::LocalInput>().forward = 1.0;
    game.step(test_frames(0.5));
    game.clients[0].world_mut().resource_mut::<arena_client::LocalInput>().forward = 0.0;
    game.step(test_frames(0.5));
    let walked = game.sim("Shooter").expect("on the server").pos;
    let drawn = drawn_self(&game.clients[0]).expect("drawn").pos;
    assert!(walked.distance(start) > 1.0, "walked from {start} to {walked}");
    assert!(drawn.distance(walked) < 0.05, "drawn at {drawn}, on the server at {walked}");
    // It shoots the target as drawn; the server finds hits; the target is hurt.
    let target: PlayerState = game.drawn_other(0).expect("the target is drawn");
    game.aim(0, Hitbox::of(&target).body_center());
    game.hold_fire(0, true);
    game.step(test_frames(0.3));
    game.hold_fire(0, false);
    game.step(test_frames(0.3));
    let shots = game.server.world_mut().resource_mut::<ShotLog>().0.drain(..).collect::<Vec<_>>();
    assert!(shots.iter().any(|s| s.hit.is_some()), "{} shots, none hit", shots.len());
    let health = game.sim("Target").expect("on the server").health;
    assert!(health < arena_sim::weapon::MAX_HEALTH || !game.sim("Target").unwrap().alive, "the target was hit");
    assert!(game.server.world().resource::<CombatStats>().hits > 0);
}

#[test]
fn a_server_on_any_address_takes_players_of_both_families_on_one_port() {
    if UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback on this machine: nothing to test");
        return;
    }
    let config = ServerConfig { bind: "[::]:0".parse().unwrap(), ..loopback_config(HZ) };
    let (mut server, info) = server_app_with_frame(&config, test_frame());
    let port = info.local_addr.port();
    assert!(info.local_addr.is_ipv6(), "one IPv6 socket: {}", info.local_addr);
    let four = SocketAddr::from(([127, 0, 0, 1], port));
    let six: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let mut clients = [
        client_app_with(test_frame(), four, "Four", NetcodeSettings::default()),
        client_app_with(test_frame(), six, "Six", NetcodeSettings::default()),
    ];
    let mut frames = 0;
    while frames < test_frames(5.0) && clients.iter().any(|c| session(c) != Session::InGame) {
        server.update();
        for client in &mut clients {
            client.update();
        }
        frames += 1;
    }
    assert!(clients.iter().all(|c| session(c) == Session::InGame), "both in");
    // The server sees the IPv4 player as IPv4 (not ::ffff:127.0.0.1), and
    // the IPv6 one as IPv6.
    let server_side = server.world().resource::<bevy_renet::RenetServer>().clients_id();
    let transport = server.world().resource::<ServerTransport>();
    let mut families: Vec<bool> =
        server_side.iter().filter_map(|id| transport.client_addr(*id)).map(|a| a.is_ipv4()).collect();
    families.sort();
    assert_eq!(families, vec![false, true], "one of each family");
    // And it shares both loopbacks with the player who started it.
    assert!(info.share_addrs.contains(&four) && info.share_addrs.contains(&six), "{:?}", info.share_addrs);
}
