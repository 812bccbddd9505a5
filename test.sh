#!/usr/bin/env bash
# Runs every test of Arena (headless: no window, no GPU needed). Installs
# missing build packages first. Extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/system-deps.sh
arena_packages build
exec cargo test --workspace "$@"
