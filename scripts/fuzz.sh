#!/usr/bin/env bash
# Fuzzes the sweep parser and validator (tests/fuzz/sweep_fuzz.cpp) with
# libFuzzer under ASan+UBSan for SECONDS (default 300). Seeds: the sweep files
# in experiments/; findings are saved as build-fuzz/crash-* and fail the run.
# Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
if ! command -v clang++ > /dev/null; then
  echo "fuzz: clang++ is not installed (apt-get install clang); not fuzzed" >&2
  exit 1
fi
# Line tables only: a finding's report names file and line, nothing more.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" -DGPUSWEEP_FUZZ=ON \
  -DGPUSWEEP_BUILD_TORCH_PLUGINS=OFF -DGPUSWEEP_BUILD_TESTS=OFF -DGPUSWEEP_BUILD_BENCH=OFF > /dev/null
ninja -C build-fuzz sweep_fuzz
mkdir -p build-fuzz/corpus
cp experiments/*.json build-fuzz/corpus/
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build-fuzz
# -rss_limit_mb: a sweep must never make the parser take more than 2 GiB.
./tests/fuzz/sweep_fuzz -max_total_time="$seconds" -dict=../tests/fuzz/sweep.dict \
  -max_len=4096 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 corpus 2>&1 | tail -n 25
