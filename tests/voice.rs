//! Voice over real UDP on 127.0.0.1, on a team deathmatch server: a
//! talker's voice reaches its teammate close to what it said, and neither
//! the enemy nor a spectator while the match is played; a player its
//! listener muted is not played; a talker sending ten times its budget is
//! cut to its budget and counted, and the others' snapshots and voice go on
//! as before; a server with voice off passes nothing on.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use arena_client::voice::{VoiceFile, VoiceInput, VoiceRecording, VoiceStats, similarity, speech_like, voice_counts};
use arena_client::{ChatLog, ClientStats, NetcodeSettings};
use arena_lab::harness::{LoopbackGame, loopback_config, test_frame, test_frames};
use arena_protocol::modes::{Mode, Side, Team};
use arena_protocol::voice::SAMPLE_RATE_HZ;
use arena_server::ServerConfig;

/// What a teammate must hear of the talker, at least (see the note on how
/// the figure is computed: `arena_client::voice::similarity`).
const HEARD_SIMILARITY: f64 = 0.8;

fn config(voice: bool) -> ServerConfig {
    ServerConfig { mode: Mode::Tdm, voice, ..loopback_config(64) }
}

fn side(game: &LoopbackGame, name: &str) -> Side {
    let roster = game.server.world().resource::<arena_server::Roster>();
    roster.players.values().find(|e| e.name == name).map(|e| e.side).expect("in the roster")
}

/// Talker (red), Foe (blue), Mate (red), and Watcher spectating; everyone
/// but the talker keeps what it hears.
fn game(voice: bool, seed: u64) -> (LoopbackGame, usize) {
    let mut game = LoopbackGame::start(
        &config(voice),
        &NetcodeSettings::default(),
        seed,
        &["Talker", "Foe", "Mate"],
        test_frame(),
    )
    .expect("joined");
    let watcher = game.join("Watcher", true, NetcodeSettings::default(), test_frame()).expect("the spectator joined");
    let (red, blue) = (Side::Team(Team::Red), Side::Team(Team::Blue));
    assert_eq!([side(&game, "Talker"), side(&game, "Foe"), side(&game, "Mate")], [red, blue, red]);
    assert_eq!(side(&game, "Watcher"), Side::Spectating);
    for client in [1, 2, watcher] {
        game.clients[client].insert_resource(VoiceRecording::default());
    }
    game.step(test_frames(1.0));
    (game, watcher)
}

fn talk(game: &mut LoopbackGame, client: usize, said: &Arc<Vec<i16>>) {
    game.clients[client].insert_resource(VoiceFile::new(Arc::clone(said), 0.0));
}

fn heard(game: &LoopbackGame, client: usize) -> Vec<i16> {
    game.clients[client].world().resource::<VoiceRecording>().0.clone()
}

fn loud(samples: &[i16]) -> usize {
    samples.iter().filter(|s| s.unsigned_abs() > 300).count()
}

#[test]
fn the_teammate_hears_the_talker_and_the_enemy_the_spectator_and_a_muter_do_not() {
    let (mut game, watcher) = game(true, 59);
    let said = Arc::new(speech_like(3.0, SAMPLE_RATE_HZ, 1));
    talk(&mut game, 0, &said);
    game.step(test_frames(4.0));

    let mate = heard(&game, 2);
    let likeness = similarity(&said, &mate, SAMPLE_RATE_HZ);
    println!("the teammate heard the talker with similarity {likeness:.3}");
    assert!(likeness >= HEARD_SIMILARITY, "the teammate heard it: similarity {likeness:.3}");
    let sent = game.clients[0].world().resource::<VoiceStats>().sent_frames;
    assert!((150..=152).contains(&sent), "3 s of 20 ms frames and the last: {sent}");
    let counts = voice_counts(game.clients[2].world().resource::<VoiceStats>(), game.clients[2].world());
    assert_eq!(counts.played, sent, "every frame played from its own bytes on a clean link: {counts:?}");
    assert_eq!(loud(&heard(&game, 1)), 0, "the enemy heard nothing");
    assert_eq!(loud(&heard(&game, watcher)), 0, "the spectator heard nothing while the match is played");
    let foe = voice_counts(game.clients[1].world().resource::<VoiceStats>(), game.clients[1].world());
    assert_eq!(foe.received, 0, "nothing was even sent to the enemy");

    // The teammate mutes the talker: its next words are not played.
    let talker = game.id_of("Talker").unwrap();
    game.clients[2].world_mut().resource_mut::<ChatLog>().set_muted(talker, "Talker", true);
    game.clients[2].world_mut().resource_mut::<VoiceRecording>().0.clear();
    talk(&mut game, 0, &said);
    game.step(test_frames(4.0));
    assert_eq!(loud(&heard(&game, 2)), 0, "a muted talker is not played");
    let muted = game.clients[2].world().resource::<VoiceStats>().muted_frames;
    assert!(muted >= 150, "its frames were counted and dropped: {muted}");
}

