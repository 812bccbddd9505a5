//! Server queries (A2S) over real UDP on 127.0.0.1: what a server browser or
//! a tracker sees of a running server, and what a flood of queries gets out
//! of it.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use arena_client::Session;
use arena_client::browser::{ServerBrowser, Status};
use arena_lab::harness::{client_app, loopback_config, server_app_with_frame, session, step, step_until, tick};
use arena_protocol::query::{QueryKind, Reply, Request, ServerKind};
use arena_server::{GuardCounters, Roster, ServerConfig, ServerTransport};
use bevy::prelude::*;

const HZ: u32 = 64;

/// A named server with three bots and a client called Ada.
fn server_with_players() -> (App, App, SocketAddr) {
    let config = ServerConfig { name: "Query test".into(), bots: 3, max_clients: 4, ..loopback_config(HZ) };
    let (mut server, info) = server_app_with_frame(&config, tick(HZ));
    let mut ada = client_app(HZ, info.local_addr, "Ada");
    let joined = step_until(&mut [&mut server, &mut ada], 5 * HZ as usize, |apps| session(apps[1]) == Session::InGame);
    assert!(joined, "Ada joined");
    // Past the first second: the answers are up to date with her.
    step(&mut [&mut server, &mut ada], HZ as usize + 8);
    (server, ada, info.local_addr)
}

/// Polls the browser while the apps run, until it has settled.
fn browse(browser: &mut ServerBrowser, apps: &mut [&mut App]) {
    for _ in 0..400 {
        step(apps, 1);
        browser.poll();
        if browser.settled() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("the browser did not settle");
}

fn counters(server: &App) -> GuardCounters {
    server.world().resource::<ServerTransport>().guard_counters().clone()
}

#[test]
fn a_browser_sees_the_servers_name_players_bots_and_rules() {
    let (mut server, mut ada, addr) = server_with_players();
    let mut browser = ServerBrowser::new().expect("a socket");
    browser.details = true;
    browser.query(addr);
    browse(&mut browser, &mut [&mut server, &mut ada]);
    let seen = browser.server(addr).expect("listed").clone();
    assert_eq!(seen.status, Status::Answering);
    let compatible = seen.compatible();
    let info = seen.info.expect("info");
    assert_eq!((info.name.as_str(), info.map.as_str(), info.game.as_str()), ("Query test", "Foundry", "Arena"));
    assert_eq!((info.players, info.max_players, info.bots), (4, 7, 3));
    assert_eq!((info.password, info.kind), (false, ServerKind::Dedicated));
    assert!(compatible);
    // The players are the server's, by name.
    let mut names: Vec<String> = seen.players.expect("players").iter().map(|p| p.name.clone()).collect();
    let mut roster: Vec<String> =
        server.world().resource::<Roster>().players.values().map(|e| e.name.clone()).collect();
    names.sort();
    roster.sort();
    assert_eq!(names, roster);
    assert!(names.contains(&"Ada".to_string()));
    let rules = seen.rules.expect("rules");
    assert!(rules.contains(&("tick_hz".to_string(), HZ.to_string())), "{rules:?}");
    let c = counters(&server);
    assert!(c.queries_answered >= 3 && c.query_challenges >= 1, "{c:?}");

    // The server goes: asked again, it is "not answering", with what it said last.
    drop(server);
    browser.query(addr);
    let deadline = std::time::Instant::now() + arena_client::browser::ANSWER_TIMEOUT * 3;
    while browser.server(addr).is_some_and(|s| s.status != Status::NotAnswering) && std::time::Instant::now() < deadline
    {
        browser.poll();
        std::thread::sleep(Duration::from_millis(10));
    }
    let gone = browser.server(addr).expect("still listed");
    assert_eq!(gone.status, Status::NotAnswering);
    assert_eq!(gone.info.as_ref().map(|i| i.name.as_str()), Some("Query test"));
}

#[test]
fn a_query_flood_gets_small_replies_and_the_game_goes_on() {
    let (mut server, mut ada, addr) = server_with_players();
    let attacker = UdpSocket::bind("127.0.0.1:0").expect("socket");
    attacker.set_nonblocking(true).expect("non-blocking");
    let info = Request { kind: QueryKind::Info, challenge: None }.encode();
    let players = Request { kind: QueryKind::Players, challenge: Some(-1) }.encode();
    let (mut sent_bytes, mut got_bytes, mut got) = (0usize, 0usize, 0usize);
    let mut buffer = [0u8; 2048];
    for round in 0..50 {
        for _ in 0..100 {
            let request = if round % 2 == 0 { &info } else { &players };
            sent_bytes += attacker.send_to(request, addr).expect("send");
        }
        step(&mut [&mut server, &mut ada], 1);
        while let Ok((len, _)) = attacker.recv_from(&mut buffer) {
            got += 1;
            got_bytes += len;
            // Without the challenge, never more than the request.
            assert!(matches!(Reply::parse(&buffer[..len]), Ok(Reply::Challenge(_))));
            assert!(len <= players.len());
        }
    }
    let c = counters(&server);
    assert!(got <= 24 + 50, "{got} replies to 5000 queries from one address");
    assert!(got_bytes < sent_bytes / 20, "{got_bytes} bytes back for {sent_bytes} sent");
    assert!(c.dropped(arena_server::DropReason::QueryLimited) > 4800, "{c:?}");
    // Ada never noticed.
    step(&mut [&mut server, &mut ada], HZ as usize);
    assert_eq!(session(&ada), Session::InGame);
    // And a browser still gets through once the flood stops.
    step(&mut [&mut server, &mut ada], 3 * HZ as usize);
    let mut browser = ServerBrowser::new().expect("a socket");
    browser.query(addr);
    browse(&mut browser, &mut [&mut server, &mut ada]);
    assert_eq!(browser.server(addr).map(|s| s.status), Some(Status::Answering));
}
