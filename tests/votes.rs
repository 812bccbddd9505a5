//! Votes: a vote for another map passes with a majority of the players
//! (bots and spectators do not vote) and every client loads the map; one
//! without a majority fails; a second call within a minute is refused; a
//! vote for another mode deals teams; a flood of calls is dropped.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{ChatLog, ClientWorld, NetcodeSettings, Roster, VoteAction, VoteBoard};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};
use arena_protocol::modes::Mode;
use arena_protocol::vote::{VoteCall, VoteOutcome};
use arena_server::{MatchState, ServerConfig, Votes};

fn act(game: &mut LoopbackGame, client: usize, action: VoteAction) {
    game.clients[client].world_mut().write_message(action);
}

fn board(game: &LoopbackGame, client: usize) -> &VoteBoard {
    game.clients[client].world().resource::<VoteBoard>()
}

fn outcome(game: &LoopbackGame, client: usize) -> Option<VoteOutcome> {
    board(game, client).shown.as_ref().map(|v| v.status.outcome)
}

fn said(game: &LoopbackGame, client: usize, text: &str) -> bool {
    game.clients[client].world().resource::<ChatLog>().lines.iter().any(|l| l.text.contains(text))
}

#[test]
fn a_majority_passes_a_vote_a_minority_fails_one_and_a_second_call_waits_a_minute() {
    let config = ServerConfig { bots: 2, maps: vec!["Foundry".into(), "Spire".into()], ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 3, &["Ada", "Bob", "Cy"], test_frame())
        .expect("joined");
    let dee = game.join("Dee", true, NetcodeSettings::default(), test_frame()).expect("Dee watches");

    // Ada calls for Spire; Bob says yes: 2 of the 3 players (the bots and
    // Dee, who watches, do not count).
    act(&mut game, 0, VoteAction::Call(VoteCall::Map("spire".into())));
    let open = game.step_until(test_frames(2.0), |g| outcome(g, 1) == Some(VoteOutcome::Open));
    assert!(open, "Bob never saw the vote");
    let shown = board(&game, 1).shown.clone().unwrap();
    assert_eq!(shown.status.voters, 3, "bots and spectators do not vote");
    assert_eq!(shown.status.needed(), 2);
    assert_eq!((shown.status.yes, shown.status.no), (1, 0), "the caller's own yes");
    assert_eq!(shown.question, "change the map to Spire");
    assert!(board(&game, dee).shown.is_some(), "a spectator sees the vote");
    act(&mut game, 1, VoteAction::Ballot(true));
    let passed = game.step_until(test_frames(2.0), |g| outcome(g, 2) == Some(VoteOutcome::Passed));
    assert!(passed, "two yes of three did not pass it");
    let on_spire = game.step_until(test_frames(5.0), |g| {
        g.clients.iter().all(|c| c.world().resource::<ClientWorld>().map().name == "Spire")
    });
    assert!(on_spire, "the clients did not all load Spire");
    assert!(said(&game, 2, "Vote passed (2 yes, 0 no): change the map to Spire"));
    let match_after_map = game.server.world().resource::<MatchState>().number;

    // Ada again, within the minute: refused, and told how long to wait.
    act(&mut game, 0, VoteAction::Call(VoteCall::Restart));
    let refused = game.step_until(test_frames(2.0), |g| board(g, 0).refused == 1);
    assert!(refused, "a second call within a minute was not refused");
    assert!(said(&game, 0, "one vote a minute: wait"), "Ada was not told why");
    assert_eq!(game.server.world().resource::<Votes>().stats.called, 1);

    // Bob calls a restart; Ada and Cy say no: it fails at once.
    act(&mut game, 1, VoteAction::Call(VoteCall::Restart));
    assert!(game.step_until(test_frames(2.0), |g| outcome(g, 0) == Some(VoteOutcome::Open)
        && board(g, 0).shown.as_ref().is_some_and(|v| v.status.number == 2)));
    act(&mut game, 0, VoteAction::Ballot(false));
    act(&mut game, 2, VoteAction::Ballot(false));
    let failed = game.step_until(test_frames(2.0), |g| outcome(g, 1) == Some(VoteOutcome::Failed));
    assert!(failed, "one yes of three did not fail");
    game.step(test_frames(1.0));
    assert_eq!(game.server.world().resource::<MatchState>().number, match_after_map, "no restart");
    assert_eq!(board(&game, 1).failed, 1);

    // A flood of calls from Bob: a few refused with a reason, the rest dropped.
    for _ in 0..60 {
        act(&mut game, 1, VoteAction::Call(VoteCall::Restart));
    }
    game.step(test_frames(1.0));
    let stats = game.server.world().resource::<Votes>().stats.clone();
    assert_eq!(stats.called, 2, "the flood opened no vote");
    assert!(stats.flooded >= 50, "{} of 60 dropped as a flood", stats.flooded);
    assert!(board(&game, 1).refused <= 5, "the flood got {} answers", board(&game, 1).refused);

    // Cy calls for team deathmatch; Ada says yes: the mode changes, every
    // player is on a team, and everyone is told; a new match starts on the
    // same map (the rotation does not move on).
    let match_before = game.server.world().resource::<MatchState>().number;
    act(&mut game, 2, VoteAction::Call(VoteCall::Mode(Mode::Tdm)));
    assert!(game.step_until(test_frames(2.0), |g| board(g, 0).shown.as_ref().is_some_and(|v| v.status.number == 3)));
    act(&mut game, 0, VoteAction::Ballot(true));
    let tdm = game
        .step_until(test_frames(3.0), |g| g.clients.iter().all(|c| c.world().resource::<Roster>().mode == Mode::Tdm));
    assert!(tdm, "the clients were not told of team deathmatch");
    game.step(test_frames(1.0));
    let roster = game.server.world().resource::<arena_server::Roster>();
    let mut teams = [0usize, 0];
    for entry in roster.players.values() {
        if entry.name == "Dee" {
            assert!(!entry.side.plays(), "Dee still watches");
        } else {
            let team = entry.side.team().unwrap_or_else(|| panic!("{} is on no team", entry.name));
            teams[team.index()] += 1;
        }
    }
    assert!(teams[0].abs_diff(teams[1]) <= 1, "teams of {teams:?}");
    assert!(game.server.world().resource::<MatchState>().number > match_before, "no new match");
    assert_eq!(client_map(&game, 0), "Spire", "the mode vote moved the rotation on");

    // Three votes came from this address within the minute: Ada, back
    // under a new connection, may not call a fourth.
    let refused_before = game.server.world().resource::<Votes>().stats.refused.get("too soon").copied().unwrap_or(0);
    game.clients[0].world_mut().trigger(arena_client::Disconnect);
    game.step(test_frames(0.5));
    drop(game.clients.remove(0));
    let ada = game.join("Ada", false, NetcodeSettings::default(), test_frame()).expect("Ada is back");
    act(&mut game, ada, VoteAction::Call(VoteCall::Restart));
    assert!(game.step_until(test_frames(2.0), |g| board(g, ada).refused == 1), "a reconnect got a new call");
    let stats = &game.server.world().resource::<Votes>().stats;
    assert_eq!(stats.called, 3);
    assert_eq!(stats.refused.get("too soon").copied().unwrap_or(0), refused_before + 1);
}

