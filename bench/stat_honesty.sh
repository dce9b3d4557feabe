#!/usr/bin/env bash
# Are compare's intervals honest at the default protocol (3 repeats, trials
# taking turns block by block), on this machine and on a shared one? Runs,
# RUNS times each (default 40, each run with its own order_seed):
#   - noop A/A: the same spinning (500 us a step, so that the default 20
#     steps make blocks of 10 ms, above the 5 ms that blocks taking turns
#     need) entered twice, only the unused seed differs;
#   - noop 500 us against 650 us a step: a real 1.3x difference;
#   - dqn A/A on a real workload: seed 0 against seed 1 (the same work on
#     other random data; measure.vary_seed gives each repeat its own seed,
#     shared by the pair).
# An A/A run is a miss when its interval excludes 1, whatever compare's
# verdict calls it ("negligible difference" included): coverage is what an
# interval promises. Prints each A/A pair's miss rate with its 95% Wilson
# interval (goal: at most 5%), how often the 1.3x pair is called slower,
# and the median half-width of the ratios' intervals.
# With --load, a neighbour shares the machine: two busy loops switch on and
# off at random (seeded) intervals of 0.1 to 0.9 s, so that the machine
# drifts by tens of percent from one second to the next.
# Usage: bench/stat_honesty.sh [BUILD_DIR] [RUNS] [--load]
set -euo pipefail
build=${1:-build}
runs=${2:-40}
load=${3:-}
bin=$(cd "$build" && pwd)/gpusweep
source "$(dirname "$0")/lib.sh"
[ "$load" = "--load" ] && start_neighbour 1
cat > "$work/aa.json" <<JSON
{"name": "aa", "workload": "noop", "base": {"spin_us": 500}, "grid": {"seed": [0, 1]},
 "baseline": {"seed": 0}}
JSON
cat > "$work/ab.json" <<JSON
{"name": "ab", "workload": "noop", "grid": {"spin_us": [500, 650]}, "baseline": {"spin_us": 500}}
JSON
cat > "$work/dqn.json" <<JSON
{"name": "dqn_aa", "workload": "dqn", "base": {"threads": 1, "device": "cpu"},
 "grid": {"seed": [0, 1]}, "baseline": {"seed": 0}}
JSON
verdict() {  # verdict, ratio, half-width and 1 if the interval excludes 1, of sweep $1's other config
  "$bin" compare "$1" --db "$work/r.db" --format json |
    python3 -c 'import json,sys
r=[r for r in json.load(sys.stdin) if not r["baseline"]][0]
if r.get("ci_low") is None: print("no interval (%s) 0" % r.get("verdict")); sys.exit()
miss = int(r["ci_low"] > 1 or r["ci_high"] < 1)
print("%s (%.3fx, +-%.2f%%) %d" % (r["verdict"], r["ratio"], 50 * (r["ci_high"] - r["ci_low"]) / r["ratio"], miss))'
}
rate() {  # "k of n (p%, 95% Wilson interval [lo%, hi%])"
  python3 "$(dirname "$0")/wilson.py" "$1" "$2"
}
aa_miss=0 aa_called=0 dqn_miss=0 dqn_called=0 ab_ok=0
: > "$work/widths"
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  for s in aa ab dqn; do
    "$bin" run "$work/$s.json" --db "$work/r.db" --set measure.order_seed="$i" > /dev/null
  done
  a=$(verdict aa) b=$(verdict ab) d=$(verdict dqn_aa)
  aa_miss=$((aa_miss + ${a##* })) dqn_miss=$((dqn_miss + ${d##* }))
  [[ "$a" == faster* || "$a" == slower* ]] && aa_called=$((aa_called + 1))
  [[ "$d" == faster* || "$d" == slower* ]] && dqn_called=$((dqn_called + 1))
  [[ "$b" == slower* ]] && ab_ok=$((ab_ok + 1))
  for v in "$a" "$b" "$d"; do sed -E 's/.*\+-([0-9.]+)%.*/\1/' <<< "$v" >> "$work/widths"; done
  printf 'run %2d: noop A/A %-40s 500us vs 650us %-26s dqn A/A %s\n' "$i" "${a% *}" "${b% *}" "${d% *}"
done
median=$(sort -g "$work/widths" | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "protocol: the default (3 repeats, interleaved)${load:+, with a neighbour switching load on and off}; $(( $(date +%s) - start )) s"
echo "noop A/A interval excludes 1:  $(rate "$aa_miss" "$runs") (goal <= 5%); called faster/slower: $aa_called"
echo "dqn A/A interval excludes 1:   $(rate "$dqn_miss" "$runs") (goal <= 5%); called faster/slower: $dqn_called"
echo "1.3x called slower:            $(rate "$ab_ok" "$runs")"
echo "median half-width of the intervals: ${median}%"
