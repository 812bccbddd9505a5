#!/usr/bin/env bash
# NAT check: a small internet in network namespaces, with home routers in
# front of the real `arena` binaries, and one table of what happened.
#
#   internet   a bridge with the master (`arena master`, 11.0.0.1 and
#              2a00:ff::1, probes from port 27951)
#   home A     a router running Debian's miniupnpd (UPnP-IGD, NAT-PMP, PCP):
#              a server maps its port with each method in turn (the others
#              off, in the router and in `--map-port`), with a 6 s lease
#              (renewed before it ends); reachable; a player from home P
#              joins; after SIGTERM the mapping is gone from the router
#   home B     a plain masquerading router: a player joins by hole punching
#   home C     a router that gives every destination a new port
#              (masquerade fully-random): the server is told within 5 s;
#              a player from home P joins through the relay
#   relay      Debian's coturn (11.0.0.3:3478) with TURN REST credentials
#              from the master's secret, every peer denied but the listed
#              servers (the master keeps them in coturn's database): C and
#              C x C (the player behind a fully-random router too, home Q)
#              join through it, and B x Q (punching fails after 1.2 s); credentials that expired and peers that
#              are not a listed server (the master, a private address) are
#              refused, and nothing leaves the relay toward them; the relay
#              stopped mid-game: the player is told within 3 s
#   home D     IPv6 only, a stateful firewall that drops unsolicited inbound
#              (no NAT): a player joins by hole punching over IPv6
#   home E     a router that filters by address only ("address-restricted
#              cone": any port of an address the host has sent to gets in,
#              an nft set of those addresses and a DNAT for them): a master
#              probing from its own address is fooled ("reachable yes",
#              which the server's line says was checked from one address
#              only); a second master (port 27960) probing from a second
#              address of the internet's namespace (--probe-bind
#              11.0.0.100:27961) finds it "reachable no", and a player
#              joins by hole punching through it
#   home P     the player's: IPv4 behind a plain masquerading router, IPv6
#              behind a stateful firewall
#
# Routers drop unsolicited packets to themselves in their input chain (so
# conntrack never confirms them, as on real routers). Servers are
# `arena server --map-port`, the code a listen server runs on its thread.
# Exits non-zero on any wrong outcome; needs root for namespaces.
#
# NAT_CHECK_HOLD=1 builds the network, starts the master and home A's
# miniupnpd (every method on), prints the namespaces' names and waits (for
# trying the game behind these routers by hand: `ip netns exec NS arena
# host --master 11.0.0.1`); SIGTERM or Ctrl+C takes it all down.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"

if [ "$(id -u)" -ne 0 ]; then
  echo "nat-check: needs root to build network namespaces (ip netns); run it as root" >&2
  exit 1
fi
need=()
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v miniupnpd >/dev/null 2>&1 || [ -x /usr/sbin/miniupnpd ] || need+=(miniupnpd-nftables)
command -v turnserver >/dev/null 2>&1 || need+=(coturn)
if [ "${#need[@]}" -gt 0 ]; then
  echo "nat-check: installing ${need[*]}" >&2
  env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
    { apt-get update -qq && env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
if ! ip netns add "natcheck-probe$$" 2>"/tmp/natcheck-probe$$.err"; then
  echo "nat-check: cannot make a network namespace: $(cat "/tmp/natcheck-probe$$.err")" >&2
  exit 1
fi
ip netns del "natcheck-probe$$"

cargo build --quiet --workspace --bins
arena="$CARGO_TARGET_DIR/debug/arena"
tag="nc$$"
work=$(mktemp -d)
inet="${tag}-inet"
pids=()
namespaces=()
failures=()
rows=()

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  if [ -n "${KEEP_WORK:-}" ]; then echo "nat-check: logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' TERM INT

now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.2f}')"; }

ip netns add "$inet"
namespaces+=("$inet")
ip -n "$inet" link set lo up
ip -n "$inet" link add name br0 type bridge
ip -n "$inet" link set br0 up
ip -n "$inet" addr add 11.0.0.1/16 dev br0
# A second address of the master's machine, for home E's exact check.
ip -n "$inet" addr add 11.0.0.100/16 dev br0
ip -n "$inet" addr add 2a00:ff::1/64 dev br0 nodad
ip netns exec "$inet" sysctl -qw net.ipv6.conf.all.forwarding=1

