//! The combat loop over real UDP on 127.0.0.1: damage and death as both
//! players' clients see them, respawning away from the killer, spawn
//! protection, the scoreboard and kill feed, a match that ends at the frag
//! limit or the time limit and starts again, and a player who leaves while
//! dead; and server-side bots that roam, fight, and show up like players.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{DamageTaken, Disconnect, KillNotice, MatchStatus, NetPlayer, NetcodeSettings, Roster, Scoreboard};
use arena_lab::harness::{LoopbackGame, drawn_others, drawn_self, loopback_config, test_frame, test_frames};
use arena_protocol::MatchPhase;
use arena_server::{MatchRules, MatchState, ServerConfig};
use arena_sim::weapon::{BODY_DAMAGE, MAX_HEALTH};
use arena_sim::{Hitbox, PlayerId};
use bevy::prelude::*;

/// What a client heard: kills in the feed and damage taken.
#[derive(Resource, Default)]
struct Heard {
    kills: Vec<KillNotice>,
    damage: Vec<DamageTaken>,
}

fn listen(mut kills: MessageReader<KillNotice>, mut damage: MessageReader<DamageTaken>, mut heard: ResMut<Heard>) {
    heard.kills.extend(kills.read().copied());
    heard.damage.extend(damage.read().copied());
}

/// "Shooter" and "Target" on a server with these rules, no fake latency.
fn game(rules: MatchRules) -> LoopbackGame {
    let config = ServerConfig { rules, ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 3, &["Shooter", "Target"], test_frame())
        .expect("joined");
    for client in &mut game.clients {
        client.init_resource::<Heard>().add_systems(Update, listen);
    }
    game.step(test_frames(1.0));
    // Face to face across open floor, neither protected.
    game.teleport("Shooter", Vec3::new(0.0, 0.0, 6.0), 0.0);
    game.teleport("Target", Vec3::new(10.0, 0.0, 5.0), 0.0);
    game.step(test_frames(0.5));
    game
}

fn id_of(game: &LoopbackGame, name: &str) -> PlayerId {
    game.id_of(name).expect("in the roster")
}

/// One body shot at the target as the shooter's client draws it; waits for it to land.
fn body_shot(game: &mut LoopbackGame) {
    let target = game.drawn_other(0).expect("the target is drawn");
    game.aim(0, Hitbox::of(&target).body_center());
    game.tap_fire(0);
    game.step(test_frames(0.25));
}

/// The target's view back along -z, side-on to the shooter as at the start
/// (a respawn turns it to its spawn point's way, which may hold its arms
/// between the shooter and its body), once its client has seen the respawn.
fn target_side_on(game: &mut LoopbackGame) {
    game.step(test_frames(0.2));
    {
        let mut input = game.clients[1].world_mut().resource_mut::<arena_client::LocalInput>();
        (input.yaw, input.pitch) = (0.0, 0.0);
    }
    game.step(test_frames(0.2));
}

fn kill_target(game: &mut LoopbackGame) {
    for _ in 0..MAX_HEALTH.div_ceil(BODY_DAMAGE) {
        body_shot(game);
    }
}

#[test]
fn body_shots_wound_then_kill_and_everyone_hears_of_it() {
    let mut game = game(MatchRules::default());
    let (shooter, target) = (id_of(&game, "Shooter"), id_of(&game, "Target"));

    body_shot(&mut game);
    assert_eq!(game.sim("Target").unwrap().health, MAX_HEALTH - BODY_DAMAGE);
    // The target's own client shows the wound and where it came from.
    game.step(test_frames(0.2));
    let seen = drawn_self(&game.clients[1]).unwrap();
    assert_eq!(seen.health, MAX_HEALTH - BODY_DAMAGE);
    let damage = &game.clients[1].world().resource::<Heard>().damage;
    assert_eq!(damage.len(), 1);
    assert_eq!((damage[0].attacker, damage[0].amount), (shooter, BODY_DAMAGE));

    kill_target(&mut game);
    game.step(test_frames(0.2));
    assert!(!game.sim("Target").unwrap().alive, "four body shots kill");
    for client in &game.clients {
        let kills = &client.world().resource::<Heard>().kills;
        assert_eq!(kills.len(), 1, "one kill in every feed");
        assert_eq!((kills[0].killer, kills[0].victim), (shooter, target));
        let board = &client.world().resource::<Scoreboard>().rows;
        let row = |id| board.iter().find(|r| r.id == id).copied().expect("on the board");
        assert_eq!((row(shooter).frags, row(shooter).deaths), (1, 0));
        assert_eq!((row(target).frags, row(target).deaths), (0, 1));
        assert_eq!(board[0].id, shooter, "the best first");
    }
    // The dead cannot act: firing does nothing.
    let ammo = game.sim("Target").unwrap().ammo;
    game.tap_fire(1);
    game.step(test_frames(0.2));
    assert_eq!(game.sim("Target").unwrap().ammo, ammo);
}

