#!/usr/bin/env bash
# Here, before a GPU machine is lent (the `device` tool): downloads into
# .gpu-deps/ (ignored by git) the Debian packages that the GPU machines' image
# lacks and gpusweep builds against: Boost (program_options, filesystem),
# SQLite, nlohmann-json and Catch2, about 14 MB of .deb files. The image has
# CMake, ninja, nvcc and a python3 whose torch (2.11, CUDA) is the LibTorch
# to build against, and no package registry; scripts/gpu-there.sh unpacks
# these there, builds and checks, in one call that carries .gpu-deps.
# Usage: scripts/gpu-deps.sh            (then: carry [".gpu-deps"])
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  libboost1.74-dev
  libboost-program-options1.74-dev libboost-program-options1.74.0
  libboost-filesystem1.74-dev libboost-filesystem1.74.0
  libboost-system1.74-dev libboost-system1.74.0
  libboost-atomic1.74-dev libboost-atomic1.74.0
  nlohmann-json3-dev catch2 libsqlite3-dev libsqlite3-0
)
rm -rf .gpu-deps
mkdir -p .gpu-deps
# apt-get download writes into the current folder; its _apt user may not
# write /work, so download in a temporary folder it can.
tmp=$(mktemp -d)
chmod 755 "$tmp"
(cd "$tmp" && apt-get download "${packages[@]}")
mv "$tmp"/*.deb .gpu-deps/
rmdir "$tmp"
ls -1 .gpu-deps | sed 's/^/gpu-deps: /'
du -sh .gpu-deps | sed 's/^/gpu-deps: /'
