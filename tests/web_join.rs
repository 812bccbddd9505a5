//! A browser's way in, end to end on 127.0.0.1: a native WebTransport
//! client pinned to the server's certificate hash (as Chromium pins it)
//! carries a real Arena client into a server's `--web` endpoint beside a
//! UDP player. The browser player joins, downloads the server's map,
//! moves and hits on the server's side; queries (A2S) and the remote
//! console's `status` list it; the 1078-byte connection request went up a
//! stream and bundles over the browser's 1024 bytes came down; the
//! endpoint dropped nothing for size.

// Tests: a failed expectation is the failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use arena_client::browser::ServerBrowser;
use arena_client::{ClientWorld, LocalInput, MapCache, NetcodeSettings, Session};
use arena_lab::harness::{
    LoopbackGame, client_app_with, loopback_config, server_app_with_frame, session, test_frame, test_frames,
};
use arena_protocol::datagram::CONNECTION_REQUEST_BYTES;
use arena_protocol::rcon::RconKey;
use arena_protocol::web_frame::BROWSER_DATAGRAM_LIMIT;
use arena_server::{ServerConfig, ShotLog};
use arena_sim::Hitbox;
use bevy::prelude::*;

const PASSWORD: &str = "web join test password";

/// A folder that looks like the web build's (the test serves no page).
pub(crate) fn page_folder(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("arena-web-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in
        [("index.html", "<!doctype html><title>Arena</title>"), ("arena.js", "//"), ("arena_bg.wasm", "\0asm")]
    {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

/// Steps the game at about real time (the endpoint and the link run on
/// their own threads, in real time), `seconds` long.
fn play(game: &mut LoopbackGame, seconds: f64) {
    for _ in 0..test_frames(seconds) {
        game.step(1);
        std::thread::sleep(test_frame());
    }
}

fn play_until(game: &mut LoopbackGame, seconds: f64, done: impl Fn(&LoopbackGame) -> bool) -> bool {
    for _ in 0..test_frames(seconds) {
        game.step(1);
        if done(game) {
            return true;
        }
        std::thread::sleep(test_frame());
    }
    false
}

/// Spire's geometry under another name: a map the clients must download,
/// in chunks over the reliable channel (renet's slices of up to 1200 bytes
/// make bundles over what a WebTransport datagram carries).
fn write_tower(dir: &std::path::Path) -> std::path::PathBuf {
    let text = arena_sim::map::SPIRE_RON.replacen("name: \"Spire\"", "name: \"Tower\"", 1);
    let path = dir.join("tower.ron");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_browser_player_joins_through_webtransport_plays_and_is_listed() {
    let folder = page_folder("join");
    let config = ServerConfig {
        map: write_tower(&folder).display().to_string(),
        web_dir: Some(folder.clone()),
        rcon_key: Some(RconKey::with_new_salt(PASSWORD).unwrap()),
        ..loopback_config(64)
    };
    let (server, info) = server_app_with_frame(&config, test_frame());
    let web = info.web.clone().expect("the endpoint opened");
    let cert = arena_protocol::web_link::parse_cert(&web.cert.lock().unwrap()).expect("a hash");
    let endpoint = SocketAddr::from(([127, 0, 0, 1], web.port));
    assert!(
        web.links()
            .iter()
            .any(|l| l.starts_with(&format!("http://127.0.0.1:{}/#join=127.0.0.1:{}&cert=", web.port, web.port)))
    );
    let link = arena_webtransport::client::connect(endpoint, cert).expect("a session");
    let mut browser = client_app_with(test_frame(), link.local, "Browser", NetcodeSettings::default());
    browser.insert_resource(MapCache { dir: Some(folder.join("browser-maps")) });
    let mut native = client_app_with(test_frame(), info.local_addr, "Ada", NetcodeSettings::default());
    native.insert_resource(MapCache { dir: Some(folder.join("native-maps")) });
    let mut game = LoopbackGame { server, clients: vec![browser, native] };
    let joined = play_until(&mut game, 10.0, |g| g.clients.iter().all(|c| session(c) == Session::InGame));
    assert!(joined, "both players joined");
    // The map came down to the browser (its bundles over a datagram's size by the stream).
    let loaded = play_until(&mut game, 10.0, |g| {
        g.clients.iter().all(|c| c.world().resource::<ClientWorld>().map().name == "Tower")
            && g.sim("Browser").is_some_and(|s| s.alive)
            && g.sim("Ada").is_some_and(|s| s.alive)
    });
    assert!(loaded, "both have the map and are in the world");
    play(&mut game, 1.0);

    // The connection request (1078 bytes, over the browser's 1024) went up a stream.
    let up_frames = link.counters.frames_up.load(Ordering::Relaxed);
    let largest_up = link.counters.largest_up.load(Ordering::Relaxed);
    assert!(
        up_frames >= 1 && largest_up >= CONNECTION_REQUEST_BYTES as u64,
        "{up_frames} frames up, largest {largest_up}"
    );
    assert!(link.counters.datagrams_up.load(Ordering::Relaxed) > 10, "commands go as datagrams");

    // The browser player moves on the server.
    let start = game.sim("Browser").expect("on the server").pos;
    game.clients[0].world_mut().resource_mut::<LocalInput>().forward = 1.0;
    play(&mut game, 1.0);
    game.clients[0].world_mut().resource_mut::<LocalInput>().forward = 0.0;
    let moved = game.sim("Browser").unwrap().pos.distance(start);
    assert!(moved > 2.0, "the browser player moved {moved} m");

    // It shoots the UDP player standing in front of it: hits on the server's side.
    let me = game.sim("Browser").unwrap();
    let forward = Vec3::new(-me.yaw.sin(), 0.0, -me.yaw.cos());
    game.teleport("Ada", me.pos + forward * 6.0, 0.0);
    game.keep_alive("Ada");
    play(&mut game, 0.5);
    let ada = game.sim("Ada").unwrap();
    game.server.world_mut().resource_mut::<ShotLog>().0.clear();
    game.aim(0, Hitbox::of(&ada).body_center());
    game.hold_fire(0, true);
    play(&mut game, 0.6);
    game.hold_fire(0, false);
    play(&mut game, 0.3);
    let browser_id = game.id_of("Browser").unwrap();
    let shots: Vec<_> =
        game.server.world_mut().resource_mut::<ShotLog>().0.drain(..).filter(|s| s.shooter == browser_id).collect();
    assert!(!shots.is_empty(), "the browser player's shots reached the server");
    assert!(shots.iter().any(|s| s.hit.is_some()), "and hit: {} shots", shots.len());

    // A server browser (A2S) lists it.
    let mut browser = ServerBrowser::new().unwrap();
    browser.details = true;
    browser.query(info.local_addr);
    for _ in 0..test_frames(2.0) {
        game.step(1);
        browser.poll();
        if browser.settled() {
            break;
        }
        std::thread::sleep(test_frame());
    }
    let listed = browser.server(info.local_addr).and_then(|s| s.players.clone()).expect("players listed");
    assert!(listed.iter().any(|p| p.name == "Browser"), "{listed:?}");
    assert_eq!(browser.server(info.local_addr).and_then(|s| s.info.as_ref()).map(|i| i.players), Some(2));

    // The remote console's status lists it with its real address, marked.
    let mut child = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["rcon", &info.local_addr.to_string(), "--wait-ms", "2000", "status"])
        .env("ARENA_RCON_PASSWORD", PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..test_frames(10.0) {
        game.step(1);
        std::thread::sleep(test_frame());
        if child.try_wait().unwrap().is_some() {
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    let line = status.lines().find(|l| l.contains("Browser")).unwrap_or_else(|| panic!("{status}"));
    assert!(line.contains("127.0.0.1:") && line.contains("(web)"), "{line}");

    // Bundles over the browser's 1024 bytes came down (the map's chunks);
    // none was lost for size. (Those over a datagram's limit come by the
    // stream: crates/arena_webtransport/tests/endpoint.rs.)
    let largest_down = link.counters.largest_down.load(Ordering::Relaxed);
    let down_frames = link.counters.frames_down.load(Ordering::Relaxed);
    assert!(largest_down > BROWSER_DATAGRAM_LIMIT as u64, "largest {largest_down}, {down_frames} frames");
    let counts = game.server.world().resource::<arena_server::ServerTransport>().web_counts().expect("an endpoint");
    assert_eq!(counts.dropped_for_size, 0, "{counts:?}");
    assert!(counts.frames_in >= up_frames && counts.sessions_open == 1, "{counts:?}");
    let _ = std::fs::remove_dir_all(&folder);
}

/// Strangers at the endpoint, from another thread while the game plays:
/// 1000 sessions from one address, a session whose stream sends garbage,
/// one that stalls, garbage datagrams at the QUIC port, and requests for
/// paths outside the page's folder.
fn hostile_browsers(endpoint: SocketAddr, cert: [u8; 32], stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use wtransport::tls::Sha256Digest;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let config = wtransport::ClientConfig::builder()
            .with_bind_default()
            .with_server_certificate_hashes([Sha256Digest::new(cert)])
            .build();
        let client = std::sync::Arc::new(wtransport::Endpoint::client(config).unwrap());
        let url = format!("https://{endpoint}/arena");
        // A stalled session and a session sending garbage frames and datagrams.
        let _stalled = client.connect(&url).await.unwrap();
        let garbage = client.connect(&url).await.unwrap();
        for i in 0..500u32 {
            let _ = garbage.send_datagram((0..(1 + i % 900)).map(|j| (i ^ j) as u8).collect::<Vec<u8>>());
        }
        if let Ok(opening) = garbage.open_uni().await
            && let Ok(mut stream) = opening.await
        {
            let _ = stream.write_all(&[0x05, 0x00, 1, 2, 3, 4, 5, 0xFF, 0xFF]).await;
        }
        // The flood of sessions, in waves of 100 at once, each held open,
        // while the game plays; garbage at the QUIC port and the page's
        // web server between waves.
        let junk = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut held = Vec::new();
        let mut wave_number = 0u32;
        while !stop.load(Ordering::Relaxed) {
            // Garbage datagrams again each wave: the first ones may come
            // before the server has taken the session in (a busy machine).
            for i in 0..100u32 {
                let i = i + 100 * wave_number;
                let _ = garbage.send_datagram((0..(1 + i % 900)).map(|j| (i ^ j) as u8).collect::<Vec<u8>>());
            }
            wave_number += 1;
            let mut wave = tokio::task::JoinSet::new();
            for _ in 0..100 {
                let (client, url) = (client.clone(), url.clone());
                wave.spawn(async move { tokio::time::timeout(Duration::from_secs(5), client.connect(url)).await });
            }
            while let Some(done) = wave.join_next().await {
                if let Ok(Ok(Ok(session))) = done {
                    held.push(session);
                }
            }
            for i in 0..200u32 {
                let _ = junk.send_to(&[i as u8; 1200], endpoint);
            }
            for path in ["/../Cargo.toml", "/%2e%2e/etc/passwd", "/.git/config"] {
                if let Ok(mut stream) = std::net::TcpStream::connect(endpoint) {
                    use std::io::Write;
                    let _ = stream.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes());
                }
            }
        }
        drop(held);
    });
}

#[test]
fn a_flood_of_browser_sessions_costs_a_udp_player_no_snapshot() {
    let folder = page_folder("flood");
    let config = ServerConfig { bots: 2, web_dir: Some(folder.clone()), ..loopback_config(64) };
    let (server, info) = server_app_with_frame(&config, test_frame());
    let web = info.web.clone().expect("the endpoint opened");
    let cert = arena_protocol::web_link::parse_cert(&web.cert.lock().unwrap()).unwrap();
    let native = client_app_with(test_frame(), info.local_addr, "Ada", NetcodeSettings::default());
    let mut game = LoopbackGame { server, clients: vec![native] };
    assert!(play_until(&mut game, 10.0, |g| session(&g.clients[0]) == Session::InGame));
    play(&mut game, 1.0);

    // Snapshots a UDP player receives, and the server's frame times, over `seconds`.
    let measure = |game: &mut LoopbackGame, seconds: f64| {
        let before = game.clients[0].world().resource::<arena_client::ClientStats>().snapshots_received;
        let mut slowest = Duration::ZERO;
        for _ in 0..test_frames(seconds) {
            let started = std::time::Instant::now();
            game.server.update();
            slowest = slowest.max(started.elapsed());
            game.clients[0].update();
            std::thread::sleep(test_frame());
        }
        let after = game.clients[0].world().resource::<arena_client::ClientStats>().snapshots_received;
        (after - before, slowest)
    };
    let (calm, calm_slowest) = measure(&mut game, 3.0);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        let endpoint = SocketAddr::from(([127, 0, 0, 1], web.port));
        std::thread::spawn(move || hostile_browsers(endpoint, cert, stop))
    };
    std::thread::sleep(Duration::from_millis(300));
    let (flooded, flooded_slowest) = measure(&mut game, 3.0);
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    let counts = game.server.world().resource::<arena_server::ServerTransport>().web_counts().unwrap();
    assert!(counts.refused > 0, "the flood met the caps: {counts:?}");
    eprintln!(
        "snapshots in 3 s: {calm} calm, {flooded} flooded; slowest server frame {calm_slowest:?} calm, \
         {flooded_slowest:?} flooded; {counts:?}"
    );
    assert_eq!(session(&game.clients[0]), Session::InGame);
    // Every snapshot still comes (the server's frames are stepped, so a
    // lost one would be the flood's), and no frame of the server's took a tick.
    assert!(flooded >= calm * 95 / 100, "snapshots in 3 s: {calm} calm, {flooded} flooded");
    let tick = Duration::from_secs_f64(1.0 / 64.0);
    assert!(flooded_slowest < tick, "the server's slowest frame: {calm_slowest:?} calm, {flooded_slowest:?} flooded");
    assert!(counts.sessions_open <= arena_webtransport::MAX_SESSIONS_PER_IP, "one address's share at most: {counts:?}");
    let guard = game.server.world().resource::<arena_server::ServerTransport>().guard_counters().clone();
    assert!(guard.dropped_total() > 0, "the garbage reached the guard and was dropped: {guard:?}");
    let _ = std::fs::remove_dir_all(&folder);
}