#[test]
fn the_dead_respawn_after_a_delay_at_the_spawn_farthest_from_the_others() {
    let mut game = game(MatchRules::default());
    kill_target(&mut game);
    let died_at = game.sim("Target").unwrap().pos;
    let shooter_at = game.sim("Shooter").unwrap().pos;
    // Not before the delay (2 s).
    game.step(test_frames(arena_server::RESPAWN_DELAY_S as f64 - 0.6));
    assert!(!game.sim("Target").unwrap().alive, "still dead before the delay");
    assert!(game.step_until(test_frames(1.0), |g| g.sim("Target").is_some_and(|s| s.alive)));
    let back = game.sim("Target").unwrap();
    assert_eq!(back.health, MAX_HEALTH);
    assert_eq!(back.ammo, arena_sim::weapon::MAGAZINE);
    // The spawn point farthest from the only other player, not where it died.
    let spawns = arena_sim::map::MapDef::foundry().spawns;
    let farthest = spawns
        .iter()
        .max_by(|a, b| a.pos.distance(shooter_at).total_cmp(&b.pos.distance(shooter_at)))
        .expect("spawn points");
    assert!(back.pos.distance(farthest.pos) < 0.01, "respawned at {} not {}", back.pos, farthest.pos);
    assert!(back.pos.distance(died_at) > 5.0);
    // Its client sees itself alive there too.
    game.step(test_frames(0.3));
    let seen = drawn_self(&game.clients[1]).unwrap();
    assert!(seen.alive && seen.pos.distance(back.pos) < 0.5);
}

#[test]
fn spawn_protection_stops_damage_until_it_runs_out_or_the_player_fires() {
    let mut game = game(MatchRules::default());
    kill_target(&mut game);
    assert!(game.step_until(test_frames(3.0), |g| g.sim("Target").is_some_and(|s| s.alive)));
    let protected = game.sim("Target").unwrap();
    assert!(protected.protected_s > 0.0);
    // Bring it back into the line of fire, still protected.
    game.edit_sim("Target", |s| {
        s.pos = Vec3::new(10.0, 0.0, 5.0);
        s.spawn_count = s.spawn_count.wrapping_add(1);
    });
    target_side_on(&mut game);
    assert!(game.drawn_other(0).expect("the target is drawn").protected_s > 0.0, "the shooter sees the protection");
    body_shot(&mut game);
    assert_eq!(game.sim("Target").unwrap().health, MAX_HEALTH, "no damage while protected");

    // It runs out by itself.
    assert!(game.step_until(test_frames(2.0), |g| g.sim("Target").is_some_and(|s| s.protected_s == 0.0)));
    body_shot(&mut game);
    assert_eq!(game.sim("Target").unwrap().health, MAX_HEALTH - BODY_DAMAGE);

    // And ends at once when the protected player fires.
    game.edit_sim("Target", |s| s.protected_s = arena_sim::player::SPAWN_PROTECTION_S);
    game.tap_fire(1);
    game.step(test_frames(0.2));
    assert_eq!(game.sim("Target").unwrap().protected_s, 0.0);
    body_shot(&mut game);
    assert_eq!(game.sim("Target").unwrap().health, MAX_HEALTH - 2 * BODY_DAMAGE);
}

fn phase(game: &LoopbackGame) -> MatchPhase {
    game.server.world().resource::<MatchState>().phase
}

