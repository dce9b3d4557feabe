#!/usr/bin/env bash
# Installs the Debian 12 packages gpusweep needs, only those missing.
# Run as root (or with sudo). Nothing is downloaded from outside Debian.
# --test adds what the test suite uses (Chromium renders the HTML report,
# clang builds the libFuzzer target, Slurm and munge run the launch test on a
# local one-node cluster, tests/slurm/local_cluster.sh).
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache git pkg-config
  libtorch-dev libopenblas0-openmp
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  nlohmann-json3-dev catch2 libsqlite3-dev sqlite3
)
if [ "${1:-}" = "--test" ]; then
  packages+=(chromium python3 clang libclang-rt-14-dev slurmctld slurmd slurm-client munge)
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
# The munge and Slurm packages start their services when installed; the tests
# start them by hand instead. A policy-rc.d that exits 101 stops invoke-rc.d
# from starting anything during the install; one that is already there (as in
# Docker images) is left alone, ours is removed afterwards.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# Written by gpusweep install-deps.sh during apt-get install.\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
