#!/usr/bin/env bash
# Real A/A runs under a position effect tied to the start order (issue 45):
# the `position` fixture plugin (tests/fixtures/plugins/position.cpp) spins
# SPIN_US a step, slower or faster by 5% by where its trial started in the
# run, never by its settings. Each run is the default protocol (3 repeats,
# "auto" interleaving: vary_seed makes every repeat's config distinct, so
# all six trials share one window) with measure.precision 0.01, its own
# order_seed, and measure.budget_s BUDGET_S (so that the rounds a wide
# interval asks for end in seconds). A run is a false verdict when compare's
# interval excludes 1. Prints each run's ratio and the count with its 95%
# Wilson interval.
# Usage: bench/position/real_runs.sh [BUILD_DIR] [RUNS] [MODE] [BUDGET_S] [SPIN_US]
#   e.g. ninja -C build gpusweep gpusweep-worker gpusweep_plugin_position &&
#        bench/position/real_runs.sh build 40 alternating
set -euo pipefail
build=${1:-build}
runs=${2:-40}
mode=${3:-alternating}
budget=${4:-10}
spin=${5:-1000}
bin=$(cd "$build" && pwd)/gpusweep
export GPUSWEEP_PLUGIN_PATH
GPUSWEEP_PLUGIN_PATH=$(cd "$build" && pwd)/test-plugins
source "$(dirname "$0")/../lib.sh"
cat > "$work/aa.json" <<JSON
{"name": "position_aa", "workload": "position",
 "base": {"spin_us": $spin, "mode": "$mode", "effect": 0.05},
 "grid": {"twin": [0, 1]}, "baseline": {"twin": 0},
 "measure": {"precision": 0.01, "budget_s": $budget}}
JSON
called=0
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  export GPUSWEEP_POSITION_DIR="$work/pos$i"
  mkdir -p "$GPUSWEEP_POSITION_DIR"
  "$bin" run "$work/aa.json" --db "$work/r.db" --set measure.order_seed="$i" > /dev/null 2>&1
  "$bin" compare position_aa --db "$work/r.db" --format json > "$work/c.json" 2> "$work/c.err" || true
  line=$(python3 -c 'import json,sys
try:
    r=[r for r in json.load(open(sys.argv[1])) if not r["baseline"]][0]
except Exception as e:
    print("compare gave no table (%s: %s) 0" % (type(e).__name__, open(sys.argv[2]).read()[:200].strip())); sys.exit()
if r.get("ci_low") is None: print("no interval 0"); sys.exit()
miss = int(r["ci_low"] > 1 or r["ci_high"] < 1)
print("%.3fx [%.3f, %.3f] %s %d" % (r["ratio"], r["ci_low"], r["ci_high"], r["verdict"], miss))' "$work/c.json" "$work/c.err")
  starts=$(tr '\n' ' ' < "$GPUSWEEP_POSITION_DIR/starts" | cut -c1-60)
  echo "run $i: $line  (starts: $starts...)"
  called=$((called + ${line##* }))
done
echo "mode $mode: A/A called different (interval excludes 1) in" \
  "$(python3 "$(dirname "$0")/../wilson.py" "$called" "$runs") runs; $(( $(date +%s) - start )) s"