# The router's rules: masquerade (or none), a stateful firewall, and the
# chains miniupnpd fills (named in its config below).
ruleset() {
  local masquerade=$1 forward_extra=${2:-}
  cat <<EOF
flush ruleset
table inet filter {
  chain input {
    type filter hook input priority 0; policy drop;
    iif "lo" accept
    iifname "lan" accept
    ct state established,related accept
    meta l4proto { icmp, ipv6-icmp } accept
  }
  chain forward {
    type filter hook forward priority 0; policy drop;
    iifname "lan" accept
    ct state established,related accept
    meta l4proto ipv6-icmp accept
    $forward_extra
    jump miniupnpd
  }
  chain miniupnpd {
  }
  chain prerouting {
    type nat hook prerouting priority -100; policy accept;
    jump prerouting_miniupnpd
  }
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    jump postrouting_miniupnpd
    $masquerade
  }
  chain prerouting_miniupnpd {
  }
  chain postrouting_miniupnpd {
  }
}
EOF
}

# home NAME INDEX KIND: a router r$NAME and a host h$NAME behind it.
# KIND: plain, random (a new port per destination), v6 (IPv6 only, no
# NAT), dual (plain IPv4 and firewalled IPv6), addr (plain IPv4 that lets
# in any port of an address the host's game port has sent to).
home() {
  local name=$1 idx=$2 kind=$3
  local r="${tag}-r$name" h="${tag}-h$name"
  ip netns add "$r"
  ip netns add "$h"
  namespaces+=("$r" "$h")
  ip link add "${tag}w$name" type veth peer name "${tag}W$name"
  ip link set "${tag}w$name" netns "$r"
  ip -n "$r" link set "${tag}w$name" name wan
  ip link set "${tag}W$name" netns "$inet"
  ip -n "$inet" link set "${tag}W$name" master br0 up
  ip link add "${tag}l$name" type veth peer name "${tag}L$name"
  ip link set "${tag}l$name" netns "$r"
  ip -n "$r" link set "${tag}l$name" name lan
  ip link set "${tag}L$name" netns "$h"
  ip -n "$h" link set "${tag}L$name" name eth0
  for ns in "$r" "$h"; do ip -n "$ns" link set lo up; done
  ip -n "$r" link set wan up
  ip -n "$r" link set lan up
  ip -n "$h" link set eth0 up
  ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  local masquerade='oifname "wan" meta nfproto ipv4 masquerade'
  if [ "$kind" != v6 ]; then
    ip -n "$r" addr add "11.0.$idx.1/16" dev wan
    ip -n "$r" route add default via 11.0.0.1
    ip -n "$r" addr add "192.168.$idx.1/24" dev lan
    ip -n "$h" addr add "192.168.$idx.10/24" dev eth0
    ip -n "$h" route add default via "192.168.$idx.1"
  fi
  if [ "$kind" = v6 ] || [ "$kind" = dual ]; then
    ip -n "$r" addr add "2a00:ff::$idx/64" dev wan nodad
    ip -n "$r" addr add "2a00:$idx::1/64" dev lan nodad
    ip -n "$r" -6 route add default via 2a00:ff::1
    ip -n "$h" addr add "2a00:$idx::10/64" dev eth0 nodad
    ip -n "$h" -6 route add default via "2a00:$idx::1"
    ip -n "$inet" -6 route add "2a00:$idx::/64" via "2a00:ff::$idx"
  fi
  [ "$kind" = random ] && masquerade="$masquerade fully-random"
  if [ "$kind" = addr ]; then
    # Address-restricted cone for the game port: every address the host's
    # port 27015 sends to goes into a set (for 120 s); a new flow from any
    # port of such an address to the router's port 27015 is sent to the
    # host (and the forward chain admits what was DNATed).
    ruleset "$masquerade" "ct status dnat accept" >"$work/r$name.nft"
    cat >>"$work/r$name.nft" <<EOF
table ip addrcone {
  set talked { type ipv4_addr; flags dynamic,timeout; timeout 120s; }
  chain out {
    type filter hook forward priority 10; policy accept;
    iifname "lan" udp sport 27015 update @talked { ip daddr }
  }
  chain in {
    type nat hook prerouting priority -110; policy accept;
    iifname "wan" udp dport 27015 ip saddr @talked dnat to 192.168.$idx.10:27015
  }
}
EOF
  else
    ruleset "$masquerade" >"$work/r$name.nft"
  fi
  ip netns exec "$r" nft -f "$work/r$name.nft"
}

