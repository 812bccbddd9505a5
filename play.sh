#!/usr/bin/env bash
# Builds Arena if needed and starts it (arguments go to the game: try
# `./play.sh host` or `./play.sh --help`). Installs missing system packages first.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/system-deps.sh
arena_packages build runtime
exec cargo run --quiet -- "$@"
