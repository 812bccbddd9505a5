//! Tells the lab which optimisation level built it (cargo gives build
//! scripts `OPT_LEVEL`): `cargo test` builds our crates at opt-level 0 into
//! the same `debug/arena` that `cargo build` writes at opt-level 1, and a
//! report's timings from the one must not pass for the other's.

fn main() {
    let level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| String::from("unknown"));
    println!("cargo::rustc-env=ARENA_OPT_LEVEL={level}");
    println!("cargo::rerun-if-changed=build.rs");
}
