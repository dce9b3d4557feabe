#!/usr/bin/env bash
# Sets each built-in workload's time-to-quality target the way AlgoPerf does:
# the canonical config (at threads 1) trains SEEDS seeds (default 10) for a
# budget of BUDGET seconds of training (default 15) toward a target it cannot
# reach, two trials at a time (--jobs 2 on 2 cores); each seed's best quality
# within the budget is read from its curve, and the median over the seeds is
# the target. Prints, per workload, the seeds' best values, the median, and
# when each seed first reached that median (a seed that did not: "-").
# Usage: bench/workload_targets.sh BUILD [SEEDS] [BUDGET] [WORKLOAD ...]
set -euo pipefail
bin=$(cd "$1" && pwd)/gpusweep
seeds=${2:-10}
budget=${3:-15}
shift $(( $# < 3 ? $# : 3 ))
workloads=("$@")
[ ${#workloads[@]} -eq 0 ] && workloads=(dqn restoration timeseries marl transformer)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
# A value each metric never reaches, in its direction.
declare -A never=([dqn]=1e9 [restoration]=1e3 [timeseries]=0 [marl]=1e9 [transformer]=0)
declare -A metric=([dqn]=mean_return:max [restoration]=psnr_db:max [timeseries]=val_mae:min
  [marl]=mean_coverage:max [transformer]=val_loss:min)
t0=$(date +%s)
for w in "${workloads[@]}"; do
  cat > "$work/$w.json" <<JSON
{"name": "target_$w", "workload": "$w", "base": {"threads": 1},
 "measure": {"target": {"value": ${never[$w]}, "max_s": $budget}, "repeats": $seeds,
             "interleave": 1}}
JSON
  "$bin" run "$work/$w.json" --db "$work/$w.db" --jobs 2 > "$work/$w.log" 2>&1 ||
    { cat "$work/$w.log"; exit 1; }
  python3 - "$work/$w.db" "$w" "$budget" "${metric[$w]}" <<'PY'
import sqlite3, statistics, sys
db, workload, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
quality, direction = sys.argv[4].split(":")
higher = direction == "max"
c = sqlite3.connect(db)
best, curves = [], []
for (trial,) in c.execute("SELECT id FROM trials WHERE status = 'ok' ORDER BY repeat"):
    rows = c.execute(
        "SELECT t.value, q.value FROM metrics t JOIN metrics q ON q.trial_id = t.trial_id "
        "AND q.kind = 'eval' AND q.at_step = t.at_step AND q.name = ? "
        "WHERE t.trial_id = ? AND t.kind = 'eval' AND t.name = 'gpusweep.train_s' "
        "ORDER BY t.value", (quality, trial)).fetchall()
    rows = [(s, v) for s, v in rows if s <= budget and v is not None]
    curves.append(rows)
    best.append((max if higher else min)(v for _, v in rows))
target = statistics.median(best)
reach = []
for rows in curves:
    t = next((s for s, v in rows if (v >= target if higher else v <= target)), None)
    reach.append("-" if t is None else f"{t:.1f}")
fmt = lambda v: f"{v:.4g}"
print(f"{workload}: {quality} ({'max' if higher else 'min'}) best in {budget:g} s of training, "
      f"{len(best)} seeds: {' '.join(map(fmt, best))}")
print(f"  target (median): {fmt(target)}; first reached at (s): {' '.join(reach)}")
PY
done
echo "took $(( $(date +%s) - t0 )) s"
