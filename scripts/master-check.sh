#!/usr/bin/env bash
# Master check: Debian's qstat (quakestat), with the repository's
# qstat.cfg, lists the servers an `arena master` has: two dedicated servers
# register with it, and quakestat must show both with their names and
# player counts (bots count as players, as in A2S).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system-deps.sh
if ! command -v quakestat >/dev/null 2>&1; then
  echo "master-check: installing qstat" >&2
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qstat >/dev/null ||
    { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qstat >/dev/null; }
fi
cargo build --quiet --workspace --bins
arena="$CARGO_TARGET_DIR/debug/arena"

base=$(( 29000 + RANDOM % 1000 ))
master_port=$base
alpha_port=$(( base + 2 )) # base + 1: the master's probe socket
beta_port=$(( base + 3 ))
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

"$arena" master --bind "127.0.0.1:$master_port" --seconds 60 >"$work/master.out" 2>"$work/master.log" &
pids+=($!)
"$arena" server --name "Alpha Yard" --bind "127.0.0.1:$alpha_port" --master "127.0.0.1:$master_port" \
  --bots 3 --max-clients 4 --tick 32 --seconds 60 >"$work/alpha.out" 2>"$work/alpha.log" &
pids+=($!)
"$arena" server --name "Beta Deck" --bind "127.0.0.1:$beta_port" --master "127.0.0.1:$master_port" \
  --bots 1 --max-clients 8 --password sesame --tick 32 --seconds 60 >"$work/beta.out" 2>"$work/beta.log" &
pids+=($!)

# quakestat -raw: one line per server: type, address, name, map, max players, players, ping, retries.
found=""
for _ in $(seq 1 40); do
  sleep 0.5
  quakestat -cfg qstat.cfg -arenam "127.0.0.1:$master_port" -raw '|' -nh >"$work/qstat.out" 2>"$work/qstat.err" || true
  if grep -q "Alpha Yard" "$work/qstat.out" && grep -q "Beta Deck" "$work/qstat.out"; then
    found=yes
    break
  fi
done
cat "$work/qstat.out"
if [ -z "$found" ]; then
  echo "master-check: quakestat did not list both servers" >&2
  cat "$work/qstat.err" "$work/master.log" "$work/alpha.log" "$work/beta.log" >&2
  exit 1
fi
python3 - "$work/qstat.out" "$alpha_port" "$beta_port" <<'PY'
import sys
lines = [l.rstrip("\n").split("|") for l in open(sys.argv[1]) if l.strip()]
servers = {f[1]: f for f in lines if f[0] == "ARENAS"}
want = {f"127.0.0.1:{sys.argv[2]}": ("Alpha Yard", "Foundry", "7", "3"),
        f"127.0.0.1:{sys.argv[3]}": ("Beta Deck", "Foundry", "9", "1")}
for addr, (name, map_name, max_players, players) in want.items():
    fields = servers.get(addr)
    assert fields, f"{addr} not listed: {lines}"
    assert fields[2:6] == [name, map_name, max_players, players], f"{addr}: {fields}"
print(f"master-check: ok: quakestat listed {len(servers)} servers from the master: "
      + "; ".join(f"{f[2]} {f[5]}/{f[4]}" for f in servers.values()))
PY
