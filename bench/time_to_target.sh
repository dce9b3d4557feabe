#!/usr/bin/env bash
# Time to target on real runs, against a known distribution: RUNS sweeps
# (default 40) of noop's learning mode (quality 0 to 1 over L steps, L
# lognormal by seed with median 300 and cv 20%; target 0.9; 200 us steps; a
# budget of 60 ms of training censors about 30% of the trials), each with
# an A/A pair (batch_size 1 and 2: the same steps, the same seeds) over 10
# seeds. For each run: whether the baseline's median interval covers the
# true median (0.9 x 300 steps x the run's own measured step time) and
# whether the A/A ratio's interval excludes 1 (a false verdict); then both
# rates with Wilson intervals.
# Usage: bench/time_to_target.sh BUILD [RUNS]
set -euo pipefail
bin=$(cd "$1" && pwd)/gpusweep
runs=${2:-40}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
cat > "$work/t.json" <<'JSON'
{"name": "ttq", "workload": "noop",
 "base": {"spin_us": 200, "learn_steps": 300, "learn_cv": 0.2},
 "grid": {"batch_size": [1, 2]},
 "baseline": {"batch_size": 1},
 "measure": {"target": {"value": 0.9, "max_s": 0.06}, "warmup_steps": 0,
             "steps_per_block": 5, "repeats": 10, "min_block_s": 0}}
JSON
: > "$work/results"
t0=$(date +%s)
for i in $(seq 1 "$runs"); do
  db="$work/r$i.db"
  "$bin" run "$work/t.json" --db "$db" --set measure.order_seed="$i" --set seed="$((i * 1000))" \
    > /dev/null
  "$bin" compare --db "$db" --format json > "$work/c.json"
  "$bin" compare --db "$db" --target --format json > "$work/t$i.json"
  python3 - "$work/c.json" "$work/t$i.json" >> "$work/results" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
targets = json.load(open(sys.argv[2]))
base = [r for r in rows if r["baseline"]][0]
step_s = 1 / base["throughput_median"]  # batch_size 1: one sample a step
truth = 0.9 * 300 * step_s
b = [t for t in targets if t["baseline"]][0]
a = [t for t in targets if not t["baseline"]][0]
lo, hi = b["median_low_s"], b["median_high_s"]
covered = lo is not None and lo <= truth and (hi is None or truth <= hi)
different = a["verdict"] in ("faster to target", "slower to target")
censored = sum(t["trials"] - t["reached"] for t in targets)
print(int(covered), int(different), censored)
PY
  echo "run $i: $(tail -n 1 "$work/results") (covered, A/A different, censored trials of 20)"
done
PYTHONPATH="$here" python3 - "$work/results" "$(( $(date +%s) - t0 ))" <<'PY'
import sys
from wilson import rate as wilson
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
n = len(rows)
print("the median's interval covers the true median:", wilson(sum(r[0] for r in rows), n))
print("A/A called faster or slower to target:", wilson(sum(r[1] for r in rows), n))
print(f"censored: {sum(r[2] for r in rows)} of {20 * n} trials; {sys.argv[2]} s")
PY
