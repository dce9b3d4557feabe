#!/usr/bin/env bash
# gpusweep tune against the truth and the anchors (bench/tune/bench.py):
# the whole grid of bench/tune/space_timeseries.json (80 fp32 configs of the
# canonical timeseries LSTM) measured with 5 repeats,
# then SEEDS runs each of gpusweep tune, Optuna (TPE + WilcoxonPruner, trials
# through gpusweep) and DeepSpeed's stopping rule at 30% of the grid's trial
# time, and the table of how close each pick came to the true best. About
# 90 minutes on 2 cores for 10 seeds. Needs optuna and scipy in .venv
# (.venv/bin/python3 -m pip install optuna scipy).
# Usage: bench/tune/run.sh [BUILD_DIR] [SEEDS] [WORK_DIR] [TRUTH_REPEATS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build}
seeds=${2:-10}
work=${3:-$repo/bench/tune/out}
truth_repeats=${4:-5}
py="$repo/.venv/bin/python3"
[ -x "$py" ] || py=python3
"$py" -c 'import optuna, scipy' 2>/dev/null ||
  { echo "bench/tune: needs optuna and scipy: $py -m pip install optuna scipy" >&2; exit 2; }
cd "$repo"
rm -f "$work/results.jsonl"
for step in truth tune deepspeed optuna; do
  echo "== $step"
  "$py" bench/tune/bench.py "$step" --build "$build" --work "$work" --seeds "$seeds" \
    --truth-repeats "$truth_repeats"
done
echo "== table"
"$py" bench/tune/bench.py table --build "$build" --work "$work" --seeds "$seeds" \
  --truth-repeats "$truth_repeats" | tee "$work/table.md"
