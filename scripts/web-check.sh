#!/usr/bin/env bash
# The browser check: builds the page (scripts/web-build.sh, kept in the
# persistent target directory), serves it on 127.0.0.1, and runs Debian's
# Chromium headless with software WebGL 2 under chromedriver
# (scripts/web-check.py): the menu, quick play in a fight (moved, fired,
# hit, no mispredictions on the in-page link), a pause, and what a page
# says when WebGL 2, its .wasm or its script is missing, a link is not
# understood or stored settings do not parse; then a native `arena server
# --bots 3 --web` joined from the link it prints, beside a UDP player. Screenshots and figures go to
# OUT_DIR (default $CARGO_TARGET_DIR/web/check).
#
#   scripts/web-check.sh [--measure | --pictures] [OUT_DIR]
#
# --measure adds the issue's measurements (30 s of quick play, the
# own-motion delay and the range's hit ratio at 150 ms): a few minutes more.
# --pictures takes only the manual's pictures (with ARENA_WEB_SIZE=1280x720).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system-deps.sh
arena_packages browser
measure=()
if [ "${1:-}" = "--measure" ] || [ "${1:-}" = "--pictures" ]; then
  measure=("$1")
  shift
fi
out="${1:-$CARGO_TARGET_DIR/web/check}"
site="$CARGO_TARGET_DIR/web/site"

started=$SECONDS
scripts/web-build.sh "$site"
echo "web-check: the page built in $(( SECONDS - started )) s" >&2

work=$(mktemp -d)
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# The same folder without its .wasm, beside it: what a half-copied folder
# looks like to a visitor.
mkdir -p "$work/root/broken" "$work/root/nojs"
ln -s "$site" "$work/root/site"
for f in "$site"/*; do
  [ "$(basename "$f")" = arena_bg.wasm ] || ln -s "$f" "$work/root/broken/"
  [ "$(basename "$f")" = arena.js ] || ln -s "$f" "$work/root/nojs/"
done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/root" "$port" >"$work/http.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/site/index.html" 2>/dev/null && break
  sleep 0.1
done

# The native server the page joins (`arena server --web`), as the other
# check scripts build it: the whole workspace, one feature set (a bare
# `--bin arena` would resolve another and build our crates again).
cargo build --quiet --workspace --bins
ARENA_BIN="$CARGO_TARGET_DIR/debug/arena" ARENA_SITE_DIR="$site" \
  python3 scripts/web-check.py "http://127.0.0.1:$port/site/" "http://127.0.0.1:$port/broken/" "$out" "${measure[@]}"
echo "web-check: passed in $(( SECONDS - started )) s; screenshots and figures in $out" >&2
