#!/usr/bin/env bash
# Adaptive capping (measure.target.cap) against no capping, on a sweep file
# with a measure.target: RUNS pairs (default 20), each the same sweep (the
# same seeds and round order: --set seed=S measure.order_seed=I) run without
# the cap and with it (slack SLACK, default 1.5), the two alternated. For each
# pair: both runs' winners (`best`, by time to target) and wall times. Then
# how often the winners agree (with a Wilson interval) and the median ratio
# of the capped run's wall time to the uncapped one's.
# Usage: bench/capping.sh BUILD SWEEP.json [RUNS] [SLACK] [--set K=V ...]
set -euo pipefail
bin=$(cd "$1" && pwd)/gpusweep
sweep=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
runs=${3:-20}
slack=${4:-1.5}
shift $(( $# < 4 ? $# : 4 ))
extra=("$@")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
t0=$(date +%s)
: > "$work/pairs"
for i in $(seq 1 "$runs"); do
  common=(--set measure.order_seed="$i" --set seed="$((i * 1000))" "${extra[@]}")
  line="$i"
  for cap in false "$slack"; do
    db="$work/r${i}_$cap.db"
    s=$(date +%s.%N)
    "$bin" run "$sweep" --db "$db" "${common[@]}" \
      --set "measure.target=$(python3 -c "
import json, sys
t = json.load(open('$sweep'))['measure']['target']
t['cap'] = json.loads('$cap')
print(json.dumps(t))")" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
    e=$(date +%s.%N)
    winner=$("$bin" best --db "$db" --format json | python3 -c "
import json, sys
b = json.load(sys.stdin)
print(json.dumps(b['best']['settings'], sort_keys=True).replace(' ', ''))")
    capped=$(sqlite3 "$db" "SELECT count(*) FROM metrics WHERE name = 'target_capped'")
    line="$line $(python3 -c "print(f'{$e - $s:.1f}')") $capped $winner"
  done
  echo "$line" | tee -a "$work/pairs"
done
PYTHONPATH="$here" python3 - "$work/pairs" <<'PY'
import statistics, sys
from wilson import wilson
rows = [l.split() for l in open(sys.argv[1])]
same = sum(r[3] == r[6] for r in rows)
ratios = [float(r[4]) / float(r[1]) for r in rows]
n = len(rows)
_, lo, hi = (100 * v for v in wilson(same, n))
print(f"same winner: {same} of {n} ({100 * same / n:.0f}%, Wilson 95% [{lo:.1f}%, {hi:.1f}%])")
print(f"wall time, capped / uncapped: median {statistics.median(ratios):.3f} "
      f"(range {min(ratios):.3f} to {max(ratios):.3f}); "
      f"total {sum(float(r[4]) for r in rows):.0f} s vs {sum(float(r[1]) for r in rows):.0f} s")
print(f"capped trials a run: {statistics.median(int(r[5]) for r in rows)} (median)")
PY
echo "took $(( $(date +%s) - t0 )) s"
