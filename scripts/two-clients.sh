#!/usr/bin/env bash
# Two windowed clients on a dedicated server, each on its own virtual display
# (Xvfb, software rendering), for looking at multiplayer from scripts:
# screenshots of both views, then one client holds W, then screenshots again.
#
#   scripts/two-clients.sh OUT_DIR [SECONDS_BEFORE_KEYS] [SECONDS_HOLDING_W]
#
# Needs Xvfb, xdotool and ImageMagick (../shared/tools/screenshot.sh installs them).
set -euo pipefail
out=${1:?usage: two-clients.sh OUT_DIR [WARMUP_S] [HOLD_S]}
warmup=${2:-30}
hold=${3:-1.5}
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"
arena="$CARGO_TARGET_DIR/debug/arena"
mkdir -p "$out"
port=$(( 5000 + RANDOM % 1000 ))
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

"$arena" server --bind "127.0.0.1:$port" --seconds $(( warmup + 60 )) >"$out/server.out" 2>"$out/server.log" &
pids+=($!)
for d in 0 1; do
  Xvfb ":$(( 150 + d ))" -screen 0 1280x720x24 -nolisten tcp >/dev/null 2>&1 &
  pids+=($!)
done
sleep 1
DISPLAY=:150 XDG_RUNTIME_DIR=/tmp "$arena" join "127.0.0.1:$port" --name Ada >"$out/ada.log" 2>&1 &
pids+=($!)
sleep 2
DISPLAY=:151 XDG_RUNTIME_DIR=/tmp "$arena" join "127.0.0.1:$port" --name Bob >"$out/bob.log" 2>&1 &
pids+=($!)
sleep "$warmup"
DISPLAY=:150 import -window root "$out/ada-before.png"
DISPLAY=:151 import -window root "$out/bob-before.png"
# Ada holds W. No window manager runs, so focus the window and send the keys to it.
win=$(DISPLAY=:150 xdotool search --name Arena | head -1)
DISPLAY=:150 xdotool windowfocus --sync "$win"
DISPLAY=:150 xdotool keydown --window "$win" w
sleep "$hold"
DISPLAY=:150 xdotool keyup --window "$win" w
sleep 4
DISPLAY=:150 import -window root "$out/ada-after.png"
DISPLAY=:151 import -window root "$out/bob-after.png"
echo "screenshots in $out"
