#!/usr/bin/env bash
# Are compare's verdicts honest on this noisy machine? Runs, RUNS times each
# (default 20): an A/A sweep (the same noop work entered twice: only the
# unused seed differs) and a sweep of noop spinning 100 us against 130 us per
# step. Counts how often A/A is called "no significant difference" and how
# often the 1.3x pair is called slower. Goal: at least 19 of 20 each.
# Usage: bench/stat_honesty.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-20}
bin=$(cd "$build" && pwd)/gpusweep
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
measure='"measure": {"warmup_steps": 20, "steps_per_block": 100, "blocks": 10, "repeats": 5}'
cat > "$work/aa.json" <<JSON
{"name": "aa", "workload": "noop", "base": {"spin_us": 100}, "grid": {"seed": [0, 1]},
 $measure, "baseline": {"seed": 0}}
JSON
cat > "$work/ab.json" <<JSON
{"name": "ab", "workload": "noop", "grid": {"spin_us": [100, 130]},
 $measure, "baseline": {"spin_us": 100}}
JSON
verdict() {  # prints the verdict of the non-baseline config of sweep $1
  "$bin" compare "$1" --db "$work/r.db" --format json |
    python3 -c 'import json,sys; r=[r for r in json.load(sys.stdin) if not r["baseline"]][0]; print(r["verdict"] + " (%.3fx)" % r["ratio"])'
}
aa_ok=0 ab_ok=0
for i in $(seq 1 "$runs"); do
  "$bin" run "$work/aa.json" --db "$work/r.db" --set measure.order_seed=$i > /dev/null
  "$bin" run "$work/ab.json" --db "$work/r.db" --set measure.order_seed=$i > /dev/null
  a=$(verdict aa) b=$(verdict ab)
  [[ "$a" == "no significant difference"* ]] && aa_ok=$((aa_ok + 1))
  [[ "$b" == slower* ]] && ab_ok=$((ab_ok + 1))
  printf 'run %2d: A/A %-26s 100us vs 130us %s\n' "$i" "$a" "$b"
done
echo "A/A called no significant difference: $aa_ok of $runs (goal >= $((runs - runs / 20)))"
echo "1.3x called slower:                   $ab_ok of $runs (goal >= $((runs - runs / 20)))"
