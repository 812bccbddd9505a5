#!/usr/bin/env bash
# Soak test of everything at once (issue 60), for MINUTES minutes (default
# 10; CI runs 2). A dedicated server with 4 bots, recording every match,
# with a remote console and a rotation (a minute a match) through a map
# file the clients download; 12 headless players who join and leave at
# random, say a line more often than the chat allows, call votes and vote;
# 2 spectators who come and go; `arena rcon status` every 3 s; the rcon
# floods that locked the administrator out (garbage from this address, 400
# challenge requests a second from 200 others) and the netcode flood. It
# reports the server's memory every 15 s, the rcon calls that failed, the
# players dropped without leaving on purpose, the floods counted, and
# verifies every demo. It fails if the server died or stopped answering,
# its memory grew 10% or more after the first minute, an rcon call failed,
# a player was dropped, a demo does not verify, or its log (chat lines
# aside) passed 1 MB.
#
#   scripts/soak.sh [MINUTES] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system-deps.sh
arena_packages build
minutes="${1:-10}"
out="${2:-/tmp/arena-soak}"
rm -rf "$out"
mkdir -p "$out/demos"
# The whole workspace (not -p): one feature set, the dependencies the tests
# built (our crates at the dev profile's opt-level 1).
cargo build --quiet --workspace --bins
bin="${CARGO_TARGET_DIR:-target}/debug"
port=$((20000 + RANDOM % 20000))
addr="127.0.0.1:$port"
seconds=$((minutes * 60))

# A map no client has built in: downloaded by every player at each rotation to it.
sed 's/name: "Spire"/name: "Tower"/' assets/maps/spire.ron >"$out/tower.ron"
echo "soak rcon $RANDOM$RANDOM" >"$out/rcon.pw"
export ARENA_RCON_PASSWORD
ARENA_RCON_PASSWORD=$(head -1 "$out/rcon.pw")

"$bin/arena" server --bind "$addr" --bots 4 --max-clients 20 --max-spectators 4 --map-port off \
  --maps "Foundry,$out/tower.ron" --time-limit-min 1 --record "$out/demos" \
  --rcon-password-file "$out/rcon.pw" >"$out/server.log" 2>&1 &
server=$!
pids=""
cleanup() { kill "$server" $pids 2>/dev/null || true; }
trap cleanup EXIT
sleep 3
kill -0 "$server"
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
start_rss=$(rss_kib)
started=$SECONDS

line=$(printf 'soak %.0s' $(seq 1 25))
"$bin/arena" bots --connect "$addr" --count 12 --churn --vote --say "$line" --say-every-s 0.5 \
  --seconds "$seconds" --report "$out/bots.json" >"$out/bots.log" 2>&1 &
bots=$!
"$bin/arena" bots --connect "$addr" --count 2 --churn --spectate --name Watcher \
  --seconds "$seconds" --report "$out/watchers.json" >"$out/watchers.log" 2>&1 &
watchers=$!
"$bin/arena-fuzz" flood "$addr" --seconds "$seconds" --rate 2000 >"$out/flood.log" 2>&1 &
flood=$!
"$bin/arena-fuzz" rcon-flood "$addr" --seconds "$seconds" >"$out/rcon-flood.log" 2>&1 &
rcon_flood=$!
pids="$bots $watchers $flood $rcon_flood"

: >"$out/rss.txt"
base_rss=""
rcon_ok=0
rcon_failed=0
next_rss=15
while kill -0 "$bots" 2>/dev/null; do
  sleep 3
  kill -0 "$server" || { echo "soak: the server died"; exit 1; }
  if "$bin/arena" rcon --wait-ms 2000 "$addr" status >"$out/rcon-last.txt" 2>>"$out/rcon-errors.txt"; then
    rcon_ok=$((rcon_ok + 1))
  else
    rcon_failed=$((rcon_failed + 1))
  fi
  elapsed=$((SECONDS - started))
  if [ "$elapsed" -ge "$next_rss" ]; then
    now=$(rss_kib)
    echo "$elapsed $now" >>"$out/rss.txt"
    if [ -z "$base_rss" ] && [ "$elapsed" -ge 60 ]; then base_rss=$now; fi
    next_rss=$((next_rss + 15))
  fi
