#!/usr/bin/env bash
# The arena-agones sidecar (its own crate and lock file, outside the game's
# workspace so gRPC never enters the game's build): its unit tests, and its
# test against dummy-agones (an independent Agones SDK server from
# crates.io) with a real `arena server` and `arena bots` clients.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"
source scripts/system-deps.sh
arena_packages build agones
cargo build --quiet --bin arena
export ARENA_BIN="$CARGO_TARGET_DIR/debug/arena"
cargo test --locked --manifest-path crates/arena_agones/Cargo.toml -- --nocapture
cargo fmt --manifest-path crates/arena_agones/Cargo.toml -- --check
cargo clippy --quiet --locked --manifest-path crates/arena_agones/Cargo.toml --all-targets -- -D warnings
echo "arena-agones: formatted, tests passed, clippy clean"
