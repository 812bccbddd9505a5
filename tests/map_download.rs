//! Maps sent by the server: a server started with a map file a client does
//! not have sends it; the client checks it, keeps it in its cache and plays
//! on it (held out of the world until then); a second client finds it in
//! the cache; a damaged transfer, and a map that fails the check, are
//! refused with a message and never loaded.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use arena_client::{ClientWorld, LastDisconnect, MapCache, MapFetch, NetcodeSettings, Session};
use arena_lab::harness::{LoopbackGame, client_app_with, loopback_config, session, test_frame, test_frames};
use arena_protocol::map_transfer::MapId;
use arena_server::{ConsoleLines, ConsoleSource, MapUploads, ServedMaps, ServerConfig};

/// A fresh directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arena-map-download-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Spire's geometry under another name: a map no client has built in.
fn write_tower(dir: &Path) -> PathBuf {
    let text = arena_sim::map::SPIRE_RON.replacen("name: \"Spire\"", "name: \"Tower\"", 1);
    assert!(text.contains("\"Tower\""), "the map's name was replaced");
    let path = dir.join("tower.ron");
    std::fs::write(&path, text).unwrap();
    path
}

fn client_map(game: &LoopbackGame, client: usize) -> String {
    game.clients[client].world().resource::<ClientWorld>().map().name.clone()
}

fn join_with_cache(game: &mut LoopbackGame, name: &str, cache: &Path) -> usize {
    let addr = game.server.world().resource::<arena_server::ServerTransport>().local_addr().unwrap();
    let mut client = client_app_with(test_frame(), addr, name, NetcodeSettings::default());
    client.insert_resource(MapCache { dir: Some(cache.to_path_buf()) });
    game.clients.push(client);
    game.clients.len() - 1
}

fn uploads(game: &LoopbackGame) -> arena_server::UploadStats {
    game.server.world().resource::<MapUploads>().stats
}

#[test]
fn a_client_without_the_servers_map_receives_it_checks_it_keeps_it_and_plays() {
    let dir = scratch("plays");
    let cache = dir.join("cache");
    let config = ServerConfig { bots: 2, map: write_tower(&dir).display().to_string(), ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 8, &[], test_frame()).expect("started");
    let ada = join_with_cache(&mut game, "Ada", &cache);
    // In the game at once; out of the world until the map is in.
    assert!(game.step_until(test_frames(5.0), |g| session(&g.clients[ada]) == Session::InGame));
    assert!(game.sim("Ada").is_some_and(|s| !s.alive), "Ada is in the world before she has the map");
    let loaded = game.step_until(test_frames(5.0), |g| client_map(g, ada) == "Tower");
    assert!(loaded, "Ada never loaded Tower");
    assert_eq!(game.clients[ada].world().resource::<MapFetch>().received, 1);
    let id = game.server.world().resource::<ServedMaps>().find("Tower").unwrap().id.clone();
    let kept = cache.join(format!("{}.ron", id.hex()));
    assert!(id.matches(&std::fs::read(&kept).expect("the map is in the cache")), "the cached map is the server's");
    // The server hears she has it (a round trip later).
    assert!(game.step_until(test_frames(2.0), |g| uploads(g).loaded == 1), "the server never heard she has it");
    let stats = uploads(&game);
    assert_eq!((stats.started, stats.finished), (1, 1));
    assert_eq!(stats.bytes, u64::from(id.bytes));
    // She plays: in the world, on Tower's floor, moving with the rest.
    let alive = game.step_until(test_frames(3.0), |g| g.sim("Ada").is_some_and(|s| s.alive));
    assert!(alive, "Ada was not let into the world");
    let world =
        arena_sim::ArenaWorld::new(arena_sim::MapDef::from_ron(&std::fs::read_to_string(&kept).unwrap()).unwrap());
    let at = game.sim("Ada").unwrap().pos;
    assert!(world.player_fits(at, arena_sim::player::STAND_HEIGHT_M), "Ada is inside Tower's walls at {at}");

    // Bob has it in the (same) cache: nothing is sent again.
    let bob = join_with_cache(&mut game, "Bob", &cache);
    let in_tower = game.step_until(test_frames(5.0), |g| client_map(g, bob) == "Tower");
    assert!(in_tower, "Bob did not load Tower from the cache");
    assert!(game.step_until(test_frames(3.0), |g| g.sim("Bob").is_some_and(|s| s.alive)));
    assert_eq!(game.clients[bob].world().resource::<MapFetch>().received, 0);
    assert_eq!(uploads(&game).started, 1, "the map was sent again");

    // The console goes to Foundry and back to Tower (as a vote or a
    // rotation would): both are held, say they have it, and play again.
    let loaded_before = uploads(&game).loaded;
    for line in ["map Foundry", "map Tower"] {
        game.server.world_mut().resource_mut::<ConsoleLines>().push(ConsoleSource::Terminal, line.into());
        let name = if line.ends_with("Foundry") { "Foundry" } else { "Tower" };
        let there = game.step_until(test_frames(5.0), |g| client_map(g, ada) == name && client_map(g, bob) == name);
        assert!(there, "the clients did not follow to {name}");
    }
    assert!(game.step_until(test_frames(3.0), |g| uploads(g).loaded >= loaded_before + 2), "not let in again");
    assert!(game.step_until(test_frames(3.0), |g| ["Ada", "Bob"].iter().all(|n| g.sim(n).is_some_and(|s| s.alive))));
    assert_eq!(uploads(&game).started, 1, "the map was sent again");
}