fn client_map(game: &LoopbackGame, client: usize) -> String {
    game.clients[client].world().resource::<ClientWorld>().map().name.clone()
}

#[test]
fn a_kick_vote_that_passes_takes_the_player_out() {
    let config = ServerConfig { bots: 1, ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 4, &["Ada", "Bob", "Cy"], test_frame())
        .expect("joined");
    let cy = game.clients[0].world().resource::<Roster>().names.iter().find(|(_, n)| *n == "Cy").map(|(id, _)| *id);
    act(&mut game, 0, VoteAction::Call(VoteCall::Kick(cy.expect("Ada knows Cy"))));
    assert!(game.step_until(test_frames(2.0), |g| outcome(g, 1) == Some(VoteOutcome::Open)));
    assert_eq!(board(&game, 1).shown.as_ref().unwrap().question, "kick Cy");
    act(&mut game, 1, VoteAction::Ballot(true));
    let gone = game.step_until(test_frames(3.0), |g| g.player("Cy").is_none());
    assert!(gone, "Cy is still on the server");
    assert!(game.step_until(test_frames(2.0), |g| arena_lab::harness::session(&g.clients[2])
        == arena_client::Session::Offline));
    assert!(said(&game, 0, "Cy was kicked by vote"), "nobody was told");
}

#[test]
fn a_server_takes_only_the_vote_kinds_it_allows() {
    let config = ServerConfig { vote_kinds: vec![arena_protocol::vote::VoteKind::Map], ..loopback_config(64) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 5, &["Ada", "Bob"], test_frame()).expect("joined");
    act(&mut game, 0, VoteAction::Call(VoteCall::Restart));
    assert!(game.step_until(test_frames(2.0), |g| board(g, 0).refused == 1), "a restart vote was taken");
    assert!(said(&game, 0, "this server takes no restart votes"));
    act(&mut game, 1, VoteAction::Call(VoteCall::Map("Spire".into())));
    assert!(game.step_until(test_frames(2.0), |g| outcome(g, 0) == Some(VoteOutcome::Open)), "a map vote was refused");
}

/// Issue 60: a listen server's host could be voted out of their own game.
/// The host plays from the server's own machine (a loopback address, which
/// no datagram from elsewhere carries): a kick vote against them is
/// refused with the reason, and nothing opens.
#[test]
fn a_listen_servers_host_is_never_voted_out() {
    let config = ServerConfig { bots: 1, kind: arena_protocol::query::ServerKind::Listen, ..loopback_config(64) };
    let mut game = LoopbackGame::start(&config, &NetcodeSettings::default(), 5, &["Host", "Bob", "Cy"], test_frame())
        .expect("joined");
    let host = game.clients[1].world().resource::<Roster>().names.iter().find(|(_, n)| *n == "Host").map(|(id, _)| *id);
    act(&mut game, 1, VoteAction::Call(VoteCall::Kick(host.expect("Bob knows the host"))));
    assert!(game.step_until(test_frames(2.0), |g| board(g, 1).refused == 1), "the call was taken");
    assert!(said(&game, 1, "the host cannot be voted out"), "Bob was not told why");
    game.step(test_frames(0.5));
    assert_eq!(outcome(&game, 2), None, "a vote opened");
    assert!(game.player("Host").is_some());
    let stats = &game.server.world().resource::<Votes>().stats;
    assert_eq!((stats.called, stats.refused.get("the host").copied()), (0, Some(1)));
}
