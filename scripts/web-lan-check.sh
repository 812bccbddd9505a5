#!/usr/bin/env bash
# The browser friend on a LAN: a host runs `arena server --web` in one
# network namespace; a friend in another (a veth pair between them, like two
# machines on a LAN) opens the https:// link the server printed for the LAN
# in headless Chromium, meets the browser's warning about the self-signed
# certificate, accepts it once (Advanced, then Proceed, as a person
# clicks them), and joins over WebTransport: in the game, moving, the host's rcon `status`
# listing the friend at its LAN address. Pictures of the warning and the
# game go to OUT_DIR. Needs root (CI runs as root) and the web build
# (scripts/web-build.sh, run here).
#
#   scripts/web-lan-check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"

if [ "$(id -u)" -ne 0 ]; then
  echo "web-lan-check: needs root for network namespaces; skipped" >&2
  exit 0
fi
source scripts/system-deps.sh
arena_packages browser
out="${1:-$CARGO_TARGET_DIR/web/lan-check}"
site="$CARGO_TARGET_DIR/web/site"
scripts/web-build.sh "$site"
cargo build --quiet --workspace --bins
arena="$CARGO_TARGET_DIR/debug/arena"
tag="awl$$"
host="${tag}h" friend="${tag}f"
host_ip=10.78.0.1 friend_ip=10.78.0.2 port=27960 web_port=27961
work=$(mktemp -d)
mkdir -p "$out"

cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  ip netns del "$host" 2>/dev/null || true
  ip netns del "$friend" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$host"
ip netns add "$friend"
ip link add "${tag}a" type veth peer name "${tag}b"
ip link set "${tag}a" netns "$host"
ip link set "${tag}b" netns "$friend"
ip -n "$host" addr add "$host_ip/24" dev "${tag}a"
ip -n "$friend" addr add "$friend_ip/24" dev "${tag}b"
for ns in "$host" "$friend"; do
  ip -n "$ns" link set lo up
done
ip -n "$host" link set "${tag}a" up
ip -n "$friend" link set "${tag}b" up

printf 'lan check rcon\n' >"$work/rcon"
chmod 600 "$work/rcon"
ip netns exec "$host" "$arena" server --name "Browser LAN check" --bots 2 --bind "0.0.0.0:$port" \
  --web "$site" --web-port "$web_port" --rcon-password-file "$work/rcon" --seconds 600 \
  >"$work/server.out" 2>"$out/server.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q "^  https://$host_ip:$web_port/" "$work/server.out" 2>/dev/null && break
  sleep 0.1
done
link=$(grep -o "https://$host_ip:$web_port/#join=[^ ]*" "$work/server.out" | head -1)
if [ -z "$link" ]; then
  echo "web-lan-check: the server printed no https link for $host_ip:" >&2
  cat "$work/server.out" >&2
  exit 1
fi
echo "web-lan-check: the friend opens $link" >&2

# The friend's browser, in the friend's namespace; the host's console asked from the host's.
ip netns exec "$friend" env ARENA_RCON_CMD="ip netns exec $host $arena rcon 127.0.0.1:$port" \
  ARENA_RCON_PASSWORD_FILE="$work/rcon" FRIEND_IP="$friend_ip" \
  python3 scripts/web-lan-check.py "$link" "$out"
echo "web-lan-check: passed; pictures in $out" >&2
