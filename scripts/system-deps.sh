# Sourced by play.sh and test.sh: installs the Debian/Ubuntu packages Arena
# needs when any is missing, and does nothing otherwise.
#
#   build    what compiling needs: a C toolchain and pkg-config for the -sys
#            crates, cmake for libopus (voice; built from its bundled
#            source), ALSA headers for audio
#   agones   what the arena-agones sidecar's build needs: protoc for the
#            Agones SDK's gRPC code, OpenSSL headers for dummy-agones' test
#            client
#   web      what the browser build needs (scripts/web-build.sh): Debian's
#            rustc-web 1.96 and its std sources (wasm32's std is built from
#            them, -Zbuild-std), the linker it names (rust-lld is lld-22)
#   browser  what the browser check needs (scripts/web-check.sh): Chromium
#            and its WebDriver, Mesa's EGL and llvmpipe (software WebGL 2)
#   runtime  what the window needs: X11 client libraries, xkbcommon, a Vulkan
#            loader and Mesa's drivers (a desktop usually has them all)

arena_packages() {
  local kind
  local -a wanted=()
  for kind in "$@"; do
    case "$kind" in
      build) wanted+=(build-essential pkg-config cmake libasound2-dev) ;;
      agones) wanted+=(protobuf-compiler libssl-dev pkg-config) ;;
      web) wanted+=(rustc-web cargo-web rust-web-src lld-22) ;;
      browser) wanted+=(chromium chromium-driver libegl-mesa0 libgl1-mesa-dri) ;;
      runtime) wanted+=(libx11-6 libxcursor1 libxrandr2 libxi6 libx11-xcb1 libxkbcommon-x11-0 libvulkan1 mesa-vulkan-drivers) ;;
    esac
  done
  command -v dpkg-query >/dev/null 2>&1 || return 0 # not Debian/Ubuntu: the README says what to install
  local -a missing=()
  local pkg
  for pkg in "${wanted[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "arena: installing missing system packages: ${missing[*]}" >&2
  local -a sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "arena: please install them as root: apt-get install ${missing[*]}" >&2
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# One target directory for every build (play, test, CI): Bevy takes half an
# hour to build from scratch, so nothing should build it twice.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/arena-target}"
