#!/usr/bin/env bash
# A2S check: an independent A2S client (the python-a2s package, installed in
# a virtual environment under the cache directory) reads a dedicated server's
# info, players and rules, and they must match what the server has: its
# name, map, bots and players (two bot clients join it), the password flag,
# and the rules it was started with.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"
cargo build --quiet --workspace --bins
arena="$CARGO_TARGET_DIR/debug/arena"

venv="${ARENA_A2S_VENV:-$HOME/.cache/arena-a2s-venv}"
if ! "$venv/bin/python" -c "import a2s" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "python-a2s==1.4.2"
fi

port=$(( 28000 + RANDOM % 1000 ))
# The port players reach it on from outside (a mapped container port, say):
# what A2S must advertise instead of the bound one.
public_port=$(( port + 1000 ))
work=$(mktemp -d)
cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "${bots_pid:-}" ] && kill "$bots_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$arena" server --name "A2S check" --bind "127.0.0.1:$port" --bots 3 --max-clients 5 --password sesame \
  --tick 32 --snapshot-rate 16 --frag-limit 7 --time-limit-min 4 --public-port "$public_port" --seconds 30 >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
sleep 1
"$arena" bots --connect "127.0.0.1:$port" --password sesame --count 2 --name "Probe " --seconds 12 \
  --behavior roam >"$work/bots.json" 2>"$work/bots.log" &
bots_pid=$!
sleep 4

"$venv/bin/python" - "$port" "$public_port" <<'PY'
import sys, a2s
addr = ("127.0.0.1", int(sys.argv[1]))
public_port = int(sys.argv[2])
info = a2s.info(addr, timeout=3)
players = a2s.players(addr, timeout=3)
rules = a2s.rules(addr, timeout=3)
expect = {"server_name": "A2S check", "map_name": "Foundry", "game": "Arena", "folder": "arena",
          "player_count": 5, "max_players": 8, "bot_count": 3, "password_protected": True, "server_type": "d",
          "port": public_port}
for field, want in expect.items():
    got = getattr(info, field)
    assert got == want, f"info.{field}: {got!r}, expected {want!r} ({info})"
names = sorted(p.name for p in players)
assert len(players) == 5, names
assert [n for n in names if n.startswith("Probe ")] == ["Probe 1", "Probe 2"], names
assert all(p.duration > 0 for p in players), players
want_rules = {"tick_hz": "32", "snapshot_hz": "16", "frag_limit": "7", "time_limit_s": "240", "lag_compensation": "1"}
for k, v in want_rules.items():
    assert rules.get(k) == v, f"rule {k}: {rules.get(k)!r}, expected {v!r} ({rules})"
print(f"a2s-check: ok: python-a2s read \"{info.server_name}\" ({info.player_count}/{info.max_players}, "
      f"advertised port {info.port}, "
      f"{info.bot_count} bots, password {info.password_protected}), players {names}, "
      f"{len(rules)} rules, ping {info.ping * 1000:.1f} ms")
PY