/// A server whose map file is altered after it was announced (damaged on
/// the way, as a client sees it), or replaced by one that fails the check.
fn refused_with(test: &str, change: impl FnOnce(&mut ServedMaps), reason: &str) {
    let dir = scratch(test);
    let config = ServerConfig { map: write_tower(&dir).display().to_string(), ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 9, &[], test_frame()).expect("started");
    change(&mut game.server.world_mut().resource_mut::<ServedMaps>());
    let cy = join_with_cache(&mut game, "Cy", &dir.join("cache"));
    let ended = game.step_until(test_frames(8.0), |g| g.clients[cy].world().resource::<LastDisconnect>().0.is_some());
    assert!(ended, "the connection did not end");
    let why = game.clients[cy].world().resource::<LastDisconnect>().0.clone().unwrap();
    assert!(why.contains("Tower") && why.contains(reason) && why.contains("not loaded"), "{why}");
    assert_ne!(client_map(&game, cy), "Tower", "a refused map was loaded");
    let cache = dir.join("cache");
    assert!(!cache.exists() || std::fs::read_dir(&cache).unwrap().next().is_none(), "a refused map was kept");
}

#[test]
fn a_damaged_transfer_is_refused_and_never_loaded() {
    refused_with(
        "damaged",
        |served| {
            let tower = served.0.iter_mut().find(|m| m.id.name == "Tower").unwrap();
            let mut text = tower.text.to_vec();
            let at = text.len() / 2;
            text[at] ^= 0x01;
            tower.text = text.into();
        },
        "damaged",
    );
}

#[test]
fn a_map_that_fails_the_check_is_refused_and_never_loaded() {
    refused_with(
        "unplayable",
        |served| {
            // Its hash matches what is sent, but its spawn is inside a wall.
            let bad = std::fs::read_to_string("tests/maps/spawn_in_wall.ron").unwrap();
            let bad = regex_free_rename(&bad, "Tower");
            let tower = served.0.iter_mut().find(|m| m.id.name == "Tower").unwrap();
            tower.id = MapId::of("Tower", bad.as_bytes());
            tower.text = bad.into_bytes().into();
        },
        "fails the map check",
    );
}

#[test]
fn a_map_announced_over_the_cap_is_refused_and_never_loaded() {
    refused_with(
        "oversize",
        |served| {
            let tower = served.0.iter_mut().find(|m| m.id.name == "Tower").unwrap();
            tower.id.bytes = 300_000;
        },
        "at most 262144",
    );
}

