#!/usr/bin/env bash
# LAN check: a dedicated server and a client in two network namespaces joined
# by a veth pair, like two machines on a LAN. The server binds [::] (one
# socket for IPv4 and IPv6, as by default); the
# client joins it at the server's own namespace address and must stay
# connected, receiving snapshots, for the whole run. Before that, the client's
# side finds the server by broadcast (`arena servers --lan --json`). Needs
# root (CI runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"

if [ "$(id -u)" -ne 0 ]; then
  echo "lan-check: needs root for network namespaces; skipped" >&2
  exit 0
fi

# The whole workspace, as the tests build it: no second feature set, no second Bevy build.
cargo build --quiet --workspace --bins
arena="$CARGO_TARGET_DIR/debug/arena"
tag="arena$$"
srv="${tag}s" cli="${tag}c"
server_ip=10.77.0.1 client_ip=10.77.0.2 port=27015
work=$(mktemp -d)

cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null || true
  ip netns del "$srv" 2>/dev/null || true
  ip netns del "$cli" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$srv"
ip netns add "$cli"
ip link add "${tag}a" type veth peer name "${tag}b"
ip link set "${tag}a" netns "$srv"
ip link set "${tag}b" netns "$cli"
ip -n "$srv" addr add "$server_ip/24" dev "${tag}a"
ip -n "$cli" addr add "$client_ip/24" dev "${tag}b"
for ns in "$srv" "$cli"; do
  ip -n "$ns" link set lo up
done
ip -n "$srv" link set "${tag}a" up
ip -n "$cli" link set "${tag}b" up

ip netns exec "$srv" "$arena" server --name "LAN check" --bots 2 --bind "[::]:$port" --seconds 20 \
  >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
sleep 1

# The server must tell its operator the address to share.
if ! grep -q "$server_ip:$port" "$work/server.out"; then
  echo "lan-check: the server did not list $server_ip:$port among its addresses:" >&2
  cat "$work/server.out" >&2
  exit 1
fi

# The client's side finds it by broadcast, knowing no address.
ip netns exec "$cli" "$arena" servers --lan --json >"$work/servers.json" 2>"$work/servers.log" || true
python3 - "$work/servers.json" "$server_ip:$port" <<'PY' || { cat "$work/servers.log" >&2; exit 1; }
import json, sys
servers = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
found = [s for s in servers if s["address"] == sys.argv[2]]
assert found, f"lan-check: `arena servers --lan` did not find {sys.argv[2]}: {servers}"
s = found[0]
assert s["answered"] and s["lan"], s
assert s["name"] == "LAN check" and s["bots"] == 2 and s["password"] is False, s
print(f"lan-check: ok: found \"{s['name']}\" at {s['address']} by broadcast, "
      f"{s['players']}/{s['max_players']} players, ping {s['ping_ms']:.1f} ms")
PY

status=0
ip netns exec "$cli" "$arena" bots --connect "$server_ip:$port" --count 1 --seconds 6 --name "LAN " \
  --report "$work/report.json" 2>"$work/bots.log" || status=$?
cat "$work/report.json" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
  echo "lan-check: the client failed (exit $status); its log:" >&2
  tail -20 "$work/bots.log" >&2
  echo "server log:" >&2
  tail -20 "$work/server.log" >&2
  exit 1
fi
python3 - "$work/report.json" <<'PY'
import json, sys
client = json.load(open(sys.argv[1]))["clients"][0]
assert client["error"] is None, client
assert client["connected_s"] > 4.0, f"connected only {client['connected_s']:.1f} s"
assert client["snapshots_received"] > 200, f"only {client['snapshots_received']} snapshots"
print(f"lan-check: ok: connected {client['connected_s']:.1f} s across the veth link, "
      f"{client['snapshots_received']} snapshots, {client['commands_sent']} commands, rtt {client['rtt_ms']:.1f} ms")
PY
grep -q "joined from $client_ip" "$work/server.log" || {
  echo "lan-check: the server log does not show the client joining from $client_ip" >&2
  tail -20 "$work/server.log" >&2
  exit 1
}
