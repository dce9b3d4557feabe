#!/usr/bin/env bash
# Installs the Debian 12 packages gpusweep needs, only those missing.
# Run as root (or with sudo). Nothing is downloaded from outside Debian.
# --test adds what the test suite uses (Chromium renders the HTML report,
# clang builds the libFuzzer target).
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache git pkg-config
  libtorch-dev libopenblas0-openmp
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  nlohmann-json3-dev catch2 libsqlite3-dev sqlite3
)
if [ "${1:-}" = "--test" ]; then
  packages+=(chromium python3 clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (sudo $0) to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