home A 1 plain
home B 2 plain
home C 3 random
home D 4 v6
home E 5 addr
home P 9 dual
home Q 10 random
ns_of() { echo "${tag}-$1"; }

# The relay: coturn on the "internet", every peer denied but the rows the
# master keeps in its database (the listed servers).
relay_ns="${tag}-relay"
ip netns add "$relay_ns"
namespaces+=("$relay_ns")
ip link add "${tag}wR" type veth peer name "${tag}WR"
ip link set "${tag}wR" netns "$relay_ns"
ip -n "$relay_ns" link set "${tag}wR" name wan
ip link set "${tag}WR" netns "$inet"
ip -n "$inet" link set "${tag}WR" master br0 up
ip -n "$relay_ns" link set lo up
ip -n "$relay_ns" link set wan up
ip -n "$relay_ns" addr add 11.0.0.3/16 dev wan
ip -n "$relay_ns" route add default via 11.0.0.1
turn_secret="nat-check-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
printf '%s\n' "$turn_secret" >"$work/turn-secret"
chmod 600 "$work/turn-secret"
# What leaves the relay toward addresses no player may reach through it.
printf '%s\n' 'table inet count {' '  chain output {' \
  '    type filter hook output priority 0; policy accept;' \
  '    ip daddr { 11.0.0.1, 192.168.3.10 } udp dport != 3478 counter' '  }' '}' >"$work/relay-count.nft"
ip netns exec "$relay_ns" nft -f "$work/relay-count.nft"
relay_pid=""
start_relay() {
  ip netns exec "$relay_ns" turnserver -n --listening-ip=11.0.0.3 --relay-ip=11.0.0.3 --listening-port=3478 \
    --use-auth-secret --static-auth-secret="$turn_secret" --realm=arena.test \
    --min-port=50000 --max-port=50999 --max-bps=64000 --user-quota=4 --total-quota=200 \
    --no-tcp --no-tls --no-dtls --no-tcp-relay --no-cli --no-multicast-peers --no-rfc5780 \
    --no-stun-backward-compatibility --no-software-attribute --max-allocate-lifetime=3600 \
    --userdb="$work/turndb" --pidfile="$work/turnserver.pid" --log-file=stdout --simple-log \
    --denied-peer-ip=0.0.0.0-255.255.255.255 --denied-peer-ip=::-ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff \
    >>"$work/turnserver.log" 2>&1 &
  relay_pid=$!
  pids+=("$relay_pid")
  # coturn makes its database (with the table the master keeps) at start.
  for _ in $(seq 50); do [ -s "$work/turndb" ] && break; sleep 0.1; done
}
start_relay

ip netns exec "$inet" "$arena" master --bind "[::]:27950" --listing-timeout-s 120 \
  --turn-server 11.0.0.3:3478 --turn-secret-file "$work/turn-secret" --turn-userdb "$work/turndb" \
  --turn-realm arena.test --turn-relay-ports 50000-50999 >"$work/master.out" 2>"$work/master.log" &
pids+=($!)
# The two-address master (home E): probes from 11.0.0.100.
ip netns exec "$inet" "$arena" master --bind "11.0.0.1:27960" --probe-bind "11.0.0.100:27961" \
  --listing-timeout-s 120 >"$work/master2.out" 2>"$work/master2.log" &
pids+=($!)
sleep 0.5

