#!/usr/bin/env bash
# Builds Arena for a browser tab into OUT_DIR (default
# $CARGO_TARGET_DIR/web/site): index.html, the JS glue and the .wasm, a
# folder any static web server can serve (python3 -m http.server, nginx).
#
# Installs what it needs when missing: Debian's rustc-web 1.96 with its std
# sources and lld-22 (wasm32's std is built from source, -Zbuild-std), and
# the wasm-bindgen CLI of exactly the lock's wasm-bindgen version. rustup's
# toolchain and the native build are untouched: Debian's cargo and rustc
# are named by path (rustup's come first on PATH), the build goes to its
# own target directory inside the persistent one ($CARGO_TARGET_DIR/web).
#
#   scripts/web-build.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/system-deps.sh
arena_packages build web
out="${1:-$CARGO_TARGET_DIR/web/site}"
web_target="$CARGO_TARGET_DIR/web"
tools="$CARGO_TARGET_DIR/web-tools"

# The CLI must match the lock's wasm-bindgen to the patch ("schema version"
# errors otherwise). Not --locked: its own lock names a webpki-roots the
# registry no longer serves (../shared/reference/browser.md 4a).
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if ! "$tools/bin/wasm-bindgen" --version 2>/dev/null | grep -qx "wasm-bindgen $bindgen_version"; then
  echo "web-build: installing wasm-bindgen-cli $bindgen_version into $tools" >&2
  cargo install --quiet wasm-bindgen-cli --version "$bindgen_version" --root "$tools"
fi

started=$SECONDS
log="$web_target/build.log"
mkdir -p "$web_target"
# RUSTC_BOOTSTRAP: -Zbuild-std on a stable compiler (Debian ships no
# prebuilt std for wasm32). panic_abort: wasm32 aborts on panic.
env RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$web_target" \
  /usr/bin/cargo build --locked -p arena_web --target wasm32-unknown-unknown \
  -Zbuild-std=std,panic_abort --profile web 2>&1 | tee "$log" >&2
echo "web-build: cargo took $(( SECONDS - started )) s" >&2
# The native lints never see what only the web build compiles: its warnings
# (cargo repeats a crate's warnings even when it did not rebuild it) fail
# the build here, as clippy -D warnings fails the native one.
if grep -E '^warning: `arena_[a-z_]+` \(' "$log" >&2; then
  echo "web-build: Arena's crates have warnings in the web build (above)" >&2
  exit 1
fi

mkdir -p "$out"
# Without the name section (function names: 60 of the 130 MB): a panic
# still names its file and line.
"$tools/bin/wasm-bindgen" --target web --no-typescript --remove-name-section --out-dir "$out" --out-name arena \
  "$web_target/wasm32-unknown-unknown/web/arena_web.wasm"
cp web/index.html "$out/index.html"
wasm="$out/arena_bg.wasm"
# The compressed copy `arena server --web` serves to browsers that take
# gzip (a quarter of the size, for a friend over Wi-Fi); other servers may
# ignore it.
gzip -6 -c "$wasm" >"$wasm.gz"
echo "web-build: $out ready: $(stat -c %s "$wasm") bytes of wasm ($(stat -c %s "$wasm.gz") gzipped)" >&2