done
wait "$flood" "$rcon_flood" "$watchers" || true
end_rss=$(rss_kib)

# The server still answers: a fresh client plays for a few seconds.
if "$bin/arena" bots --connect "$addr" --count 1 --seconds 5 --report "$out/check.json" >"$out/check.log" 2>&1; then
  answers=yes
else
  answers=no
fi
# A clean stop finishes the match's demo; then every demo must verify.
kill -TERM "$server"
wait "$server" || true
demos=0
bad_demos=0
for demo in "$out"/demos/*.demo; do
  [ -e "$demo" ] || continue
  demos=$((demos + 1))
  if ! "$bin/arena" demo verify --map "$out/tower.ron" "$demo" >"$demo.verify.json" 2>&1; then
    bad_demos=$((bad_demos + 1))
    echo "soak: $demo does not verify: $(head -c 400 "$demo.verify.json")"
  fi
done

log_bytes=$(stat -c %s "$out/server.log")
# Chat lines are logged as said (at most one a second a player, by the
# chat's limit): the log's bound is on everything else, which floods and
# churn must not grow.
chat_log_bytes=$(grep -F "tick::chat" "$out/server.log" | wc -c)
other_log_bytes=$((log_bytes - chat_log_bytes))
base_rss="${base_rss:-$end_rss}"
growth=$(awk -v a="$base_rss" -v b="$end_rss" 'BEGIN { printf "%.1f", (b - a) * 100 / a }')
count() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(int(eval(sys.argv[2], {}, {"c": c})) for c in r["clients"]))' "$@"; }
sessions=$(( $(count "$out/bots.json" 'c["sessions"]') + $(count "$out/watchers.json" 'c["sessions"]') ))
dropped=$(( $(count "$out/bots.json" 'c["error"] is not None') + $(count "$out/watchers.json" 'c["error"] is not None') ))
chat=$(count "$out/bots.json" 'c["chat_received"]')
chat_refused=$(count "$out/bots.json" 'c["chat_refused"]')
votes=$(grep -c "calls to" "$out/server.log" || true)
maps=$(grep -c "sending the map Tower" "$out/server.log" || true)
rcon_line=$(grep -o "rcon: refused.*" "$out/server.log" | tail -1 || true)
echo "soak: ${minutes} min; server RSS ${start_rss} KiB at start, ${base_rss} KiB after 1 min, ${end_rss} KiB at the end (${growth}% after the first minute)"
echo "soak: RSS (s KiB) every 15 s: $(tr '\n' ' ' <"$out/rss.txt")"
echo "soak: player sessions ${sessions}, dropped without leaving: ${dropped}; chat lines heard ${chat}, refused ${chat_refused}; votes called ${votes}; Tower sent ${maps} times"
echo "soak: rcon status ${rcon_ok} ok, ${rcon_failed} failed; the server's last rcon summary: ${rcon_line:-none}"
echo "soak: $(tail -1 "$out/flood.log"); $(tail -1 "$out/rcon-flood.log")"
echo "soak: demos ${demos}, not verifying: ${bad_demos}; server log ${log_bytes} bytes (${chat_log_bytes} of them chat lines); the server still answers: ${answers}"
ok=1
[ "$answers" = yes ] || ok=0
[ "$rcon_failed" = 0 ] || ok=0
[ "$dropped" = 0 ] || ok=0
[ "$demos" -ge 1 ] && [ "$bad_demos" = 0 ] || ok=0
awk -v g="$growth" 'BEGIN { exit !(g < 10) }' || ok=0
[ "$other_log_bytes" -lt 1048576 ] || ok=0
[ $ok = 1 ] && echo "soak: PASS" || { echo "soak: FAIL"; exit 1; }
