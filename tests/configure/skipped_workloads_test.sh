#!/usr/bin/env bash
# A build that leaves workload plugins out reports their tests as skipped,
# each with the reason, instead of dropping them from the count: configures the source tree twice in scratch folders (nothing is built),
# once without the LibTorch plugins and once with only dqn, and runs the
# placeholder tests CTest then lists.
# Usage: skipped_workloads_test.sh CMAKE CTEST SOURCE_DIR [with-torch [CMAKE_ARGS ...]]
# (CMAKE_ARGS: how the build being tested found LibTorch and CUDA, passed on.)
set -euo pipefail
cmake=$1 ctest=$2 src=$3
mode=${4:-}
shift $(($# < 4 ? $# : 4))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" 2> /dev/null || true; exit 1; }
workloads=$(cd "$src/tests/integration/workloads" && ls *_test.cpp | sed 's/_test\.cpp$//' | sort)

"$cmake" -S "$src" -B "$work/off" -DGPUSWEEP_BUILD_TORCH_PLUGINS=OFF -DGPUSWEEP_BUILD_BENCH=OFF \
  > "$work/out" 2>&1 || fail "configuring without the LibTorch plugins failed"
(cd "$work/off" && "$ctest" -R '^(workloads|torchkit)\.' > "$work/out" 2>&1) ||
  fail "the placeholders did not all report skipped"
for w in dqn $workloads; do
  grep -q "workloads\.$w .*Skipped" "$work/out" || fail "no skipped test for $w"
done
(cd "$work/off" && "$ctest" -V -R '^workloads\.marl$' > "$work/out" 2>&1) ||
  fail "the marl placeholder did not report skipped"
grep -q "SKIPPED: the marl plugin's tests: this build has no LibTorch plugins" "$work/out" ||
  fail "the marl placeholder does not say why"

if [ "$mode" = with-torch ]; then
  "$cmake" -S "$src" -B "$work/dqn" -DGPUSWEEP_PLUGINS=dqn -DGPUSWEEP_BUILD_BENCH=OFF "$@" \
    > "$work/out" 2>&1 || fail "configuring with only dqn failed"
  (cd "$work/dqn" && "$ctest" -V -R '^workloads\.' > "$work/out" 2>&1) ||
    fail "the placeholders of the left-out plugins did not all report skipped"
  grep -q "workloads\.dqn" "$work/out" && fail "dqn is built, yet its tests are a placeholder"
  grep -q "SKIPPED: the transformer plugin's tests: this build leaves the plugin out" \
    "$work/out" || fail "the transformer placeholder does not say why"
fi
echo "PASS: left-out workload tests are listed as skipped, each with the reason"
