//! A dedicated server's options from a config file and the environment, as
//! an admin's container or unit file gives them: they reach the running
//! server (asked with `arena servers`, by A2S), the environment wins over
//! the file, and a file with an unknown key is refused, naming it.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("arena-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn options_from_a_file_and_the_environment_reach_the_server() {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let config = temp_file("server.ron", "(name: \"Config file\", bots: 2, tick: 32, frag_limit: 9)\n");
    let secret = temp_file("password", "sesame\n");
    let mut server = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["server", "--config", &config.display().to_string(), "--bind", &addr, "--seconds", "20"])
        // The environment wins over the file's two bots; the password stays off the command line.
        .env("ARENA_BOTS", "3")
        .env("ARENA_PASSWORD_FILE", &secret)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("arena server starts");
    let start = Instant::now();
    let mut listing = serde_json::Value::Null;
    while start.elapsed() < Duration::from_secs(10) {
        let out = Command::new(env!("CARGO_BIN_EXE_arena"))
            .args(["servers", &addr, "--json", "--wait-ms", "500"])
            .output()
            .expect("arena servers runs");
        listing = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        if listing["answered"] == true {
            break;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&secret);
    assert_eq!(listing["answered"], true, "{listing}");
    assert_eq!(listing["name"], "Config file", "the name from the file: {listing}");
    assert_eq!(listing["bots"], 3, "the bots from the environment: {listing}");
    assert_eq!(listing["password"], true, "the password from the environment's file: {listing}");
    assert_eq!(listing["rules"]["tick_hz"], "32", "the tick from the file: {listing}");
    assert_eq!(listing["rules"]["frag_limit"], "9", "{listing}");
}

#[test]
fn an_unknown_key_in_the_file_is_refused_by_name() {
    let config = temp_file("bad.ron", "(bots: 2, tickrate: 32)\n");
    let out = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["server", "--config", &config.display().to_string(), "--seconds", "1"])
        .output()
        .expect("arena server runs");
    let _ = std::fs::remove_file(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused");
    assert!(stderr.contains("tickrate"), "the key is named: {stderr}");
}