#[test]
fn a_talker_at_ten_times_its_budget_is_cut_to_it_and_nobody_else_notices() {
    let (mut game, _) = game(true, 61);
    // Mate talks normally while Talker floods: ten seconds of samples a second.
    let said = Arc::new(speech_like(3.0, SAMPLE_RATE_HZ, 2));
    talk(&mut game, 2, &said);
    let flood = speech_like(1.0, SAMPLE_RATE_HZ, 3);
    let snapshots_before = game.clients[1].world().resource::<ClientStats>().snapshots_received;
    let frame_samples = (f64::from(SAMPLE_RATE_HZ) * test_frame().as_secs_f64()).round() as usize;
    let frames = test_frames(4.0);
    for i in 0..frames {
        let mut input = game.clients[0].world_mut().resource_mut::<VoiceInput>();
        if i < test_frames(3.0) {
            input.held = true;
            let at = (i * frame_samples * 10) % (flood.len() - frame_samples * 10);
            input.feed(&flood[at..at + frame_samples * 10]);
        } else {
            input.held = false;
        }
        game.step(1);
    }
    let sent = game.clients[0].world().resource::<VoiceStats>().sent_frames;
    assert!(sent >= 1400, "the flood: {sent} frames in 3 s");
    let stats = game.server.world().resource::<arena_server::VoiceStats>();
    let dropped = stats.dropped.get("over the talker's budget").copied().unwrap_or(0);
    assert!(dropped >= sent * 3 / 4, "most of the flood dropped and counted: {dropped} of {sent}");

    // The foe (blue) heard neither, and got its snapshots as ever: 64 a second.
    let snapshots = game.clients[1].world().resource::<ClientStats>().snapshots_received - snapshots_before;
    assert!(snapshots >= 250, "the foe's snapshots went on: {snapshots} in 4 s");
    // Talker (red) heard Mate's words whole beside its own flood: every
    // frame played.
    let talker_heard = {
        let world = game.clients[0].world();
        voice_counts(world.resource::<VoiceStats>(), world)
    };
    let mate_sent = game.clients[2].world().resource::<VoiceStats>().sent_frames;
    assert!(mate_sent >= 150, "{mate_sent}");
    assert_eq!(talker_heard.played, mate_sent, "the other talker's voice went on: {talker_heard:?}");
    let mate_to_foe = loud(&heard(&game, 1));
    assert_eq!(mate_to_foe, 0, "the enemy heard nothing of either");
}

#[test]
fn a_server_with_voice_off_passes_nothing_on() {
    let (mut game, _) = game(false, 62);
    let said = Arc::new(speech_like(1.0, SAMPLE_RATE_HZ, 4));
    talk(&mut game, 0, &said);
    game.step(test_frames(2.0));
    assert!(game.clients[0].world().resource::<VoiceStats>().sent_frames >= 50);
    assert_eq!(loud(&heard(&game, 2)), 0);
    let stats = game.server.world().resource::<arena_server::VoiceStats>();
    assert!(stats.dropped.get("voice off").copied().unwrap_or(0) >= 50, "{:?}", stats.dropped);
}
