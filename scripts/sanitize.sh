#!/usr/bin/env bash
# The host, the store and their unit tests built with AddressSanitizer and
# UndefinedBehaviorSanitizer (no LibTorch plugins: the host never loads
# LibTorch), then the unit tests run under them. Any finding fails. It is
# the suite's Clang build: every host layer (the gpusweep binary too) is
# compiled by clang++, whose -Werror=uninitialized refuses what GCC lets by
# (a reference bound to itself).
# The unit tests are one binary per layer (tests/unit/<layer>/).
# Usage: scripts/sanitize.sh [Catch2 test spec]   (default: every unit test
# but the large statistical simulations, tagged [sim]: thousands of races
# and precision runs, minutes under the sanitizers, through the same code
# the other tests run there)
set -euo pipefail
cd "$(dirname "$0")/.."
# Line tables are all a sanitizer's report needs (file and line of each
# frame) and cost a quarter less to compile than full debug information.
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUSWEEP_SANITIZE=ON \
  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DGPUSWEEP_BUILD_TORCH_PLUGINS=OFF -DGPUSWEEP_BUILD_BENCH=OFF > /dev/null
units=$(ninja -C build-sanitize -t targets all | sed -n 's/^\(unit_[a-z_]*\): .*/\1/p' | sort -u)
ninja -C build-sanitize $units gpusweep
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
[ $# -eq 0 ] && set -- "~[sim]"
for unit in $units; do
  echo "sanitize: $unit"
  build-sanitize/tests/"$unit" "$@"
done
