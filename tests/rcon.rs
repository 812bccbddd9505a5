//! The remote console, end to end over real UDP: `arena rcon` (the real
//! binary) with the right password runs `status` and `kick` on a server
//! with two players; a wrong password, a replayed command datagram and a
//! flood change nothing and are counted; no answer to a datagram whose MAC
//! did not check is bigger than that datagram.

// Tests: a failed expectation is the failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};

use arena_client::{NetcodeSettings, Session};
use arena_lab::harness::{LoopbackGame, loopback_config, session, test_frame, test_frames};
use arena_protocol::rcon::{self, Packet, RconKey};
use arena_server::{MatchRules, ServerConfig, ServerTransport};

const PASSWORD: &str = "correct horse battery staple";

fn server_addr(game: &LoopbackGame) -> SocketAddr {
    game.server.world().resource::<ServerTransport>().local_addr().expect("bound")
}

fn counters(game: &LoopbackGame) -> arena_server::RconCounters {
    game.server.world().resource::<ServerTransport>().rcon_counters()
}

fn frag_limit(game: &LoopbackGame) -> u16 {
    game.server.world().resource::<MatchRules>().frag_limit
}

/// `arena rcon ADDR COMMAND` with `password` (the command's words split at
/// spaces), run while the game steps; its status, stdout and stderr.
fn arena_rcon(game: &mut LoopbackGame, password: &str, command: &str) -> (bool, String, String) {
    let words: Vec<&str> = command.split(' ').collect();
    arena_rcon_words(game, password, &words, |_| {})
}