# miniupnpd in home A's router with UPnP and/or NAT-PMP+PCP on.
miniupnpd_pid=""
start_miniupnpd() {
  local upnp=$1 natpmp=$2
  cat >"$work/miniupnpd.conf" <<EOF
ext_ifname=wan
listening_ip=lan
port=5000
enable_upnp=$upnp
enable_natpmp=$natpmp
secure_mode=yes
system_uptime=yes
min_lifetime=2
max_lifetime=86400
upnp_table_name=filter
upnp_nat_table_name=filter
upnp_forward_chain=miniupnpd
upnp_nat_chain=prerouting_miniupnpd
upnp_nat_postrouting_chain=postrouting_miniupnpd
uuid=3d3cec3a-8cf0-11e0-98ee-001a6bd2d07b
allow 1024-65535 192.168.1.0/24 1024-65535
deny 0-65535 0.0.0.0/0 0-65535
EOF
  ip netns exec "$(ns_of rA)" /usr/sbin/miniupnpd -d -f "$work/miniupnpd.conf" -P "$work/miniupnpd.pid" \
    >>"$work/miniupnpd.log" 2>&1 &
  miniupnpd_pid=$!
  pids+=("$miniupnpd_pid")
  sleep 0.5
}
stop_miniupnpd() {
  [ -n "$miniupnpd_pid" ] && kill "$miniupnpd_pid" 2>/dev/null && wait "$miniupnpd_pid" 2>/dev/null || true
  miniupnpd_pid=""
}
# The port mappings miniupnpd holds for port 27015 (its DNAT rules).
router_mappings() {
  ip netns exec "$(ns_of rA)" nft list chain inet filter prerouting_miniupnpd 2>/dev/null | grep -c "dport 27015" || true
}

if [ -n "${NAT_CHECK_HOLD:-}" ]; then
  start_miniupnpd yes yes
  echo "nat-check: holding the network: hosts ${tag}-hA (miniupnpd router), ${tag}-hB (plain NAT)," \
    "${tag}-hC (a new port per destination), ${tag}-hD (IPv6 firewall), ${tag}-hP (player);" \
    "master at 11.0.0.1:27950 and [2a00:ff::1]:27950 in ${tag}-inet"
  sleep infinity &
  pids+=($!)
  wait $!
fi

server_pid=""
# start_server CASE NS ARGS...: waits for the server's first verdict line.
start_server() {
  local case=$1 ns=$2
  shift 2
  server_log="$work/server-$case.log"
  server_started=$(now)
  ip netns exec "$ns" "$arena" server --name "Home $case" --bind "[::]:27015" --bots 1 --tick 32 \
    --seconds 60 "$@" >"$work/server-$case.out" 2>"$server_log" &
  server_pid=$!
  pids+=("$server_pid")
}
# wait_for FILE PATTERN SECONDS: the time it took, or "" after SECONDS.
wait_for() {
  local file=$1 pattern=$2 limit=$3 start
  start=$(now)
  while python3 -c "import sys; sys.exit(0 if $(now) - $start < $limit else 1)"; do
    if grep -q -- "$pattern" "$file" 2>/dev/null; then
      since "$server_started"
      return 0
    fi
    sleep 0.1
  done
  echo ""
}
last_internet_line() { grep -o "internet: .*" "$server_log" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g'; }
# Sets line, external and how from the server's last "internet:" line.
read_internet_line() {
  line=$(last_internet_line)
  external=$(echo "$line" | sed -n 's/internet: external \([^ ]*\) (\([^)]*\)).*/\1/p')
  how=$(echo "$line" | sed -n 's/internet: external \([^ ]*\) (\([^)]*\)).*/\2/p')
}

# join CASE ADDR MASTERS...: a headless player from home P; prints joined_after_s or "".
join() {
  local case=$1 addr=$2
  shift 2
  local masters=()
  for m in "$@"; do masters+=(--master "$m"); done
  join_started=$(now)
  ip netns exec "$(ns_of "${PLAYER_HOME:-hP}")" "$arena" bots --connect "$addr" "${masters[@]}" --count 1 --seconds 5 \
    --name "Player " --report "$work/join-$case.json" >"$work/join-$case.out" 2>"$work/join-$case.log" || true
  since "$join_started" >"$work/join-$case.elapsed"
  python3 - "$work/join-$case.json" <<'PY' 2>/dev/null || echo ""
import json, sys
c = json.load(open(sys.argv[1]))["clients"][0]
print(f"{c['joined_after_s']:.2f}" if c["joined_after_s"] is not None and c["error"] is None else "")
PY
}
report_field() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['clients'][0][sys.argv[2]])" "$work/join-$1.json" "$2" 2>/dev/null || echo "?"
}
# per_datagram CASE sent|received: UDP payload bytes per datagram the player saw.
per_datagram() {
  python3 -c "import json,sys; print(f\"{json.load(open(sys.argv[1]))['clients'][0]['bytes_per_datagram_'+sys.argv[2]]:.1f}\")" \
    "$work/join-$1.json" "$2" 2>/dev/null || echo "?"
}
join_error() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['clients'][0]['error'] or '')" "$work/join-$1.json" 2>/dev/null || true
}

stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}

fail() {
  failures+=("$1")
  echo "nat-check: FAIL: $1" >&2
}

row() { rows+=("$(printf '%-10s | %-8s | %-22s | %6s | %6s | %s' "$@")"); }

# --- Home A: each mapping method in turn -----------------------------------
for method in upnp natpmp pcp; do
  case $method in
    upnp) start_miniupnpd yes no; label=UPnP ;;
    natpmp) start_miniupnpd no yes; label=NAT-PMP ;;
    pcp) start_miniupnpd no yes; label=PCP ;;
  esac
  start_server "A-$method" "$(ns_of hA)" --master 11.0.0.1:27950 --map-port "$method" --map-lease-s 6
  listed=$(wait_for "$server_log" "listed yes" 10)
  reachable=$(wait_for "$server_log" "reachable yes" 10)
  read_internet_line
  joined=$(join "A-$method" "${external:-11.0.1.1:27015}" 11.0.0.1:27950)
  # The lease is 6 s: by now (>= 7 s after start) it has been renewed, and
  # the router still holds the mapping.
  sleep_until=$(python3 -c "print(max(0.0, 7.5 - ($(now) - $server_started)))")
  sleep "$sleep_until"
  renewed=$(grep -c "port mapping renewed" "$server_log" || true)
  held=$(router_mappings)
  stop_server
  removed=$(router_mappings)
  outcome="joined"
  [ "$how" = "$label" ] || { fail "A-$method: mapped by '$how', not $label ($line)"; outcome="wrong method"; }
  [ -n "$reachable" ] || { fail "A-$method: not reachable ($line)"; outcome="unreachable"; }
  [ -n "$listed" ] || { fail "A-$method: not listed"; outcome="unlisted"; }
  if [ -z "$joined" ]; then
    fail "A-$method: the player did not join: $(join_error "A-$method")"
    outcome="no join"
  elif python3 -c "import sys; sys.exit(0 if $joined <= 3.0 else 1)"; then :; else
    fail "A-$method: joined after $joined s (> 3 s)"
  fi
  [ "${renewed:-0}" -ge 1 ] || fail "A-$method: the 6 s lease was not renewed (log: $server_log)"
  [ "${held:-0}" -ge 1 ] || fail "A-$method: the router lost the mapping before the server stopped"
  [ "${removed:-0}" -eq 0 ] || fail "A-$method: the mapping is still in the router after SIGTERM"
  grep -q "port mapping .* removed" "$server_log" || fail "A-$method: the server did not say it removed the mapping"
  row "A $label" "$how" "${external:-?}" "${listed:-—}" "${joined:-—}" \
    "$outcome; renewed ${renewed}x, held at 7.5 s: $held, after SIGTERM: $removed"
  stop_miniupnpd
done

# punch_case CASE LABEL HOST SERVER_MASTER FALLBACK OUTCOME PLAYER_MASTERS...: a
# server nobody can reach, joined by hole punching through the master.
punch_case() {
  local case=$1 label=$2 host=$3 server_master=$4 fallback=$5 outcome=$6
  shift 6
  start_server "$case" "$(ns_of "$host")" --master "$server_master"
  local listed verdict joined introduced
  listed=$(wait_for "$server_log" "listed yes" 10)
  verdict=$(wait_for "$server_log" "reachable no" 10)
  read_internet_line
  joined=$(join "$case" "${external:-$fallback}" "$@")
  introduced=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['clients'][0]['introduced'])" \
    "$work/join-$case.json" 2>/dev/null || echo "?")
  local per_datagram
  per_datagram="bytes/datagram up $(per_datagram "$case" sent), down $(per_datagram "$case" received)"
  stop_server
  [ -n "$verdict" ] || fail "$case: the server did not find itself unreachable ($line)"
  [ -n "$listed" ] || fail "$case: not listed"
  if [ -z "$joined" ]; then
    fail "$case: the player did not join: $(join_error "$case")"
    outcome="no join"
  elif ! python3 -c "import sys; sys.exit(0 if $joined <= 3.0 else 1)"; then
    fail "$case: joined after $joined s (> 3 s)"
  fi
  [ "$introduced" = True ] || fail "$case: the player was not introduced by the master"
  row "$label" "$how" "${external:-?}" "${listed:-—}" "${joined:-—}" "$outcome (introduced: $introduced); $per_datagram"
}

