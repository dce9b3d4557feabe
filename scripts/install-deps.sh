#!/usr/bin/env bash
# Installs what gpusweep needs, only what is missing:
#   1. Debian 12 packages (compiler, CMake, Boost, SQLite, nlohmann-json,
#      Catch2, ...), as root;
#   2. LibTorch 2.x with CUDA: the Python package index's torch wheel (pinned
#      below), which carries LibTorch's headers, libraries and CMake package,
#      into the project's own virtual environment .venv/ (ignored by git).
#      A torch that is already importable, 2.x and built with CUDA, by
#      .venv/bin/python3 or by python3 on PATH, is used as it is instead.
#      CMake finds Torch the same way (cmake/GpusweepTorch.cmake), with no
#      flag; CMAKE_PREFIX_PATH=/path/to/libtorch (an unpacked official
#      LibTorch) takes precedence over both.
#   3. a .pth file that puts the Python SDK (sdk/python) on .venv's path.
# --test adds what the test suite uses (Chromium renders the HTML report,
# clang builds the libFuzzer target, clang-format checks the style, Slurm and
# munge run the launch test on a local one-node cluster,
# tests/slurm/local_cluster.sh).
# Set GPUSWEEP_SKIP_TORCH=1 to install the Debian packages only.
# Nothing is downloaded from outside Debian's archive and the package index.
set -euo pipefail
cd "$(dirname "$0")/.."

# The LibTorch the project is built and tested with. The CUDA toolkit in
# /usr/local/cuda compiles against it; the wheel brings its own CUDA runtime,
# cuBLAS and cuDNN libraries, which are the ones loaded at run time.
torch_pin="torch==2.15.0"

packages=(
  g++ cmake ninja-build ccache git pkg-config
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  nlohmann-json3-dev catch2 libsqlite3-dev sqlite3
)
if [ "${1:-}" = "--test" ]; then
  packages+=(chromium python3 clang clang-format libclang-rt-14-dev slurmctld slurmd slurm-client munge)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Creating .venv needs Python's venv module (Debian's python3-venv).
need_torch=1
[ "${GPUSWEEP_SKIP_TORCH:-0}" = 1 ] && need_torch=0

# A python whose torch suits: 2.x, built with CUDA. Prints its path.
suitable_torch_python() {
  local py
  for py in .venv/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys, torch
major = int(torch.__version__.split(".")[0])
sys.exit(0 if major >= 2 and torch.version.cuda else 1)' 2>/dev/null; then
      case "$py" in
        */*) echo "$PWD/$py" ;;
        *) command -v "$py" ;;
      esac
      return 0
    fi
  done
  return 1
}

# The project's .venv sees the Python SDK (sdk/python/gpusweep) through a .pth
# file in its site-packages, so that `.venv/bin/python3 -c 'import gpusweep'`
# and an editor using that interpreter find it; nothing is built or copied.
sdk_on_venv_path() {
  [ -x .venv/bin/python3 ] || return 0
  local site
  site=$(.venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$PWD/sdk/python" > "$site/gpusweep-sdk.pth"
  echo "install-deps: .venv imports gpusweep from $PWD/sdk/python ($site/gpusweep-sdk.pth)"
}

torch_python=""
if [ "$need_torch" = 1 ]; then
  torch_python=$(suitable_torch_python || true)
  if [ -z "$torch_python" ] && ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    missing+=(python3 python3-venv)
  fi
fi

# The python workload (plugins/python) embeds the interpreter torch lives in:
# it needs that Python's headers and libpython (Debian's python3-dev).
if [ "$need_torch" = 1 ] && ! "${torch_python:-python3}" -c 'import os, sys, sysconfig
sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' \
    2>/dev/null; then
  missing+=(python3-dev)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
else
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
fi

# --test: the training libraries the script workload's tests run users'
# scripts with (requirements-train.txt) and what the benchmarks' smoke runs
# import (requirements-bench.txt), into the torch's environment, when
# any is missing; pip is told to leave torch as it is.
train_libraries() {
  [ "${1:-}" = "--test" ] || return 0
  local py=$2
  if "$py" -c 'import transformers, accelerate, lightning, jsonargparse, scipy' 2>/dev/null; then
    echo "install-deps: transformers, accelerate, lightning and scipy present for $py"
    return 0
  fi
  echo "install-deps: installing requirements-train.txt and requirements-bench.txt for $py"
  "$py" -m pip install --disable-pip-version-check -q -r requirements-train.txt \
    -r requirements-bench.txt
  "$py" -c 'import torch, transformers, lightning' || {
    echo "install-deps: $py cannot import transformers and lightning after installing" \
         "requirements-train.txt; see pip's output above" >&2
    exit 1
  }
}

[ "$need_torch" = 1 ] || exit 0
if [ -n "$torch_python" ]; then
  echo "install-deps: using the torch already importable by $torch_python:" \
       "$("$torch_python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null)"
  sdk_on_venv_path
  train_libraries "${1:-}" "$torch_python"
  exit 0
fi
# The wheel and its NVIDIA libraries are about 4.5 GiB installed (about 3 GiB
# to download); pip shows its progress.
echo "install-deps: installing $torch_pin (LibTorch with CUDA) into .venv/;" \
     "about 3 GiB to download, 1 to 5 minutes"
if [ ! -x .venv/bin/python3 ]; then
  python3 -m venv .venv
fi
.venv/bin/python3 -m pip install --disable-pip-version-check --progress-bar on "$torch_pin" numpy
torch_python=$(suitable_torch_python) || {
  echo "install-deps: .venv/bin/python3 cannot import a CUDA build of torch 2.x after installing" \
       "$torch_pin; see pip's output above" >&2
  exit 1
}
echo "install-deps: $("$torch_python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)') in .venv/"
sdk_on_venv_path
train_libraries "${1:-}" "$torch_python"
