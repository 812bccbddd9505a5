//! `arena demo info`: a demo file's summary, a cut one's up to where it
//! ends, and a damaged one's error.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

use arena_protocol::demo::{DemoHeader, DemoWriter};

fn write_demo(path: &std::path::Path, frames: u32) {
    let header = DemoHeader {
        protocol: arena_protocol::PROTOCOL_VERSION,
        tick_hz: 64,
        map: "Foundry".into(),
        server_name: "test server".into(),
        started_unix_s: 1_790_000_000,
    };
    let mut w = DemoWriter::new(std::fs::File::create(path).expect("create"), &header).expect("header");
    for tick in 0..frames {
        w.push(100 + tick, &vec![tick as u8; 500]).expect("frame");
    }
    w.finish().expect("finish");
}

fn info(path: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_arena")).args(["demo", "info"]).arg(path).output().expect("runs")
}

#[test]
fn demo_info_summarises_a_demo_and_names_what_is_wrong_with_a_damaged_one() {
    let dir = std::env::temp_dir().join(format!("arena-demo-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("match.arenademo");
    write_demo(&path, 640);
    let out = info(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    eprintln!("{json}");
    assert_eq!(json["frames"], 640);
    assert_eq!(json["first_tick"], 100);
    assert_eq!(json["last_tick"], 739);
    assert_eq!(json["map"], "Foundry");
    assert_eq!(json["tick_hz"], 64);
    assert!(json["chunks"].as_u64().is_some_and(|c| c >= 4), "{}", json["chunks"]);
    assert!((json["duration_s"].as_f64().unwrap_or(0.0) - 639.0 / 64.0).abs() < 1e-9);
    assert_eq!(json["frame_bytes"], 640 * 500);
    assert!(json["complete"] == true && json["ends"].is_null(), "{json}");

    // Cut short (a recording that never finished): read up to its last
    // whole chunk (a second each), saying where it ends.
    let bytes = std::fs::read(&path).expect("read");
    let cut = dir.join("cut.arenademo");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let out = info(&cut);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(json["complete"] == false && json["frames"].as_u64().is_some_and(|f| f > 0 && f < 640), "{json}");
    assert_eq!(json["frames"].as_u64().map(|f| f % 64), Some(0), "{json}");
    let ends = json["ends"].as_str().unwrap_or_default();
    assert!(ends.contains("did not finish") && ends.contains("whole up to tick"), "{json}");
    // Damaged inside a chunk.
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x10;
    let bad = dir.join("flipped.arenademo");
    std::fs::write(&bad, &flipped).expect("write");
    let out = info(&bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("damaged"), "{err}");
    let out = info(&dir.join("missing.arenademo"));
    assert!(!out.status.success() && !out.stderr.is_empty());
    std::fs::remove_dir_all(&dir).ok();
}

/// `arena demo verify` on a recording, cut ones and damaged ones: a pass, a
/// pass up to where a cut one ends, then errors naming what is wrong (never
/// a panic, never a pass).
#[test]
fn demo_verify_passes_a_recording_and_names_what_is_wrong_with_a_damaged_one() {
    let dir = std::env::temp_dir().join(format!("arena-demo-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bytes = arena_replay::example_demo(900, true, |_, _| {}).expect("a demo");
    let verify = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        Command::new(env!("CARGO_BIN_EXE_arena")).args(["demo", "verify"]).arg(&path).output().expect("runs")
    };
    // The example fires without listing the server's verdicts: the replay
    // finds every shot unaccounted for, and says so.
    let out = verify("fired.demo", &bytes);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(!out.status.success() && json["ok"] == false, "{json}");
    assert!(json["first_mismatches"][0].as_str().is_some_and(|m| m.starts_with("Shots")), "{json}");
    let quiet = arena_replay::example_demo(900, false, |_, _| {}).expect("a demo");
    let out = verify("quiet.demo", &quiet);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(out.status.success() && json["ok"] == true && json["keyframes"] == 15, "{json}");
    // Cut anywhere (past its first chunk): a pass up to where it ends, said.
    // Flipped anywhere: an error or a mismatch, said.
    let mut failures = 0;
    for k in 1..12 {
        let cut = &quiet[..quiet.len() * k / 12];
        let out = verify("cut.demo", cut);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert!(out.status.success() && json["ok"] == true && json["complete"] == false, "cut at {k}/12: {json}");
        assert!(json["keyframes"].as_u64().is_some_and(|n| n < 15), "cut at {k}/12: {json}");
        assert!(json["ends"].as_str().is_some_and(|e| e.contains("did not finish")), "cut at {k}/12: {json}");
        let mut flipped = quiet.clone();
        let at = quiet.len() * k / 12;
        flipped[at] ^= 0x24;
        let out = verify("flipped.demo", &flipped);
        let err = String::from_utf8_lossy(&out.stderr);
        let said = !out.status.success() && (err.contains("flipped.demo") || !out.stdout.is_empty());
        assert!(said, "flipped at byte {at}: {err}");
        failures += usize::from(!out.status.success());
    }
    assert_eq!(failures, 11, "every damaged copy was caught");
    // Cut before its first chunk: nothing to verify, said.
    let out = verify("header.demo", &quiet[..80]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("cut before its first chunk"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