# --- Home B: plain NAT, hole punching --------------------------------------
punch_case B "B plain" hB 11.0.0.1:27950 11.0.2.1:27015 "joined by hole punching" 11.0.0.1:27950

# --- Home C: a new port per destination, joined through the relay ---------
# relay_case CASE LABEL HOST PLAYER_HOME FALLBACK: a server behind HOST, a
# player from PLAYER_HOME; the join must go through the relay within 3 s.
relay_case() {
  local case=$1 label=$2 host=$3 player=$4 fallback=$5
  start_server "$case" "$(ns_of "$host")" --master 11.0.0.1:27950
  local listed advised joined relayed sent received
  listed=$(wait_for "$server_log" "listed yes" 10)
  # (Home B's verdict may be "yes" from the one-address master: its router
  # still holds the last case's binding to the master's probe port.)
  if [ "$host" = hC ]; then
    advised=$(wait_for "$server_log" "changes ports per destination" 5)
  else
    # An address, not the "external unknown" said before the master answers.
    advised=$(wait_for "$server_log" "internet: external [0-9[]" 5)
  fi
  # A host that has been up a few seconds: the relay has read the master's
  # row for it (the master says "busy" until then, 4 s; coturn reads its
  # database every few seconds).
  sleep 4
  read_internet_line
  joined=$(PLAYER_HOME=$player join "$case" "${external:-$fallback}" 11.0.0.1:27950)
  relayed=$(report_field "$case" relayed)
  sent=$(per_datagram "$case" sent)
  received=$(per_datagram "$case" received)
  stop_server
  local outcome="joined through the relay; bytes/datagram up $sent, down $received"
  [ -n "$advised" ] || fail "$case: the server did not find what its router does within 5 s ($line)"
  [ -n "$listed" ] || fail "$case: not listed"
  if [ -z "$joined" ]; then
    fail "$case: the player did not join: $(join_error "$case")"
    outcome="no join: $(join_error "$case")"
  elif ! python3 -c "import sys; sys.exit(0 if $joined <= 3.0 else 1)"; then
    fail "$case: joined after $joined s (> 3 s)"
  fi
  [ "$relayed" = True ] || fail "$case: the player's report does not say the relay carried it ($relayed)"
  row "$label" "$how" "${external:-?}" "${listed:-—}" "${joined:-—}" "$outcome"
}
relay_case C "C random" hC hP 11.0.3.1:27015
relay_case CxC "C x C" hC hQ 11.0.3.1:27015
# A host whose router punching crosses, and a player whose router does not:
# punching fails, then the relay.
relay_case BxQ "B x Q" hB hQ 11.0.2.1:27015

