#!/usr/bin/env bash
# On a lent GPU machine (the `device` tool's run, carrying .gpu-deps from
# scripts/gpu-deps.sh): builds gpusweep there and runs the GPU checks, so that
# a session's 15 minutes of device time go to measuring, not to setting up.
#   1. unpacks .gpu-deps/*.deb into /tmp/gpu-deps (never into /);
#   2. configures build-gpu/ against them and the machine's python3 torch
#      (its LibTorch, CUDA), benchmarks off, and builds it with every core
#      (kept between calls while the machine stays warm: a second call only
#      checks);
#   3. the stages asked for, each with its output under /tmp/gpu-there,
#      packed at the end into $OUT/gpu-there.tgz (the device tool brings back
#      a few files only) with gpu-check's summary beside it:
#        --tests   ctest -L gpu (the GPU tests; the two-GPU ones skip);
#        --quick   scripts/gpu-check.sh --quick, its tests left out when
#                  --tests ran (in this call or an earlier one there);
#        --graphs  bench/graphs/graphs.sh (CUDA graphs against eager and the
#                  anchor script).
#      Without a stage: build only.
# One call must end within the tool's 10 minutes, and a session has 15 of
# device time, the machine's start included: --tests first (the build, about
# 1.5 min on 16 cores, and the GPU tests), then --quick while the machine is
# warm (gpu-check at most 8 min, less without its tests), --graphs if time
# is left.
# --configure-only stops after step 2's configuration (try it here: it must
# find every package under /tmp/gpu-deps).
# Usage: scripts/gpu-there.sh [--tests] [--quick] [--graphs] [--configure-only]
set -euo pipefail
cd "$(dirname "$0")/.."
tests=0 quick=0 graphs=0 configure_only=0
for a in "$@"; do
  case "$a" in
    --tests) tests=1 ;;
    --quick) quick=1 ;;
    --graphs) graphs=1 ;;
    --configure-only) configure_only=1 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-there.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
out=/tmp/gpu-there
mkdir -p "$out"
pack() {  # what comes back: the outputs packed, the summary apart
  [ -n "${OUT:-}" ] || return 0
  tar czf "$OUT/gpu-there.tgz" -C /tmp gpu-there
  [ -f "$out/gpu-check/summary.txt" ] && cp "$out/gpu-check/summary.txt" "$OUT/"
  return 0
}
trap pack EXIT
start=$(date +%s)
stamp() { echo "[gpu-there $(( $(date +%s) - start )) s] $*"; }

deps=/tmp/gpu-deps
if ! ls .gpu-deps/*.deb > /dev/null 2>&1; then
  echo "gpu-there.sh: no .gpu-deps/*.deb: run scripts/gpu-deps.sh here first and carry .gpu-deps" >&2
  exit 2
fi
if [ ! -f "$deps/.unpacked" ]; then
  for d in .gpu-deps/*.deb; do dpkg -x "$d" "$deps"; done
  touch "$deps/.unpacked"
fi
stamp "packages unpacked into $deps"

py=${GPU_THERE_PYTHON:-$(command -v python3)}  # the torch to build against (there: python3)
if [ ! -f build-gpu/build.ninja ]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$deps/usr" -DGPUSWEEP_PYTHON="$py" -DGPUSWEEP_BUILD_BENCH=OFF \
    > "$out/configure.log" 2>&1 || { tail -n 30 "$out/configure.log"; exit 1; }
fi
grep -E '^(Boost_DIR|nlohmann_json_DIR|Catch2_DIR|SQLite3_INCLUDE_DIR|Torch_DIR):' \
  build-gpu/CMakeCache.txt | sed 's/^/gpu-there: /'
stamp "configured"
[ "$configure_only" = 1 ] && exit 0

cmake --build build-gpu --parallel "$(nproc)" > "$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log"; exit 1; }
stamp "built"

rc=0
if [ "$tests" = 1 ]; then
  stamp "ctest -L gpu"
  (cd build-gpu && ctest -L gpu --output-on-failure --timeout 400) > "$out/ctest.log" 2>&1 || rc=1
  # ctest's own exit status is rc; a log without test lines means none ran.
  if ! grep -E "Test +#|tests passed|tests failed" "$out/ctest.log"; then
    echo "gpu-there: ctest ran no GPU test (see ctest.log)"
    rc=1
  fi
fi
if [ "$quick" = 1 ]; then
  stamp "gpu-check --quick"
  no_tests=()
  # The GPU tests ran in this call or an earlier one on this machine.
  { [ "$tests" = 1 ] || [ -f "$out/ctest.log" ]; } && no_tests=(--no-tests)
  scripts/gpu-check.sh --quick --build build-gpu --out "$out/gpu-check" "${no_tests[@]}" ||
    rc=1
fi
if [ "$graphs" = 1 ]; then
  stamp "bench/graphs"
  GPUSWEEP_PYTHON="" bench/graphs/graphs.sh --build build-gpu --out "$out/graphs" || rc=1
fi
stamp "done (exit $rc)"
exit "$rc"
