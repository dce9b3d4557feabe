#!/usr/bin/env bash
# gpusweep check on real runs of this machine (issue 57): how often it calls
# an A/A pair a regression or improvement (false alarms), how often it
# catches a build 5% and 3% slower (power), and how two anchors' rules do on
# the same pairs measured one build after the other. RUNS iterations
# (default 20); each runs the conditions in turn, so that drift of the
# machine hits them alike:
#   dqn_aa_same     check experiments/quickstart.json, --base and --head the
#                   same plugin folder (--allow-same)
#   spin_slow5      check bench/check/spin_quick.json (spin_build, 4 configs,
#                   the quickstart's measure settings), base vs slow5
#   dqn_aa_folders  the quickstart, gpusweep_dqn.so copied into two folders
#   spin_same       spin_quick, base vs same (base rebuilt: the same bytes)
#   spin_slow3      spin_quick, base vs slow3 (every SLOW3_EVERY-th iteration)
#   anchors         (every ANCHOR_EVERY-th iteration) `gpusweep run`
#                   spin_quick on its own with --plugin-path base, same and
#                   slow5 (measure.interleave=1, a database each, 3 repeats;
#                   same and slow5 take turns at running right after base),
#                   and on base vs same and base vs slow5: asv's rule (the
#                   medians' ratio beyond x1.1 and a Mann-Whitney U test on
#                   the block samples at p < 0.002) and a fixed 5% threshold
#                   (head/base median below 0.95 a regression, above 1/0.95
#                   an improvement), bench/check/real_runs.py;
#                   with DQN_ANCHOR_EVERY=K, every K-th iteration also the
#                   quickstart run twice so (dqn A/A, two folders)
# The spin_build builds are the test suite's fixtures
# (build/tests/fixtures/builds/*/gpusweep_spin_build.so: spin_us a step
# times 1.00, 1.00, 1.05, 1.03, fixed when compiled).
#
# Every run appends its line to OUT/runs.tsv as it finishes (condition, rule,
# exit status, verdict, rounds, wall time, load average before and after)
# and its configs' figures to OUT/configs.tsv; each check's JSON and text go
# to OUT/runs/. At the end: a Markdown table per condition and rule, each
# share with its 95% Wilson interval (real_runs.py table OUT prints it again
# from a cut-off run's TSV).
#
# Environment: DQN_BUDGET_S, SPIN_BUDGET_S and SLOW3_BUDGET_S, --budget-s of
# the dqn checks, the spin_build checks and the slow3 one (default: check's
# own, 300 s); SLOW3_EVERY (1; 0: never), ANCHOR_EVERY (1; 0: never),
# DQN_ANCHOR_EVERY (0: never); CONDITIONS: the check conditions to run, of
# dqn_aa_same spin_slow5 dqn_aa_folders spin_same (default all four);
# DEADLINE_S: start no iteration after this many seconds (default: no limit).
# Binaries and plugins are private copies, so that a rebuild of the build
# tree during the measurement (others build on this machine) swaps nothing.
# Usage: bench/check/real_runs.sh [BUILD] [RUNS] [OUT]
#   as run for bench/results/2026-11-28-check-real-runs.md (about 75 minutes):
#   DQN_BUDGET_S=40 SPIN_BUDGET_S=150 SLOW3_EVERY=5 SLOW3_BUDGET_S=90 ANCHOR_EVERY=2 \
#     DEADLINE_S=4320 bench/check/real_runs.sh build 20 /tmp/check-real
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
runs=${2:-20}
out=${3:-/tmp/gpusweep-check-real-$(date +%Y%m%d-%H%M%S)}
dqn_budget=${DQN_BUDGET_S:-}
spin_budget=${SPIN_BUDGET_S:-}
slow3_budget=${SLOW3_BUDGET_S:-$spin_budget}
slow3_every=${SLOW3_EVERY:-1}
anchor_every=${ANCHOR_EVERY:-1}
dqn_anchor_every=${DQN_ANCHOR_EVERY:-0}
deadline=${DEADLINE_S:-0}
conditions=" ${CONDITIONS:-dqn_aa_same spin_slow5 dqn_aa_folders spin_same} "
fixtures=$build/tests/fixtures/builds
for f in "$build/gpusweep" "$build/gpusweep-worker" "$build/plugins/gpusweep_dqn.so" \
         "$fixtures"/{base,same,slow5,slow3}/gpusweep_spin_build.so; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 2; }
done
source "$here/../lib.sh"
mkdir -p "$out/runs"
book() { python3 "$here/real_runs.py" "$@"; }

copy() {
  mkdir -p "$work/bin" "$work/plugins" "$work/a" "$work/b"
  cp "$build/gpusweep" "$build/gpusweep-worker" "$work/bin/"
  cp "$build/plugins/gpusweep_dqn.so" "$work/plugins/"
  cp "$build/plugins/gpusweep_dqn.so" "$work/a/"
  cp "$build/plugins/gpusweep_dqn.so" "$work/b/"
  for b in base same slow5 slow3; do
    mkdir -p "$work/fx/$b"
    cp "$fixtures/$b/gpusweep_spin_build.so" "$work/fx/$b/"
  done
}
# Copied under the build lock where one is used (flock /tmp/build.lock
# cmake --build ...), so that no half-linked binary is copied.
if [ -e /tmp/build.lock ] && command -v flock > /dev/null; then
  export -f copy
  export work build fixtures
  flock /tmp/build.lock bash -c copy
else
  copy
