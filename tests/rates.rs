//! The paper's rate variables, each felt by the client that set it and by
//! nobody else: `cl_updaterate` (fewer snapshots, still drawn smoothly),
//! `cl_cmdrate` (fewer command packets, every command still run), `rate`
//! (snapshot bytes a second held under the limit, snapshots left out).

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use arena_client::{ClientStats, LocalInput, MessageTally, NetcodeSettings};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};
use arena_server::{ServerConfig, ServerStats};

const HZ: u32 = 64;
const SECONDS: f64 = 4.0;

fn snapshots(game: &LoopbackGame, i: usize) -> u64 {
    game.clients[i].world().resource::<ClientStats>().snapshots_received
}

fn commands_sent(game: &LoopbackGame, i: usize) -> u64 {
    game.clients[i].world().resource::<ClientStats>().commands_sent
}

fn snapshot_bytes(game: &LoopbackGame, i: usize) -> u64 {
    game.clients[i].world().resource::<MessageTally>().down.get("snapshot").map_or(0, |(_, bytes)| *bytes)
}

/// A 64 Hz server with `bots` bots, "Ada" with the defaults, and "Bob" with
/// `bob`'s settings.
fn game(bots: usize, bob: NetcodeSettings) -> LoopbackGame {
    let config = ServerConfig { bots, ..loopback_config(HZ) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 44, &["Ada"], test_frame()).expect("Ada joined");
    game.join("Bob", false, bob, test_frame()).expect("Bob joined");
    // The settings reach the server, the clocks settle.
    game.step(test_frames(1.0));
    game
}

#[test]
fn cl_updaterate_asks_for_fewer_snapshots_and_they_still_come_evenly() {
    let mut game = game(2, NetcodeSettings { update_rate: 16, ..NetcodeSettings::default() });
    let before = (snapshots(&game, 0), snapshots(&game, 1));
    game.step(test_frames(SECONDS));
    let ada = (snapshots(&game, 0) - before.0) as f64 / SECONDS;
    let bob = (snapshots(&game, 1) - before.1) as f64 / SECONDS;
    assert!((60.0..=68.0).contains(&ada), "Ada (all) got {ada} a second");
    assert!((14.0..=18.0).contains(&bob), "Bob (16 asked) got {bob} a second");
    // Bob's client draws by the rate it gets: its default delay is two of its intervals.
    let roster = game.clients[1].world().resource::<arena_client::Roster>();
    assert_eq!(roster.snapshot_rate().hz(), 16);
    assert!(game.server.world().resource::<ServerStats>().snapshots_not_asked > 0);
    // And Bob still sees the others move.
    assert!(game.drawn_other(1).is_some(), "Bob draws nobody");
}

#[test]
fn cl_cmdrate_sends_fewer_packets_and_every_command_still_runs() {
    let mut game = game(0, NetcodeSettings { cmd_rate: 16, ..NetcodeSettings::default() });
    let before = (commands_sent(&game, 0), commands_sent(&game, 1));
    let start = game.sim("Bob").expect("Bob plays").pos;
    let buffer_stats = |game: &LoopbackGame| {
        let bob = game.player("Bob").expect("Bob's entity");
        game.server.world().get::<arena_server::CommandBuffer>(bob).expect("a buffer").stats
    };
    let stats_before = buffer_stats(&game);
    game.clients[1].world_mut().resource_mut::<LocalInput>().forward = 1.0;
    game.step(test_frames(SECONDS));
    let ada = (commands_sent(&game, 0) - before.0) as f64 / SECONDS;
    let bob = (commands_sent(&game, 1) - before.1) as f64 / SECONDS;
    assert!(ada >= 55.0, "Ada (a packet a tick) sent {ada} a second");
    assert!((12.0..=18.0).contains(&bob), "Bob (16 a second) sent {bob} a second");
    // Bob walked as far as a packet a tick would have taken him: the server
    // ran his commands, none lost for their coming together.
    let walked = game.sim("Bob").expect("Bob plays").pos.distance(start);
    assert!(walked > 3.0, "Bob walked {walked} m in {SECONDS} s");
    let stats = buffer_stats(&game);
    let (missing, run) = (stats.missing - stats_before.missing, stats.run - stats_before.run);
    assert!(
        missing * 50 <= run,
        "Bob's commands missed their tick {missing} times in {run} (the clock leads by enough)"
    );
}

#[test]
fn rate_holds_snapshot_bytes_under_the_limit() {
    const RATE: u32 = 2_000;
    let mut game = game(14, NetcodeSettings { rate: RATE, ..NetcodeSettings::default() });
    let before = (snapshot_bytes(&game, 0), snapshot_bytes(&game, 1));
    game.step(test_frames(SECONDS));
    let ada = (snapshot_bytes(&game, 0) - before.0) as f64 / SECONDS;
    let bob = (snapshot_bytes(&game, 1) - before.1) as f64 / SECONDS;
    assert!(ada > f64::from(RATE), "Ada (no limit) takes {ada} B/s: the test needs more than the limit");
    assert!(bob <= f64::from(RATE) * 1.1, "Bob (rate {RATE}) got {bob} B/s");
    assert!(game.server.world().resource::<ServerStats>().snapshots_over_rate > 0);
    assert!(snapshots(&game, 1) > 0);
}
