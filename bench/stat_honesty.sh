#!/usr/bin/env bash
# Are compare's verdicts honest at the default protocol (3 repeats, trials
# taking turns block by block), on this machine and on a shared one? Runs,
# RUNS times each (default 20, each run with its own order_seed):
#   - noop A/A: the same spinning (100 us a step) entered twice, only the
#     unused seed differs;
#   - noop 100 us against 130 us a step: a real 1.3x difference;
#   - dqn A/A on a real workload: device cpu and device auto, which is the
#     CPU on a machine without a GPU (the same work under two names; on a GPU
#     machine this pair is not an A/A).
# Counts how often each A/A pair is not called faster or slower ("no
# significant difference", or "negligible difference": within compare's
# --min-effect, 1% by default) and
# how often the 1.3x pair is called slower (goal: at least 95% of runs each),
# and prints the median half-width of the ratios' intervals.
# With --load, a neighbour shares the machine: two busy loops switch on and
# off at random (seeded) intervals of 0.1 to 0.9 s, so that the machine
# drifts by tens of percent from one second to the next.
# Usage: bench/stat_honesty.sh [BUILD_DIR] [RUNS] [--load]
set -euo pipefail
build=${1:-build}
runs=${2:-20}
load=${3:-}
bin=$(cd "$build" && pwd)/gpusweep
source "$(dirname "$0")/lib.sh"
[ "$load" = "--load" ] && start_neighbour 1
cat > "$work/aa.json" <<JSON
{"name": "aa", "workload": "noop", "base": {"spin_us": 100}, "grid": {"seed": [0, 1]},
 "baseline": {"seed": 0}}
JSON
cat > "$work/ab.json" <<JSON
{"name": "ab", "workload": "noop", "grid": {"spin_us": [100, 130]}, "baseline": {"spin_us": 100}}
JSON
cat > "$work/dqn.json" <<JSON
{"name": "dqn_aa", "workload": "dqn", "base": {"threads": 1},
 "grid": {"device": ["cpu", "auto"]}, "baseline": {"device": "cpu"}}
JSON
verdict() {  # the verdict, ratio and half-width of the non-baseline config of sweep $1
  "$bin" compare "$1" --db "$work/r.db" --format json |
    python3 -c 'import json,sys
r=[r for r in json.load(sys.stdin) if not r["baseline"]][0]
print("%s (%.3fx, +-%.1f%%)" % (r["verdict"], r["ratio"], 50 * (r["ci_high"] - r["ci_low"]) / r["ratio"]))'
}
aa_ok=0 ab_ok=0 dqn_ok=0
: > "$work/widths"
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  for s in aa ab dqn; do
    "$bin" run "$work/$s.json" --db "$work/r.db" --set measure.order_seed="$i" > /dev/null
  done
  a=$(verdict aa) b=$(verdict ab) d=$(verdict dqn_aa)
  [[ "$a" == "no significant difference"* || "$a" == negligible* ]] && aa_ok=$((aa_ok + 1))
  [[ "$b" == slower* ]] && ab_ok=$((ab_ok + 1))
  [[ "$d" == "no significant difference"* || "$d" == negligible* ]] && dqn_ok=$((dqn_ok + 1))
  for v in "$a" "$b" "$d"; do sed -E 's/.*\+-([0-9.]+)%.*/\1/' <<< "$v" >> "$work/widths"; done
  printf 'run %2d: noop A/A %-38s 100us vs 130us %-24s dqn A/A %s\n' "$i" "$a" "$b" "$d"
done
median=$(sort -g "$work/widths" | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "protocol: the default (3 repeats, interleaved)${load:+, with a neighbour switching load on and off}; $(( $(date +%s) - start )) s"
echo "noop A/A not called faster or slower:      $aa_ok of $runs (goal >= $((runs - runs / 20)))"
echo "dqn A/A not called faster or slower:       $dqn_ok of $runs (goal >= $((runs - runs / 20)))"
echo "1.3x called slower:                        $ab_ok of $runs (goal >= $((runs - runs / 20)))"
echo "median half-width of the intervals:        ${median}%"
