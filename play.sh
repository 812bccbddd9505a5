#!/usr/bin/env bash
# Builds Arena if needed and starts a quick game: a listen server with five
# bots, and you in it (arguments go to `arena play`: try `./play.sh --bots 8`
# or `./play.sh --help`). Installs missing system packages first.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/system-deps.sh
arena_packages build runtime
exec cargo run --quiet -- play "$@"