/// `arena rcon ADDR WORDS...` with `password`, run while the game steps,
/// `each_frame` called before each step; its status, stdout and stderr.
fn arena_rcon_words(
    game: &mut LoopbackGame,
    password: &str,
    words: &[&str],
    mut each_frame: impl FnMut(&LoopbackGame),
) -> (bool, String, String) {
    let addr = server_addr(game);
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["rcon", &addr.to_string(), "--wait-ms", "2000"])
        .args(words)
        .env("ARENA_RCON_PASSWORD", password)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arena runs");
    for _ in 0..test_frames(10.0) {
        each_frame(game);
        game.step(1);
        std::thread::sleep(test_frame());
        if child.try_wait().expect("waits").is_some() {
            break;
        }
    }
    let out = child.wait_with_output().expect("arena ends");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Sends `datagram` and steps the game until an answer comes (or a while
/// has passed); every datagram that came.
fn exchange(game: &mut LoopbackGame, socket: &UdpSocket, datagram: &[u8]) -> Vec<Vec<u8>> {
    socket.send_to(datagram, server_addr(game)).expect("sent");
    let mut got = Vec::new();
    let mut buffer = [0u8; 2048];
    for _ in 0..test_frames(0.5) {
        game.step(1);
        while let Ok((len, _)) = socket.recv_from(&mut buffer) {
            got.push(buffer[..len].to_vec());
        }
        if !got.is_empty() {
            // The rest of a multi-part answer comes in the same frame.
            game.step(2);
            while let Ok((len, _)) = socket.recv_from(&mut buffer) {
                got.push(buffer[..len].to_vec());
            }
            break;
        }
    }
    got
}

fn challenge(game: &mut LoopbackGame, socket: &UdpSocket) -> rcon::Challenge {
    let request = Packet::ChallengeRequest.encode();
    let got = exchange(game, socket, &request);
    match got.first().map(|d| Packet::parse(d)) {
        Some(Ok(Packet::Challenge { challenge, .. })) => {
            assert!(got[0].len() <= request.len(), "a challenge bigger than its request");
            challenge
        }
        other => panic!("no challenge: {other:?}"),
    }
}

#[test]
fn rcon_runs_status_and_kick_with_the_password_and_refuses_the_rest() {
    let config =
        ServerConfig { rcon_key: Some(RconKey::with_new_salt(PASSWORD).expect("a key")), ..loopback_config(64) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 40, &["Ada", "Bob"], test_frame()).expect("joined");
    game.step(test_frames(0.5));

    // The right password: status lists both players, kick takes Bob out.
    let (ok, out, err) = arena_rcon(&mut game, PASSWORD, "status");
    assert!(ok, "status failed: {err}");
    assert!(out.contains("Ada") && out.contains("Bob") && out.contains("rtt ms"), "{out}");
    let (ok, out, err) = arena_rcon(&mut game, PASSWORD, "kick Bob");
    assert!(ok, "kick failed: {err}");
    assert!(out.contains("Bob was kicked"), "{out}");
    assert!(game.step_until(test_frames(3.0), |g| session(&g.clients[1]) != Session::InGame), "Bob is still in");
    let roster = game.server.world().resource::<arena_server::Roster>();
    assert!(roster.players.values().all(|e| e.name != "Bob"), "Bob is still on the roster");
    assert_eq!(counters(&game).commands_accepted, 2);

    // A bot added from the console is announced to the players in the game.
    let (ok, _, err) = arena_rcon(&mut game, PASSWORD, "bot_quota 1");
    assert!(ok, "bot_quota failed: {err}");
    let announced = game.step_until(test_frames(2.0), |g| {
        g.clients[0].world().resource::<arena_client::Roster>().names.values().any(|n| n.ends_with("(bot)"))
    });
    assert!(announced, "Ada's client never heard of the bot");
    game.step(test_frames(2.0));

    // A wrong password: refused, told, counted; nothing changes.
    let before = frag_limit(&game);
    let (ok, _, err) = arena_rcon(&mut game, "hunter2", "mp_fraglimit 1");
    assert!(!ok && err.contains("wrong"), "{err}");
    assert_eq!(frag_limit(&game), before);
    assert_eq!(counters(&game).bad_mac, 1);
    assert_eq!(counters(&game).commands_accepted, 3);

    // A replayed command: the first run sets 7, a second command 9; the
    // first sent again is refused, counted, and 9 stays.
    // (Two seconds on: the address's rate limit refills.)
    game.step(test_frames(2.0));
    // The server's own key (its salt is its own).
    let key = config.rcon_key.clone().expect("a key");
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    socket.set_nonblocking(true).expect("nonblocking");
    let first = Packet::command(&key, challenge(&mut game, &socket), "mp_fraglimit 7").expect("a command").encode();
    let answer = exchange(&mut game, &socket, &first);
    assert!(matches!(answer.first().map(|d| Packet::parse(d)), Some(Ok(Packet::Answer { .. }))), "{answer:?}");
    assert_eq!(frag_limit(&game), 7);
    let second = Packet::command(&key, challenge(&mut game, &socket), "mp_fraglimit 9").expect("a command").encode();
    exchange(&mut game, &socket, &second);
    assert_eq!(frag_limit(&game), 9);
    game.step(test_frames(0.6));
    let refused = exchange(&mut game, &socket, &first);
    assert_eq!(frag_limit(&game), 9, "the replay ran");
    assert_eq!(counters(&game).replays, 1);
    for datagram in &refused {
        assert!(datagram.len() <= first.len(), "a refusal bigger than the replay");
        assert!(matches!(Packet::parse(datagram), Ok(Packet::Refused { .. })), "{datagram:?}");
    }

    // A flood from one address: challenge requests and commands with made-up
    // challenges and MACs, all in one frame. At most a few are judged; none
    // runs; every answer is no bigger than its request.
    let flood_socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    flood_socket.set_nonblocking(true).expect("nonblocking");
    let request = Packet::ChallengeRequest.encode();
    let forged = Packet::Command {
        challenge: [7; 16],
        sealed: rcon::Sealed { nonce: [9; rcon::NONCE_BYTES], bytes: vec![9; 14 + rcon::TAG_BYTES] },
    }
    .encode();
    let before = counters(&game);
    let addr = server_addr(&game);
    for i in 0..500 {
        let datagram = if i % 2 == 0 { &request } else { &forged };
        let _ = flood_socket.send_to(datagram, addr);
    }
    game.step(test_frames(0.25));
    let mut buffer = [0u8; 2048];
    let mut answers = 0;
    while let Ok((len, _)) = flood_socket.recv_from(&mut buffer) {
        answers += 1;
        assert!(len <= request.len().min(forged.len()), "an answer of {len} bytes to a flood");
    }
    let after = counters(&game);
    assert_eq!(frag_limit(&game), 9, "the flood changed something");
    assert_eq!(after.commands_accepted, before.commands_accepted);
    let judged =
        (after.challenges_issued - before.challenges_issued) + (after.unknown_challenge - before.unknown_challenge);
    // (The kernel's receive buffer holds a few hundred of the 500.)
    let limited = after.limited - before.limited;
    assert!(judged + limited >= 200, "the flood did not arrive: {before:?} → {after:?}");
    assert!(limited >= judged + limited - 20, "the flood was not limited: {before:?} → {after:?}");
    assert!(judged <= 20 && answers <= 40, "{judged} judged, {answers} answered");
}

#[test]
fn a_range_refuses_matches_and_bots_from_the_console() {
    let config = ServerConfig {
        rcon_key: Some(RconKey::with_new_salt(PASSWORD).expect("a key")),
        range: true,
        bots: 0,
        ..loopback_config(64)
    };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 41, &["Ada"], test_frame()).expect("joined");
    let players = game.server.world().resource::<arena_server::Roster>().players.len();
    // One argument is a console line as typed: two commands.
    let (ok, out, _) = arena_rcon_words(&mut game, PASSWORD, &["map foundry; bot_quota 0"], |_| {});
    assert!(ok);
    assert!(out.contains("a shooting range plays no matches"), "{out}");
    game.step(test_frames(0.5));
    assert_eq!(game.server.world().resource::<arena_server::Roster>().players.len(), players, "targets went");
    let (_, out, _) = arena_rcon(&mut game, PASSWORD, "bot_quota 0");
    assert!(out.contains("a shooting range has targets, not bots"), "{out}");
    assert!(game.server.world().resource::<arena_server::MatchState>().phase == arena_protocol::MatchPhase::Playing);
}

