#!/usr/bin/env bash
# Range check: real processes, the bot client's traffic through an
# independent UDP relay (scripts/udp-relay.py, plain Python) adding 125 ms
# each way, against `arena server --range` with and then without lag
# compensation. One aim bot stands on the firing line and shoots the
# nearest target as it draws it. Prints both hit ratios as JSON and fails if
# compensation does not reach MIN_ON (0.9) or its absence stays above
# MAX_OFF (0.25).
#
#   scripts/range-check.sh [SECONDS] [DELAY_MS_EACH_WAY]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"
seconds="${1:-30}"
delay_ms="${2:-125}"
min_on="${MIN_ON:-0.9}"
max_off="${MAX_OFF:-0.25}"
# Frames a second of the aim bot (BOT_FPS=4 plays like a slow machine's window).
bot_fps="${BOT_FPS:-250}"
cargo build --quiet --workspace --bins
arena="$CARGO_TARGET_DIR/debug/arena"
work=$(mktemp -d)
cleanup() {
  for pid in ${server_pid:-} ${relay_pid:-}; do kill "$pid" 2>/dev/null || true; done
  if [ -n "${RANGE_KEEP:-}" ]; then echo "range-check: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

run() { # run NAME SERVER_FLAGS...
  local name=$1; shift
  local port=$(( 29000 + RANDOM % 500 )) relay_port
  relay_port=$(( port + 500 ))
  "$arena" server --range "$@" --bind "127.0.0.1:$port" --seconds $(( seconds + 8 )) \
    >"$work/$name-server.out" 2>&1 &
  server_pid=$!
  python3 scripts/udp-relay.py --listen "127.0.0.1:$relay_port" --server "127.0.0.1:$port" \
    --delay-ms "$delay_ms" >"$work/$name-relay.out" 2>&1 &
  relay_pid=$!
  sleep 1
  "$arena" bots --connect "127.0.0.1:$relay_port" --count 1 --behavior aim --seconds "$seconds" --fps "$bot_fps" \
    --report "$work/$name.json" >/dev/null 2>"$work/$name-bots.log"
  kill "$relay_pid" "$server_pid" 2>/dev/null || true
  wait "$relay_pid" "$server_pid" 2>/dev/null || true
}

run on
run off --no-lag-compensation

python3 - "$work" "$min_on" "$max_off" <<'PY'
import json, sys
work, min_on, max_off = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
out = {}
for name in ("on", "off"):
    bot = json.load(open(f"{work}/{name}.json"))["clients"][0]
    if bot["error"]:
        sys.exit(f"range-check: the bot with compensation {name} failed: {bot['error']}")
    out[name] = {
        "shots": bot["shots"], "hits": bot["hits"], "shot_verdicts": bot["shot_verdicts"],
        "hit_ratio": round(bot["hits"] / max(bot["shots"], 1), 3), "rtt_ms": round(bot["rtt_ms"], 1),
    }
print(json.dumps({"lag_compensation": out}))
if out["on"]["shots"] < 20 or out["off"]["shots"] < 20:
    sys.exit("range-check: too few shots to judge")
if out["on"]["hit_ratio"] < min_on or out["off"]["hit_ratio"] > max_off:
    sys.exit(f"range-check: expected at least {min_on} with compensation and at most {max_off} without")
print("range-check: ok")
PY
