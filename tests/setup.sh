#!/usr/bin/env bash
# Installs what distlab needs on Debian 12 (only what is missing) and
# configures a build directory. Usage: tests/setup.sh [BUILD_DIR [MESON_ARGS...]]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config gcc libuv1-dev libjansson-dev libssl-dev libreadline-dev
          libncurses-dev libcmocka-dev libopenmpi-dev openmpi-bin python3 clang-format
          tmux)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

build=${1:-build}
shift || true
if [ -f "$build/build.ninja" ]; then
    [ $# -eq 0 ] || meson configure "$build" "$@" >/dev/null
else
    meson setup "$build" "$@" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "built: $build/cli/distlab"