# --- The relay refuses all but listed servers, and expired credentials ---
# turn_user OFFSET_S NAME: TURN REST credentials as the master makes them.
turn_user() {
  local u="$(( $(date +%s) + $1 )):$2"
  printf '%s %s' "$u" "$(printf %s "$u" | openssl dgst -sha1 -hmac "$turn_secret" -binary | base64)"
}
# uclient PEER_IP USER PASS: coturn's own client from home P, sending to PEER_IP.
uclient() {
  ip netns exec "$(ns_of hP)" timeout 10 turnutils_uclient -u "$2" -w "$3" -e "$1" -r 27015 -n 3 -l 100 -c \
    11.0.0.3 2>&1 || true
}
# Each its own name (coturn's --user-quota counts allocations per name).
read -r user_a pass_a <<<"$(turn_user 600 11.0.9.201)"
read -r user_b pass_b <<<"$(turn_user 600 11.0.9.202)"
read -r old_user old_pass <<<"$(turn_user -60 11.0.9.203)"
refused_master=$(uclient 11.0.0.1 "$user_a" "$pass_a" | grep -c "403" || true)
refused_private=$(uclient 192.168.3.10 "$user_b" "$pass_b" | grep -c "403" || true)
# Expired: no allocation, and the relay says whose credentials it refused.
refused_expired=$(uclient 11.0.3.1 "$old_user" "$old_pass" | grep -c "Cannot complete Allocation" || true)
grep -q "Cannot find credentials of user <$old_user>" "$work/turnserver.log" || refused_expired=0
leaked=$(ip netns exec "$relay_ns" nft list table inet count | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
[ "${refused_master:-0}" -ge 1 ] || fail "relay: a peer that is not a listed server (the master) was not refused"
[ "${refused_private:-0}" -ge 1 ] || fail "relay: a private peer (192.168.3.10) was not refused"
[ "${refused_expired:-0}" -ge 1 ] || fail "relay: credentials that expired a minute ago were not refused"
[ "${leaked:-1}" = 0 ] || fail "relay: $leaked datagrams left the relay toward the master or a private address"
row "relay" "TURN" "11.0.0.3:3478" "—" "—" \
  "refused: unlisted peer (403 x${refused_master}), private peer (403 x${refused_private}), expired credentials (no allocation); datagrams sent to them: ${leaked:-?}"

# --- The relay stops mid-game: the player is told within 3 s ---------------
start_server Rstop "$(ns_of hC)" --master 11.0.0.1:27950
wait_for "$server_log" "listed yes" 10 >/dev/null
wait_for "$server_log" "changes ports per destination" 5 >/dev/null
read_internet_line
sleep 4
ip netns exec "$(ns_of hP)" "$arena" bots --connect "${external:-11.0.3.1:27015}" --master 11.0.0.1:27950 \
  --count 1 --seconds 14 --name "Player " --report "$work/join-Rstop.json" \
  >"$work/join-Rstop.out" 2>"$work/join-Rstop.log" &
player_pid=$!
pids+=("$player_pid")
server_started=$(now)
carried=$(wait_for "$work/join-Rstop.log" "carries the connection" 6)
sleep 1
kill "$relay_pid" 2>/dev/null || true
server_started=$(now)
told=$(wait_for "$work/join-Rstop.log" "nothing came through the relay" 6)
wait "$player_pid" 2>/dev/null || true
stop_server
[ -n "$carried" ] || fail "relay stop: the relay never carried the connection"
if [ -z "$told" ]; then
  fail "relay stop: the player was not told within 6 s"
elif ! python3 -c "import sys; sys.exit(0 if $told <= 3.0 else 1)"; then
  fail "relay stop: the player was told after $told s (> 3 s)"
fi
# Then it rejoins through a new allocation, which the dead relay cannot
# give: the player is told why.
rejoin_error=$(join_error Rstop)
case "$rejoin_error" in
  *"did not answer"*) ;;
  *) fail "relay stop: the rejoin did not end with the reason: '$rejoin_error'" ;;
esac
grep -q "rejoining" "$work/join-Rstop.log" || fail "relay stop: the player did not try to rejoin"
row "relay stop" "TURN" "11.0.0.3:3478" "—" "—" "relay killed mid-game: the player told after ${told:-—} s, rejoined through a new allocation: $rejoin_error"

# --- Home D: IPv6 behind a stateful firewall --------------------------------
punch_case D "D IPv6" hD "[2a00:ff::1]:27950" "[2a00:4::10]:27015" "joined by hole punching over IPv6" \
  11.0.0.1:27950 "[2a00:ff::1]:27950"

# --- Home E: a router that filters by address only --------------------------
# The one-address master is fooled, and the server's line says how little
# its check proved.
start_server E1 "$(ns_of hE)" --master 11.0.0.1:27950
fooled=$(wait_for "$server_log" "reachable yes (checked from the master's one address only" 10)
read_internet_line
stop_server
[ -n "$fooled" ] || fail "E: the one-address check did not say it was one address only ($line)"
row "E 1-addr" "$how" "${external:-?}" "—" "—" "reachable yes, said to be a one-address check: ${fooled:+yes}"
# The two-address master finds it out; a player joins by punching.
punch_case E "E addr-only" hE 11.0.0.1:27960 11.0.5.1:27015 "reachable no (two-address master), joined by hole punching" \
  11.0.0.1:27960

echo
printf '%-10s | %-8s | %-22s | %6s | %6s | %s\n' case method "external address seen" listed joined outcome
printf '%s\n' "-----------+----------+------------------------+--------+--------+--------"
printf '%s\n' "${rows[@]}"
echo "(listed: seconds from the server's start to a master listing it; joined: seconds from the player's start to being in the game)"
if [ "${#failures[@]}" -gt 0 ]; then
  echo "nat-check: ${#failures[@]} wrong outcome(s)" >&2
  KEEP_WORK=1
  exit 1
fi
echo "nat-check: ok"
