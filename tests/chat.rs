//! Chat over real UDP on 127.0.0.1: the server passes a line on to every
//! player with its speaker, cleaned of control characters and
//! bidirectional overrides; 10 lines in a second from one player give 3
//! delivered and 7 refused (told to the sender alone, with the reason); a
//! team line where there are no teams is refused; a muted player's lines
//! are not shown; a bot says one "gg" when a match ends.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{ChatLog, NetcodeSettings, SayChat};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};
use arena_server::ChatStats;

fn say(game: &mut LoopbackGame, client: usize, text: &str, team: bool) {
    game.clients[client].world_mut().write_message(SayChat { text: text.into(), team });
}

fn log(game: &LoopbackGame, client: usize) -> &ChatLog {
    game.clients[client].world().resource::<ChatLog>()
}

#[test]
fn lines_reach_everyone_cleaned_and_a_flood_is_cut_to_the_burst() {
    let mut game =
        LoopbackGame::start(&loopback_config(64), &NetcodeSettings::default(), 7, &["Ada", "Bob"], test_frame())
            .expect("joined");
    game.step(test_frames(1.0));

    // One line with a right-to-left override and a bell in it.
    say(&mut game, 0, "gg \u{202E}wp\u{0007}  all", false);
    game.step(test_frames(0.5));
    let bob = log(&game, 1);
    let line = bob.lines.back().expect("Bob got the line");
    assert_eq!((line.from.as_deref(), line.text.as_str(), line.team), (Some("Ada"), "gg wp all", false));
    assert_eq!(bob.received, 1);

    // A second later (the burst refilled): ten lines in one frame.
    game.step(test_frames(3.0));
    for i in 0..10 {
        say(&mut game, 0, &format!("spam {i}"), false);
    }
    game.step(test_frames(0.5));
    let (ada, bob) = (log(&game, 0), log(&game, 1));
    let spam_seen = bob.lines.iter().filter(|l| l.text.starts_with("spam")).count();
    assert_eq!(spam_seen, 3, "three delivered: {:?}", bob.lines);
    assert_eq!(ada.refused, 7, "seven refused, to the sender: {:?}", ada.lines);
    assert_eq!(bob.refused, 0, "nobody else hears of the refusals");
    assert!(ada.lines.iter().any(|l| l.from.is_none() && l.text.contains("at most one message a second")));

    // A team line with no teams: refused, with the reason.
    game.step(test_frames(4.0));
    say(&mut game, 1, "push B", true);
    game.step(test_frames(0.5));
    assert_eq!(log(&game, 1).refused, 1);
    assert!(log(&game, 1).lines.back().is_some_and(|l| l.text.contains("no teams")));
    assert!(!log(&game, 0).lines.iter().any(|l| l.text == "push B"));

    // Bob mutes Ada: her next line is not shown to him, and she still sees it.
    let ada_id = game.id_of("Ada").unwrap();
    game.clients[1].world_mut().resource_mut::<ChatLog>().set_muted(ada_id, "Ada", true);
    game.step(test_frames(3.0));
    say(&mut game, 0, "anyone there?", false);
    game.step(test_frames(0.5));
    assert!(!log(&game, 1).lines.iter().any(|l| l.text == "anyone there?"), "muted");
    assert_eq!(log(&game, 1).muted_lines, 1);
    assert!(log(&game, 0).lines.iter().any(|l| l.text == "anyone there?"));

    let stats = game.server.world().resource::<ChatStats>();
    assert_eq!(stats.passed, 5);
    assert_eq!(stats.refused.get("too fast"), Some(&7));
    assert_eq!(stats.refused.get("team chat without teams"), Some(&1));
}

#[test]
fn a_bot_says_gg_once_when_a_match_ends() {
    let config = arena_server::ServerConfig {
        bots: 2,
        rules: arena_server::MatchRules { frag_limit: 20, time_limit_s: 2, results_s: 2 },
        ..loopback_config(64)
    };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 9, &["Ada"], test_frame()).expect("joined");
    // Two matches of 2 s, each with 2 s of results.
    game.step(test_frames(9.0));
    let ada = log(&game, 0);
    let gg: Vec<_> = ada.lines.iter().filter(|l| l.text == "gg").collect();
    assert_eq!(gg.len(), 2, "one gg per match that ended: {:?}", ada.lines);
    assert!(gg.iter().all(|l| l.from.as_deref().is_some_and(|n| n != "Ada")), "said by a bot: {gg:?}");
}

#[test]
fn chat_lines_go_into_the_recorded_demo() {
    let dir = std::env::temp_dir().join(format!("arena-chat-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = arena_server::ServerConfig { record_dir: Some(dir.clone()), ..loopback_config(64) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 12, &["Ada", "Bob"], test_frame()).expect("joined");
    game.step(test_frames(1.0));
    say(&mut game, 0, "recorded \u{202E}line", false);
    game.step(test_frames(1.0));
    let ada = game.id_of("Ada").unwrap();
    // Stopping the server finishes the demo.
    drop(game);
    let file = std::fs::read_dir(&dir).unwrap().filter_map(Result::ok).map(|e| e.path()).next().expect("a demo");
    let reader = arena_protocol::demo::DemoReader::open(std::fs::read(&file).unwrap()).expect("opens");
    let lines: Vec<_> = (0..reader.chunks.len())
        .flat_map(|i| arena_replay::chunk_frames(&reader, i).expect("frames"))
        .flat_map(|f| f.chat)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!((lines[0].from, lines[0].team, lines[0].text.as_str()), (ada, false, "recorded line"));
    assert_eq!(lines[0].name, "Ada");
    let _ = std::fs::remove_dir_all(&dir);
}
