#!/usr/bin/env bash
# The headless build stays headless: the crates that draw nothing
# (arena_server, arena_master, arena_lab, arena_client, arena_fuzz) and the `arena` binary without its
# default `window` feature depend on no renderer, window or audio (no wgpu,
# winit, bevy_render, bevy_winit, bevy_audio, cpal or ALSA in their normal
# dependency trees), and that binary and its tests compile without a
# warning (clippy: the default build's lint never sees the code that only
# this build has). Cheap: `cargo tree`, then a check, not a build (CI builds
# the full Bevy once, for the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"

# Crate names (a whole name, or a family's prefix) a headless tree must not hold.
forbidden='^(wgpu.*|winit|bevy_render|bevy_winit|bevy_audio|cpal|alsa.*)$'

failed=0
check_tree() {
  local what=$1
  shift
  local names found
  names=$(cargo tree --locked -e normal --prefix none --format '{p}' "$@" | awk '{ print $1 }' | sort -u)
  found=$(grep -E "$forbidden" <<<"$names" || true)
  if [ -n "$found" ]; then
    echo "FAIL $what depends on: $(tr '\n' ' ' <<<"$found")" >&2
    failed=1
  else
    echo "ok   $what: $(wc -l <<<"$names") crates, none of wgpu, winit, bevy_render, bevy_winit, bevy_audio, cpal, alsa"
  fi
}

check_tree "arena_server" -p arena_server
check_tree "arena_master" -p arena_master
check_tree "arena_lab" -p arena_lab
check_tree "arena_client" -p arena_client
check_tree "arena_fuzz" -p arena_fuzz
check_tree "arena --no-default-features" -p arena --no-default-features

# The other way round: the default build does have the window, so the
# check above cannot pass by looking at nothing.
if ! cargo tree --locked -e normal --prefix none --format '{p}' -p arena | grep -q '^winit '; then
  echo "FAIL the default arena binary has no winit: is the \`window\` feature still on by default?" >&2
  failed=1
fi

[ "$failed" -eq 0 ] || exit 1

echo "cargo clippy --no-default-features -p arena --all-targets -- -D warnings"
cargo clippy --locked --quiet --no-default-features -p arena --all-targets -- -D warnings
echo "headless build: ok"
