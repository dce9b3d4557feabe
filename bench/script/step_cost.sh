#!/usr/bin/env bash
# What measuring a script under gpusweep costs a step: the plain loop of
# tests/fixtures/scripts/loop_train.py timed by itself (the mean step from
# a clock read at each of its gpusweep.step calls, past its first 200) and
# the same script's step as `gpusweep run` measures it (the script workload,
# the step handed to the worker and back each time), PAIRS times, the two
# taking turns. Prints each pair's step times and their ratio, and the
# median ratio (gpusweep's step over the script's own: 1.00 is free).
# Usage: bench/script/step_cost.sh [BUILD] [PAIRS] [BATCH] [WIDTH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-build}" && pwd)
pairs=${2:-5}
batch=${3:-16}
width=${4:-64}
py=${GPUSWEEP_PYTHON:-$root/.venv/bin/python3}
script=$root/tests/fixtures/scripts/loop_train.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alone() {  # seconds a step, by itself: the mean over steps 200 to 2200 of
  # one run, timed at each gpusweep.step call (outside gpusweep a no-op, here
  # a clock read)
  "$py" - "$script" "$batch" "$width" <<'PY'
import runpy, sys, time
import torch
import gpusweep
torch.set_num_threads(1)  # as the sweep's threads: 1
script, b, w = sys.argv[1:]
stamps = []
gpusweep.step = lambda samples=None, tokens=None: stamps.append(time.perf_counter())
sys.argv = [script, "--steps", "2200", "--batch-size", b, "--width", w]
runpy.run_path(script, run_name="__main__")
print((stamps[-1] - stamps[200]) / (len(stamps) - 1 - 200))
PY
}
cat > "$work/s.json" <<JSON
{"name": "step_cost", "workload": "script",
 "base": {"script": "$script", "device": "cpu", "threads": 1, "batch_size": $batch,
          "args": "--width $width --steps 100000",
          "flags": "{\"batch_size\": \"--batch-size\"}"},
 "measure": {"warmup_steps": 50, "steps_per_block": 400, "blocks": 5, "repeats": 1,
             "min_block_s": 0}}
JSON
under() {  # seconds a step, as gpusweep measured it
  rm -f "$work"/r.db*
  "$build/gpusweep" run "$work/s.json" --db "$work/r.db" > /dev/null 2>&1
  "$build/gpusweep" sql --db "$work/r.db" --format csv \
    "SELECT step_time_median_s FROM trial_summary" | tail -n 1
}
echo "pair  alone_ms  gpusweep_ms  ratio"
ratios=()
for i in $(seq 1 "$pairs"); do
  a=$(alone); g=$(under)
  r=$(python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) / float(sys.argv[1])))" "$a" "$g")
  ratios+=("$r")
  python3 -c "import sys; print('%4s  %8.4f  %11.4f  %s' % (sys.argv[1], 1e3*float(sys.argv[2]), 1e3*float(sys.argv[3]), sys.argv[4]))" "$i" "$a" "$g" "$r"
done
python3 -c "import statistics, sys; r = [float(x) for x in sys.argv[1:]]; print('median ratio %.3f (min %.3f, max %.3f) over %d pairs, batch $batch, width $width' % (statistics.median(r), min(r), max(r), len(r)))" "${ratios[@]}"
