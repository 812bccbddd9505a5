#!/usr/bin/env bash
# The long fuzz run: every target of crates/arena_fuzz for INPUTS inputs in
# all (default 10 million) or SECONDS seconds, whichever comes first. Prints
# the inputs tried and the panics per target, and each panicking input.
#
#   scripts/fuzz.sh [INPUTS] [SECONDS] [SEED]
#
# It builds in the dev profile (overflow checks on, in dependencies too), with
# the same target directory as the tests, so it costs no second Bevy build.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system-deps.sh
inputs="${1:-10000000}"
seconds="${2:-86400}"
seed="${3:-$(date +%s)}"
# The whole workspace (not -p arena_fuzz): one feature set, the dependencies
# the tests built (our crates at the dev profile's opt-level 1).
cargo build --quiet --workspace --bins
exec "$CARGO_TARGET_DIR/debug/arena-fuzz" --inputs "$inputs" --seconds "$seconds" --seed "$seed"