/// Issue 60's finding 1, with the real binary: 9-byte garbage from the
/// administrator's own address 8 times a second, then well-formed
/// challenge requests at 400 a second from 200 other addresses. Before the
/// fix `arena rcon status` succeeded 2 and 1 times of 5; now 5 of 5 under
/// each, and the flood is counted (the garbage as malformed).
#[test]
fn rcon_status_gets_through_floods_of_garbage_and_of_strangers() {
    let config =
        ServerConfig { rcon_key: Some(RconKey::with_new_salt(PASSWORD).expect("a key")), ..loopback_config(64) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 40, &["Ada"], test_frame()).expect("joined");
    game.step(test_frames(0.5));
    let addr = server_addr(&game);
    let garbage = [0xFF, 0xFF, 0xFF, 0xFF, b'r', b'c', b'o', b'n', 7];
    let own = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let before = counters(&game);
    let mut frame = 0u64;
    let mut garbage_frame = |_: &LoopbackGame| {
        frame += 1;
        // 8 a second at 128 frames a second.
        if frame.is_multiple_of(16) {
            let _ = own.send_to(&garbage, addr);
        }
    };
    for _ in 0..5 {
        // A second of the flood before each call, and the flood through it.
        for _ in 0..test_frames(1.0) {
            garbage_frame(&game);
            game.step(1);
        }
        let (ok, out, err) = arena_rcon_words(&mut game, PASSWORD, &["status"], &mut garbage_frame);
        assert!(ok && out.contains("Ada"), "status under garbage failed: {err}");
    }
    let after = counters(&game);
    assert!(after.malformed - before.malformed >= 30, "the garbage never came: {after:?}");
    assert_eq!(after.commands_accepted - before.commands_accepted, 5);

    // (Two seconds on: the administrator's own address's rate limit refills.)
    game.step(test_frames(2.0));
    // 200 other addresses of the loopback network (Linux answers all of
    // 127/8), asking for challenges in turn: 400 a second is 3 or 4 a frame.
    let strangers: Vec<UdpSocket> =
        (2..202u32).filter_map(|i| UdpSocket::bind((std::net::Ipv4Addr::from(0x7F00_0000 | i), 0)).ok()).collect();
    assert_eq!(strangers.len(), 200, "the loopback addresses could not be bound");
    for s in &strangers {
        s.set_nonblocking(true).expect("nonblocking");
    }
    let request = Packet::ChallengeRequest.encode();
    let before = counters(&game);
    let mut sent = 0usize;
    let mut frame = 0usize;
    let mut stranger_frame = |_: &LoopbackGame| {
        frame += 1;
        while sent < frame * 400 / 128 {
            let _ = strangers[sent % strangers.len()].send_to(&request, addr);
            sent += 1;
        }
    };
    for _ in 0..5 {
        for _ in 0..test_frames(1.0) {
            stranger_frame(&game);
            game.step(1);
        }
        let (ok, out, err) = arena_rcon_words(&mut game, PASSWORD, &["status"], &mut stranger_frame);
        assert!(ok && out.contains("Ada"), "status under the strangers' flood failed: {err}");
    }
    let after = counters(&game);
    assert!(
        after.challenges_issued - before.challenges_issued >= 1500,
        "the strangers' flood never came ({sent} sent): {after:?}"
    );
    assert_eq!(after.commands_accepted - before.commands_accepted, 5);
}

