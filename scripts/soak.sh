#!/usr/bin/env bash
# Soak test (not part of CI): a dedicated server with 4 bots; 16 headless bot
# clients that join and leave at random; and a network fuzzer flooding the
# same port, all for MINUTES minutes (default 10). Afterwards the server must
# still let a client play, its memory must have grown by under 10% from the
# end of the first minute (when every kind of traffic has been seen), and its
# log must be under 1 MB.
#
#   scripts/soak.sh [MINUTES] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system-deps.sh
arena_packages build
minutes="${1:-10}"
out="${2:-/tmp/arena-soak}"
mkdir -p "$out"
# The whole workspace (not -p): one feature set, the dependencies the tests
# built (our crates at the dev profile's opt-level 1).
cargo build --quiet --workspace --bins
bin="$CARGO_TARGET_DIR/debug"
port=$((20000 + RANDOM % 20000))
addr="127.0.0.1:$port"
seconds=$((minutes * 60))

"$bin/arena" server --bind "$addr" --bots 4 --max-clients 20 >"$out/server.log" 2>&1 &
server=$!
bots=""
flood=""
cleanup() { kill "$server" $bots $flood 2>/dev/null || true; }
trap cleanup EXIT
sleep 3
kill -0 "$server"
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$server/status"; }
start_rss=$(rss_kib)
started=$SECONDS

"$bin/arena" bots --connect "$addr" --count 16 --churn --seconds "$seconds" --report "$out/bots.json" \
  >"$out/bots.log" 2>&1 &
bots=$!
"$bin/arena-fuzz" flood "$addr" --seconds "$seconds" --rate 2000 >"$out/flood.log" 2>&1 &
flood=$!

: >"$out/rss.txt"
base_rss=""
while kill -0 "$bots" 2>/dev/null; do
  sleep 15
  kill -0 "$server" || { echo "soak: the server died"; exit 1; }
  now=$(rss_kib)
  echo "$((SECONDS - started)) $now" >>"$out/rss.txt"
  if [ -z "$base_rss" ] && [ $((SECONDS - started)) -ge 60 ]; then base_rss=$now; fi
done
wait "$flood" || true
end_rss=$(rss_kib)

# The server still answers: a fresh client plays for a few seconds.
if "$bin/arena" bots --connect "$addr" --count 1 --seconds 5 --report "$out/check.json" >"$out/check.log" 2>&1; then
  answers=yes
else
  answers=no
fi
log_bytes=$(stat -c %s "$out/server.log")
growth=$(awk -v a="$base_rss" -v b="$end_rss" 'BEGIN { printf "%.1f", (b - a) * 100 / a }')
sessions=$(grep -o '"sessions": [0-9]*' "$out/bots.json" | awk '{s += $2} END {print s}')
failed=$(grep -c '"error": "' "$out/bots.json" || true)
echo "soak: ${minutes} min; server RSS ${start_rss} KiB at start, ${base_rss} KiB after 1 min, ${end_rss} KiB at the end (${growth}% after the first minute)"
echo "soak: server log ${log_bytes} bytes; bot sessions ${sessions}, bots with a failed connection: ${failed}"
echo "soak: $(tail -1 "$out/flood.log")"
echo "soak: the server still answers: ${answers}"
ok=1
[ "$answers" = yes ] || ok=0
awk -v g="$growth" 'BEGIN { exit !(g < 10) }' || ok=0
[ "$log_bytes" -lt 1048576 ] || ok=0
[ $ok = 1 ] && echo "soak: PASS" || { echo "soak: FAIL"; exit 1; }