#[test]
fn a_match_ends_at_the_frag_limit_shows_results_and_starts_again() {
    let mut game = game(MatchRules { frag_limit: 2, time_limit_s: 600, results_s: 2 });
    let shooter = id_of(&game, "Shooter");
    kill_target(&mut game);
    assert_eq!(phase(&game), MatchPhase::Playing, "one frag is not the limit");
    assert!(game.step_until(test_frames(3.0), |g| g.sim("Target").is_some_and(|s| s.alive)));
    game.teleport("Target", Vec3::new(10.0, 0.0, 5.0), 0.0);
    target_side_on(&mut game);
    kill_target(&mut game);
    game.step(test_frames(0.2));
    assert_eq!(phase(&game), MatchPhase::Over { winner: Some(shooter), team: None });
    for client in &game.clients {
        let status = client.world().resource::<MatchStatus>();
        assert!(status.is_over(), "every client shows the results");
        assert_eq!(status.info.unwrap().phase, MatchPhase::Over { winner: Some(shooter), team: None });
    }
    // During the results nobody acts: the shooter's trigger does nothing.
    let ammo = game.sim("Shooter").unwrap().ammo;
    game.tap_fire(0);
    game.step(test_frames(0.3));
    assert_eq!(game.sim("Shooter").unwrap().ammo, ammo);

    // Then a new match: scores cleared, everyone alive and armed.
    assert!(game.step_until(test_frames(2.5), |g| phase(g) == MatchPhase::Playing));
    assert_eq!(game.server.world().resource::<MatchState>().number, 2);
    for name in ["Shooter", "Target"] {
        let s = game.sim(name).unwrap();
        assert!(s.alive && s.health == MAX_HEALTH && s.ammo == arena_sim::weapon::MAGAZINE, "{name}: {s:?}");
    }
    game.step(test_frames(0.3));
    for client in &game.clients {
        let status = client.world().resource::<MatchStatus>();
        assert_eq!(status.info.unwrap().number, 2);
        assert!(!status.is_over());
        let board = &client.world().resource::<Scoreboard>().rows;
        assert_eq!(board.len(), 2);
        assert!(board.iter().all(|r| r.frags == 0 && r.deaths == 0), "{board:?}");
    }
}

#[test]
fn a_match_with_no_frags_ends_at_the_time_limit_without_a_winner() {
    let mut game = game(MatchRules { frag_limit: 20, time_limit_s: 3, results_s: 1 });
    assert!(game.step_until(test_frames(4.0), |g| phase(g) == MatchPhase::Over { winner: None, team: None }));
    assert!(game.step_until(test_frames(2.0), |g| phase(g) == MatchPhase::Playing));
    assert_eq!(game.server.world().resource::<MatchState>().number, 2);
}

#[test]
fn a_player_who_leaves_while_dead_leaves_no_ghost() {
    let mut game = game(MatchRules::default());
    let target = id_of(&game, "Target");
    kill_target(&mut game);
    assert!(!game.sim("Target").unwrap().alive);
    game.clients[1].world_mut().trigger(Disconnect);
    game.step(test_frames(0.5));
    assert!(game.player("Target").is_none(), "gone from the server");
    // Past the respawn delay: nothing comes back.
    game.step(test_frames(arena_server::RESPAWN_DELAY_S as f64 + 0.5));
    assert!(game.player("Target").is_none(), "not respawned as a ghost");
    let shooter = &mut game.clients[0];
    let mut players = shooter.world_mut().query::<&NetPlayer>();
    assert!(players.iter(shooter.world()).all(|p| p.id != target), "gone from the shooter's world");
    assert!(!shooter.world().resource::<Roster>().names.contains_key(&target));
    let board = &shooter.world().resource::<Scoreboard>().rows;
    assert!(board.iter().all(|r| r.id != target), "and from the scoreboard: {board:?}");
}

#[test]
fn server_bots_roam_fight_and_show_up_like_players() {
    let config = ServerConfig { bots: 3, bot_skill: 0.8, ..loopback_config(64) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 9, &["Watcher"], test_frame()).expect("joined");
    game.step(test_frames(1.0));
    // The watcher only looks; the bots move and fight among themselves (and shoot it).
    let bot_positions = |game: &mut LoopbackGame| -> Vec<(PlayerId, Vec3)> {
        drawn_others(&game.clients[0]).into_iter().map(|(id, s)| (id, s.pos)).collect()
    };
    let start = bot_positions(&mut game);
    assert_eq!(start.len(), 3, "the client draws every bot");
    let roster = game.clients[0].world().resource::<Roster>();
    assert_eq!(roster.bots.len(), 3, "known as bots");
    assert!(roster.bots.iter().all(|id| roster.names[id].ends_with("(bot)")));
    let mut moved = std::collections::HashSet::new();
    for _ in 0..30 {
        game.keep_alive("Watcher");
        game.step(test_frames(1.0));
        for (id, pos) in bot_positions(&mut game) {
            if start.iter().any(|(s, p)| *s == id && p.distance(pos) > 3.0) {
                moved.insert(id);
            }
        }
    }
    assert_eq!(moved.len(), 3, "every bot went somewhere");
    let stats = game.server.world().resource::<arena_server::CombatStats>();
    assert!(stats.shots > 10 && stats.hits > 0, "bots shoot and hit: {stats:?}");
    let board = &game.clients[0].world().resource::<Scoreboard>().rows;
    assert_eq!(board.len(), 4, "bots are on the scoreboard: {board:?}");
    assert!(board.iter().map(|r| r.frags.max(0) as u32).sum::<u32>() > 0, "and score: {board:?}");
}
