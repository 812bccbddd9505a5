//! A dedicated server, the real `arena server` process, stopped the way
//! Docker, systemd and Kubernetes stop it (SIGTERM): its players are told at
//! once, with the reason, and it exits 0, its demo of the match finished
//! (its last chunk and index written) and replaying as recorded; one killed
//! outright (SIGKILL) leaves a demo whole up to its last chunk.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arena_client::{LastDisconnect, NetcodeSettings, Session};
use arena_lab::harness::{client_app_with, session, test_frame};
use bevy::prelude::*;

/// Updates the clients in real time (a frame, then a frame's sleep) until
/// `done` holds or `limit` passes; returns whether it held.
fn run_until(clients: &mut [App], limit: Duration, mut done: impl FnMut(&[App]) -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        for client in clients.iter_mut() {
            client.update();
        }
        if done(clients) {
            return true;
        }
        std::thread::sleep(test_frame());
    }
    false
}

/// Waits up to `limit` for the process to end.
fn wait_for(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// `arena server` with `bots` bots, recording into a fresh folder named
/// after `what`: the child, its address and the folder.
fn recording_server(what: &str, bots: u32, stderr: Stdio) -> (Child, SocketAddr, std::path::PathBuf) {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let demos = std::env::temp_dir().join(format!("arena-{what}-demos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&demos);
    let server = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["server", "--bind", &addr.to_string(), "--seconds", "60", "--bots", &bots.to_string()])
        .args(["--bot-seed", "5", "--record"])
        .arg(&demos)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("arena server starts");
    (server, addr, demos)
}

/// `arena demo verify` of the one demo in `demos`: it passes, and its report.
fn verify_the_demo(demos: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    let files: Vec<_> = std::fs::read_dir(demos).expect("the demo directory").map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_arena")).args(["demo", "verify"]).arg(&files[0]).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("demo verify: {report}");
    assert!(out.status.success(), "{report} {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(&report).expect("one JSON object");
    assert_eq!(json["ok"], true, "{json}");
    (files[0].clone(), json)
}

#[test]
fn sigterm_tells_both_clients_at_once_and_the_server_exits_0() {
    let (mut server, addr, demos) = recording_server("sigterm", 3, Stdio::piped());
    let mut clients: Vec<App> = ["Ada", "Bob"]
        .iter()
        .map(|name| client_app_with(test_frame(), addr, name, NetcodeSettings::default()))
        .collect();
    let joined = run_until(&mut clients, Duration::from_secs(15), |c| c.iter().all(|c| session(c) == Session::InGame));
    if !joined {
        let _ = server.kill();
        panic!("both clients joined the server");
    }
    run_until(&mut clients, Duration::from_millis(2500), |_| false);

    let status = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().expect("kill runs");
    assert!(status.success(), "SIGTERM sent");
    let sent = Instant::now();
    let told = run_until(&mut clients, Duration::from_secs(3), |c| c.iter().all(|c| session(c) == Session::Offline));
    let after = sent.elapsed();
    let reasons: Vec<String> =
        clients.iter().map(|c| c.world().resource::<LastDisconnect>().0.clone().unwrap_or_default()).collect();
    let exit = wait_for(&mut server, Duration::from_secs(5));
    if exit.is_none() {
        let _ = server.kill();
    }
    assert!(told && after < Duration::from_secs(1), "both clients back within 1 s: {after:?} {reasons:?}");
    for reason in &reasons {
        assert!(reason.contains("closed the connection"), "the server's reason: {reason}");
    }
    let exit = exit.expect("the server exits within 5 s of SIGTERM");
    assert_eq!(exit.code(), Some(0), "a clean stop exits 0");
    // Its log, written to a pipe (as into a file, journald or a container
    // log), says why it stopped and carries no colour codes.
    let mut log = String::new();
    std::io::Read::read_to_string(&mut server.stderr.take().expect("stderr piped"), &mut log).unwrap();
    assert!(log.contains("stopping: a stop signal came"), "{log}");
    assert!(!log.contains('\u{1b}'), "no ANSI codes when not a terminal: {log}");
    eprintln!("both clients told {:.0} ms after SIGTERM: {:?}", after.as_secs_f64() * 1000.0, reasons);

    // The match's demo: finished, and every recorded command replays to
    // the recorded states (the two clients' and the three bots').
    let (_, json) = verify_the_demo(&demos);
    assert!(json["keyframes"].as_u64().unwrap() >= 2, "{json}");
    assert!(json["player_ticks"].as_u64().unwrap() >= 5 * 64, "{json}");
    std::fs::remove_dir_all(&demos).ok();
}

/// Issue 60's finding 4: a recording server killed outright (SIGKILL: no
/// signal handler, nothing finished) left a 0-byte demo. Now the header is
/// on disk at once and each chunk within a second of match, so the demo
/// verifies up to its last whole chunk and says where it ends.
#[test]
fn sigkill_leaves_a_demo_that_verifies_up_to_where_it_ends() {
    let (mut server, _, demos) = recording_server("sigkill", 6, Stdio::null());
    std::thread::sleep(Duration::from_secs(6));
    server.kill().expect("SIGKILL sent");
    server.wait().expect("the server is gone");

    let (file, json) = verify_the_demo(&demos);
    assert_eq!(json["complete"], false, "{json}");
    assert!(json["ends_at_tick"].as_u64().is_some(), "{json}");
    assert!(json["ends"].as_str().is_some_and(|s| s.contains("cut short")), "{json}");
    // About five seconds of a six-bot match, less the last second at most.
    assert!(json["keyframes"].as_u64().unwrap() >= 3, "{json}");
    assert!(json["player_ticks"].as_u64().unwrap() >= 3 * 64 * 6, "{json}");
    let info = Command::new(env!("CARGO_BIN_EXE_arena")).args(["demo", "info"]).arg(&file).output().unwrap();
    assert!(info.status.success(), "{}", String::from_utf8_lossy(&info.stderr));
    std::fs::remove_dir_all(&demos).ok();
}