fi
bin=$work/bin/gpusweep
{
  echo "gpusweep $(sha256sum < "$work/bin/gpusweep" | cut -c1-16) (copied from $build at $(date -u +%H:%M:%S))"
  "$bin" check --help | sed -n '/^Per config/,/^  inconclusive/p'
} | tee "$out/binary.txt"
quick=$root/experiments/quickstart.json
spin=$here/spin_quick.json

load1() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }

# check ITER CONDITION SWEEP BASE HEAD BUDGET [ARGS...]
check() {
  local it=$1 cond=$2 sweep=$3 base=$4 head=$5 budget=$6
  shift 6
  local tag log0 t0 rc=0
  [[ "$conditions" == *" $cond "* ]] || return 0
  tag=$(printf 'i%02d-%s' "$it" "$cond")
  rm -f "$work"/c.db*
  log0=$(load1) t0=$(now)
  "$bin" check "$sweep" --base "$base" --head "$head" --base-label base --head-label head \
    --db "$work/c.db" --format json --output "$out/runs/$tag.json" ${budget:+--budget-s "$budget"} \
    "$@" > "$out/runs/$tag.txt" 2>&1 || rc=$?
  book check "$out" "$it" "$cond" "$rc" "$(since "$t0")" "$log0" "$out/runs/$tag.json"
  tail -n 1 "$out/runs.tsv" | cut -f1-10
}

# solo ITER SWEEP PLUGIN_DIR NAME: one build run on its own; its blocks to
# $work/NAME.csv, its wall time to $work/NAME.wall, its exit status to .rc
solo() {
  local it=$1 sweep=$2 dir=$3 name=$4 t0 rc=0
  rm -f "$work/$name".db*
  t0=$(now)
  "$bin" run "$sweep" --db "$work/$name.db" --plugin-path "$dir" \
    --set measure.interleave=1 > "$out/runs/$(printf 'i%02d-solo-%s' "$it" "$name").txt" 2>&1 || rc=$?
  since "$t0" > "$work/$name.wall"
  echo "$rc" > "$work/$name.rc"
  "$bin" export --blocks --format csv --db "$work/$name.db" > "$work/$name.csv" 2>/dev/null || true
}

# anchors ITER CONDITION BASE_NAME HEAD_NAME LOAD0
anchors() {
  local it=$1 cond=$2 b=$3 h=$4 log0=$5 rc wall
  rc=$(( $(cat "$work/$b.rc") > $(cat "$work/$h.rc") ? $(cat "$work/$b.rc") : $(cat "$work/$h.rc") ))
  wall=$(python3 -c "import sys; print(float(sys.argv[1]) + float(sys.argv[2]))" \
    "$(cat "$work/$b.wall")" "$(cat "$work/$h.wall")")
  book anchors "$out" "$it" "$cond" "$rc" "$wall" "$log0" "$work/$b.csv" "$work/$h.csv"
  tail -n 2 "$out/runs.tsv" | cut -f1-10
}

echo "gpusweep check, real runs: $runs iterations into $out (dqn --budget-s ${dqn_budget:-default}," \
  "spin_build --budget-s ${spin_budget:-default}, slow3 --budget-s ${slow3_budget:-default};" \
  "slow3 every $slow3_every, anchors every $anchor_every, dqn anchor every $dqn_anchor_every;" \
  "deadline $([ "$deadline" -gt 0 ] && echo "$deadline s" || echo none))"
echo "columns: iter utc condition rule exit verdict rounds wall_s load1_start load1_end"
start=$(date +%s)
for it in $(seq 1 "$runs"); do
  if [ "$deadline" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$deadline" ]; then
    echo "deadline: $deadline s passed, no iteration $it"
    break
  fi
  echo "== iteration $it ($(( $(date +%s) - start )) s, load $(cut -d' ' -f1-3 /proc/loadavg))"
  check "$it" dqn_aa_same "$quick" "$work/plugins" "$work/plugins" "$dqn_budget" --allow-same
  check "$it" spin_slow5 "$spin" "$work/fx/base" "$work/fx/slow5" "$spin_budget"
  check "$it" dqn_aa_folders "$quick" "$work/a" "$work/b" "$dqn_budget"
  check "$it" spin_same "$spin" "$work/fx/base" "$work/fx/same" "$spin_budget"
  if [ "$slow3_every" -gt 0 ] && [ $(( it % slow3_every )) -eq 0 ]; then
    check "$it" spin_slow3 "$spin" "$work/fx/base" "$work/fx/slow3" "$slow3_budget"
  fi
  if [ "$anchor_every" -gt 0 ] && [ $(( it % anchor_every )) -eq 0 ]; then
    order="same slow5"
    [ $(( it % 2 )) -eq 0 ] && order="slow5 same"
    log0=$(load1)
    solo "$it" "$spin" "$work/fx/base" base
    for h in $order; do solo "$it" "$spin" "$work/fx/$h" "$h"; done
    anchors "$it" spin_same base same "$log0"
    anchors "$it" spin_slow5 base slow5 "$log0"
  fi
  if [ "$dqn_anchor_every" -gt 0 ] && [ $(( it % dqn_anchor_every )) -eq 0 ]; then
    log0=$(load1)
    solo "$it" "$quick" "$work/a" dqn_a
    solo "$it" "$quick" "$work/b" dqn_b
    anchors "$it" dqn_aa_folders dqn_a dqn_b "$log0"
  fi
done
echo
echo "$(( $(date +%s) - start )) s in all; runs.tsv and configs.tsv in $out"
echo
book table "$out"