/// Issue 60's finding 2, with the real binary: a player who calls itself
/// `#0;sv_password 1` joins as `0sv_password 1`, and the administrator's
/// natural `arena rcon ADDR kick '#0;sv_password 1'` kicks nobody and sets
/// no password (before the fix it kicked player #0 and set the password to
/// `1`); the name as `status` lists it kicks that player.
#[test]
fn a_name_never_runs_console_commands() {
    let config =
        ServerConfig { rcon_key: Some(RconKey::with_new_salt(PASSWORD).expect("a key")), ..loopback_config(64) };
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 42, &["Ada", "#0;sv_password 1"], test_frame())
            .expect("joined");
    game.step(test_frames(0.5));
    let names = |game: &LoopbackGame| -> Vec<String> {
        game.server.world().resource::<arena_server::Roster>().players.values().map(|e| e.name.clone()).collect()
    };
    assert!(names(&game).contains(&"0sv_password 1".to_string()), "{:?}", names(&game));
    let (ok, out, err) = arena_rcon_words(&mut game, PASSWORD, &["status"], |_| {});
    assert!(ok && out.contains("0sv_password 1") && !out.contains("#0;"), "{out}{err}");

    let (_, out, _) = arena_rcon_words(&mut game, PASSWORD, &["kick", "#0;sv_password 1"], |_| {});
    assert!(!out.contains("kicked"), "{out}");
    game.step(test_frames(0.5));
    assert_eq!(names(&game).len(), 2, "someone was kicked: {:?}", names(&game));
    assert!(!game.server.world().resource::<ServerTransport>().has_password(), "the name set a password");
    let (_, out, _) = arena_rcon_words(&mut game, PASSWORD, &["sv_password"], |_| {});
    assert!(out.contains("(none)"), "{out}");

    let (ok, out, err) = arena_rcon_words(&mut game, PASSWORD, &["kick", "0sv_password 1"], |_| {});
    assert!(ok && out.contains("was kicked"), "{out}{err}");
    game.step(test_frames(1.0));
    assert_eq!(names(&game), ["Ada"]);
}

/// Issue 60: a new `sv_password` ran Argon2id on the game thread, so the
/// tick that took it stalled for as long as the key took (a hitch every
/// player feels). Now the key is made on a thread of its own: the frame
/// that runs the line takes well under the key's time, and the password is
/// in force a moment later.
#[test]
fn a_new_sv_password_never_stalls_a_tick() {
    let config = loopback_config(64);
    let mut game =
        LoopbackGame::start(&config, &NetcodeSettings::default(), 43, &["Ada"], test_frame()).expect("joined");
    game.step(test_frames(0.5));
    let started = std::time::Instant::now();
    arena_protocol::key::Password::new("measure the key").unwrap().key().unwrap();
    let key_time = started.elapsed();
    assert!(!game.server.world().resource::<ServerTransport>().has_password());
    game.server
        .world_mut()
        .resource_mut::<arena_server::ConsoleLines>()
        .push(arena_server::ConsoleSource::Terminal, "sv_password hunter22".into());
    let started = std::time::Instant::now();
    game.server.update();
    let frame = started.elapsed();
    assert!(frame < key_time / 2, "the frame took {frame:?}; the key takes {key_time:?}");
    let in_force = game.step_until(test_frames(5.0), |g| g.server.world().resource::<ServerTransport>().has_password());
    assert!(in_force, "the new password never came into force");
}
