//! Maps in turn: a server with `--maps foundry,spire` plays the next map
//! when a match ends; a client in the game loads it; bots play (and kill)
//! on both.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{ClientWorld, NetcodeSettings, Roster};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};
use arena_server::{CombatStats, MatchRules, ServerConfig};

fn server_map(game: &LoopbackGame) -> String {
    let rotation = game.server.world().resource::<arena_server::MapRotation>();
    rotation.maps[rotation.now].clone()
}

fn kills(game: &LoopbackGame) -> u64 {
    game.server.world().resource::<CombatStats>().kills
}

fn client_map(game: &LoopbackGame) -> String {
    game.clients[0].world().resource::<ClientWorld>().map().name.clone()
}

#[test]
fn a_rotation_plays_the_next_map_after_each_match_and_clients_follow() {
    let config = ServerConfig {
        bots: 6,
        maps: vec!["Foundry".into(), "Spire".into()],
        rules: MatchRules { frag_limit: 3, time_limit_s: 40, results_s: 1 },
        ..loopback_config(64)
    };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 45, &["Ada"], test_frame()).expect("joined");
    assert_eq!(client_map(&game), "Foundry");
    assert_eq!(server_map(&game), "Foundry");

    // The first match, on Foundry, to its frag limit (or its time).
    let on_spire = game.step_until(test_frames(60.0), |g| client_map(g) == "Spire");
    assert!(on_spire, "Ada never got Spire");
    let kills_on_foundry = kills(&game);
    assert!(kills_on_foundry > 0, "nobody was killed on Foundry");
    assert_eq!(server_map(&game), "Spire");
    assert_eq!(game.clients[0].world().resource::<Roster>().map_name, "Spire");
    // Everyone stands on the new map (a spawn point of Spire's).
    let spire = arena_sim::MapDef::built_in("Spire").unwrap();
    game.step(test_frames(1.0));
    // A server browser sees the new map (A2S; the master's infoResponse
    // takes its `mapname` from the same answers).
    let mut browser = arena_client::browser::ServerBrowser::new().expect("a socket");
    let addr = game.server.world().resource::<arena_server::ServerTransport>().local_addr().expect("bound");
    browser.query(addr);
    for _ in 0..400 {
        game.step(1);
        browser.poll();
        if browser.settled() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let info = browser.server(addr).and_then(|s| s.info.clone()).expect("the server answered");
    assert_eq!(info.map, "Spire");
    let ada = game.sim("Ada").expect("Ada plays");
    let world = arena_sim::ArenaWorld::new(spire);
    assert!(
        world.player_fits(ada.pos, arena_sim::player::STAND_HEIGHT_M),
        "Ada is inside Spire's walls at {}",
        ada.pos
    );

    // Bots kill on Spire too, and the next match goes back to Foundry.
    let back = game.step_until(test_frames(60.0), |g| client_map(g) == "Foundry");
    assert!(back, "the rotation did not come round");
    assert!(kills(&game) > kills_on_foundry, "nobody was killed on Spire");
}
