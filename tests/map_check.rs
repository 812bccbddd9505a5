//! `arena map check` (the real binary): every map in `assets/maps` passes;
//! broken maps fail, each with the sentence that says what is wrong.

// Test helpers may panic: a panic is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

fn check(file: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_arena")).args(["map", "check", file]).output().expect("arena runs");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn every_built_in_map_passes() {
    let mut maps = 0;
    for entry in std::fs::read_dir("assets/maps").expect("assets/maps") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "ron") {
            let (ok, out) = check(&path.to_string_lossy());
            assert!(ok, "{}: {out}", path.display());
            assert!(out.contains(": ok: "), "{out}");
            maps += 1;
        }
    }
    assert!(maps >= 3, "{maps} maps in assets/maps: Foundry, Spire and Yard at least");
}

#[test]
fn broken_maps_fail_with_what_is_wrong() {
    for (file, says) in [
        ("tests/maps/spawn_in_wall.ron", "spawn 1 at (5.0, 0.0, 5.0) is inside geometry: a player there is stuck"),
        ("tests/maps/steep_stairs.ron", "stairs 0 have 0.75 m steps; at most 0.42 m can be walked up"),
        ("tests/maps/island.ron", "cannot be walked to or from the rest"),
        ("tests/maps/island.ron", "spawn 1 at (8.0, 0.0, 0.0) cannot be walked to from spawn 0"),
        ("tests/maps/far_away.ron", "block 1: numbers must be finite and within 500 m"),
        (
            "tests/maps/item_in_wall.ron",
            "item 0 (Mega Health) at (4.0, 0.0, 0.0) is inside geometry: nobody can take it",
        ),
        ("tests/maps/item_over_nothing.ron", "item 0 (Health) at (14.0, 0.0, 0.0) is over nothing"),
        ("tests/maps/pad_into_wall.ron", "jump pad 0's arc ends in a wall at (5.6, 2.5, 0.0)"),
        ("tests/maps/pad_off_map.ron", "jump pad 0's arc ends off the map: it never comes down on a floor"),
        ("tests/maps/teleport_into_wall.ron", "teleporter 0's destination (-6.0, 0.0, 0.0) is inside geometry"),
        (
            "tests/maps/teleport_facing_wall.ron",
            "teleporter 0's destination (0.0, 0.0, -8.4) faces a wall 0.6 m away (at least 1 m)",
        ),
        (
            "tests/maps/teleport_into_itself.ron",
            "teleporter 0 sends a player only back into itself: its destination is inside its entry",
        ),
        (
            "tests/maps/teleport_loop.ron",
            "teleporter 0's destination is inside teleporter 1's entry: a chain of teleporters can loop",
        ),
        ("tests/maps/pad_nan.ron", "jump pad 0: numbers must be finite and within 500 m"),
        (
            "tests/maps/unknown_item.ron",
            "the map file does not parse: 7:20-7:34: Unexpected variant named `Rocketlauncher` in enum `ItemKind`",
        ),
        ("tests/maps/thousand_items.ron", "1000 items: a map has at most 64"),
    ] {
        let (ok, out) = check(file);
        assert!(!ok, "{file} passed: {out}");
        assert!(out.contains(says), "{file} does not say \"{says}\":\n{out}");
    }
    // Not a map at all.
    let (ok, out) = check("Cargo.toml");
    assert!(!ok && out.contains("the map file does not parse"), "{out}");
}