#[test]
fn a_download_that_stops_halfway_is_refused_and_never_loaded() {
    let dir = scratch("stalled");
    // A map of about 100 KB, at the 2000 bytes a second this client's `rate` allows.
    let mut text = std::fs::read_to_string(write_tower(&dir)).unwrap();
    for i in 0..1200 {
        text.push_str(&format!("// a map maker's note, line {i}, to make the file larger\n"));
    }
    let path = dir.join("big-tower.ron");
    std::fs::write(&path, &text).unwrap();
    let config = ServerConfig { map: path.display().to_string(), ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 10, &[], test_frame()).expect("started");
    let addr = game.server.world().resource::<arena_server::ServerTransport>().local_addr().unwrap();
    let slow = NetcodeSettings { rate: 2000, ..NetcodeSettings::default() };
    game.clients.push(client_app_with(test_frame(), addr, "Dee", slow));
    let started = game.step_until(test_frames(5.0), |g| {
        g.clients[0].world().resource::<MapFetch>().progress().is_some_and(|(_, done)| done > 0.01)
    });
    assert!(started, "the download did not start");
    // The server stops sending (its map's hash changes under the download).
    game.server
        .world_mut()
        .resource_mut::<ServedMaps>()
        .0
        .iter_mut()
        .find(|m| m.id.name == "Tower")
        .unwrap()
        .id
        .hash[0] ^= 1;
    let ended = game.step_until(test_frames(20.0), |g| g.clients[0].world().resource::<LastDisconnect>().0.is_some());
    assert!(ended, "the client waited for ever");
    let why = game.clients[0].world().resource::<LastDisconnect>().0.clone().unwrap();
    assert!(why.contains("Tower") && why.contains("stopped at") && why.contains("not loaded"), "{why}");
    assert_ne!(client_map(&game, 0), "Tower");
}

/// `text` with its map's name (the first `name: "..."`) set to `name`.
fn regex_free_rename(text: &str, name: &str) -> String {
    let start = text.find("name: \"").expect("a name") + "name: \"".len();
    let end = start + text[start..].find('"').expect("its end");
    format!("{}{name}{}", &text[..start], &text[end..])
}

/// Issue 60's finding 3: nine players behind one address join a server
/// playing a map none has. Eight copies go at once; the ninth was dropped
/// unanswered (and would be on every rejoin: copies were counted for as
/// long as the server ran). Now the ninth is told to wait, its map screen
/// says so, and it gets the map once the address's budget has refilled.
#[test]
fn a_ninth_player_behind_one_address_waits_then_gets_the_map() {
    let dir = scratch("ninth");
    let config =
        ServerConfig { bots: 0, max_clients: 12, map: write_tower(&dir).display().to_string(), ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 9, &[], test_frame()).expect("started");
    // Each with a cache of its own: nobody finds the map another fetched.
    let players: Vec<usize> =
        (0..9).map(|i| join_with_cache(&mut game, &format!("P{i}"), &dir.join(format!("cache{i}")))).collect();
    let all_in = |g: &LoopbackGame| players.iter().all(|&k| session(&g.clients[k]) == Session::InGame);
    assert!(game.step_until(test_frames(8.0), all_in), "not everyone joined");
    let told = game.step_until(test_frames(4.0), |g| {
        players.iter().any(|&k| g.clients[k].world().resource::<MapFetch>().waiting().is_some())
    });
    assert!(told, "nobody was told to wait: {:?}", uploads(&game));
    let stats = uploads(&game);
    assert_eq!(stats.started, 8, "{stats:?}");
    assert!(stats.over_budget >= 1, "{stats:?}");
    let everyone = game.step_until(test_frames(10.0), |g| players.iter().all(|&k| client_map(g, k) == "Tower"));
    let stats = uploads(&game);
    assert!(everyone, "not everyone loaded Tower: {stats:?}");
    assert_eq!(stats.started, 9, "{stats:?}");
    for &k in &players {
        assert_eq!(game.clients[k].world().resource::<LastDisconnect>().0, None, "player {k} was dropped");
        assert_eq!(session(&game.clients[k]), Session::InGame);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
