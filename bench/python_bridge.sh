#!/usr/bin/env bash
# What the python workload costs and what it leaves on the table, measured
# side by side on this machine, ROUNDS alternated rounds (default 5):
#   1. The bridge's cost per step. bench/python/spin.py (work 0: an empty
#      step; work 20: twenty in-place adds on a small tensor) measured by
#      gpusweep (the python workload) and by a plain Python loop
#      (bench/python/plain_loop.py, the same module and config, timed with
#      perf_counter). Per round: gpusweep's seconds per step minus the loop's,
#      and the loop's throughput over gpusweep's. gpusweep runs them with
#      keep_freed_memory=false, glibc's own policy as in the loop's process;
#      the 20-add step again at the default (true) shows what that common
#      setting does to a Python step.
#   2. restoration at its canonical config, threads 1: the C++ plugin, the
#      Python example (examples/python/restoration.py), and the Python example
#      under torch.compile. Per round: the C++ plugin's throughput over each,
#      and compiled Python over eager Python.
# Each figure: the mean over rounds with its 95% t interval, and each round's.
# Usage: bench/python_bridge.sh BUILD [ROUNDS] [bridge|restoration|all]
#   (SPIN_STEPS: a spin block's steps, 100000)
set -euo pipefail
bin=$(cd "$1" && pwd)/gpusweep
rounds=${2:-5}
parts=${3:-all}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
py=$root/.venv/bin/python3
[ -x "$py" ] || py=python3
source "$here/lib.sh"

# One trial of workload $2 with base $3 and measure $4, named $1: prints
# "seconds_per_step throughput" and leaves its resolved config in $work/$1.config.
trial() {
  cat > "$work/$1.json" <<JSON
{"name": "$1", "workload": "$2", "base": $3, "measure": $4}
JSON
  rm -f "$work/$1.db"*
  "$bin" run "$work/$1.json" --db "$work/$1.db" > "$work/$1.log" 2>&1 ||
    { cat "$work/$1.log" >&2; exit 1; }
  "$py" - "$work/$1.db" "$work/$1.config" <<'PY'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute(
    "SELECT s.step_time_median_s, s.throughput_median, t.config_json, t.status FROM trial_summary s "
    "JOIN trials t ON t.id = s.trial_id").fetchone()
if row is None or row[3] != "ok":
    sys.exit("the trial did not finish: " + repr(row))
open(sys.argv[2], "w").write(row[2])
print(row[0], row[1])
PY
}

spin_steps=${SPIN_STEPS:-100000}  # a spin block's steps (the smoke test's fewer)
spin_measure="{\"warmup_steps\": 2000, \"steps_per_block\": $spin_steps, \"blocks\": 5, \"repeats\": 1, \"interleave\": 1}"
restoration_measure='{"warmup_steps": 5, "steps_per_block": 20, "blocks": 5, "repeats": 1, "interleave": 1}'
results=$work/results.txt
t0=$(date +%s)
for r in $(seq 1 "$rounds"); do
  if [ "$parts" != restoration ]; then
    for w in 0 20; do
      read -r gs_step gs_rate < <(trial "spin$w" python \
        "{\"module\": \"$here/python/spin.py\", \"threads\": 1, \"device\": \"cpu\", \"work\": $w, \"keep_freed_memory\": false}" \
        "$spin_measure")
      read -r loop_step loop_rate < <(GPUSWEEP_BIN="$bin" "$py" "$here/python/plain_loop.py" "$here/python/spin.py" \
        "$(cat "$work/spin$w.config")" 2000 5 "$spin_steps" |
        "$py" -c 'import json,sys; d=json.load(sys.stdin); print(d["step_s"], d["throughput"])')
      echo "spin$w $r $gs_step $gs_rate $loop_step $loop_rate" >> "$results"
    done
    read -r kept_step kept_rate < <(trial "spin20kept" python \
      "{\"module\": \"$here/python/spin.py\", \"threads\": 1, \"device\": \"cpu\", \"work\": 20}" \
      "$spin_measure")
    echo "kept $r $kept_step $kept_rate $gs_step $gs_rate" >> "$results"
  fi
  if [ "$parts" = bridge ]; then
    echo "round $r of $rounds done ($(( $(date +%s) - t0 )) s)" >&2
    continue
  fi
  read -r _ cpp < <(trial cpp restoration '{"threads": 1, "device": "cpu"}' "$restoration_measure")
  read -r _ eager < <(trial eager python \
    "{\"module\": \"$root/examples/python/restoration.py\", \"threads\": 1, \"device\": \"cpu\"}" \
    "$restoration_measure")
  read -r _ compiled < <(trial compiled python \
    "{\"module\": \"$root/examples/python/restoration.py\", \"threads\": 1, \"device\": \"cpu\", \"compile\": true}" \
    "$restoration_measure")
  echo "restoration $r $cpp $eager $compiled" >> "$results"
  echo "round $r of $rounds done ($(( $(date +%s) - t0 )) s)" >&2
done
"$py" - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
# Student's t quantile (0.975) for the rounds' degrees of freedom.
T975 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
def summary(values, fmt):
    mean = statistics.mean(values)
    text = "mean %s" % fmt(mean)
    if len(values) > 1:
        half = T975.get(len(values) - 1, 2.0) * statistics.stdev(values) / len(values) ** 0.5
        text += ", 95%% interval [%s, %s]" % (fmt(mean - half), fmt(mean + half))
    return text + "  (rounds: %s)" % " ".join(fmt(v) for v in values)
us = lambda v: "%.2f us" % (v * 1e6)
ratio = lambda v: "%.3fx" % v
for name, what in (("spin0", "an empty step"), ("spin20", "a step of 20 in-place adds")):
    rs = [list(map(float, r[2:])) for r in rows if r[0] == name]
    if not rs:
        continue
    print("%s: plain Python loop %s per step, gpusweep %s per step" % (
        what, us(statistics.median(r[2] for r in rs)), us(statistics.median(r[0] for r in rs))))
    print("  bridge cost per step (gpusweep - loop): " + summary([r[0] - r[2] for r in rs], us))
    print("  throughput, loop / gpusweep: " + summary([r[3] / r[1] for r in rs], ratio))
rs = [list(map(float, r[2:])) for r in rows if r[0] == "kept"]
if rs:
    print("keep_freed_memory (the default, true) against false, 20-add step: "
          + summary([r[0] - r[2] for r in rs], us) + " per step")
rs = [list(map(float, r[2:])) for r in rows if r[0] == "restoration"]
if not rs:
    sys.exit(0)
print("restoration, canonical, threads 1: C++ %.1f, Python %.1f, Python compiled %.1f images/s (medians)"
      % tuple(statistics.median(r[i] for r in rs) for i in range(3)))
print("  C++ plugin / Python eager: " + summary([r[0] / r[1] for r in rs], ratio))
print("  C++ plugin / Python compiled: " + summary([r[0] / r[2] for r in rs], ratio))
print("  Python compiled / Python eager: " + summary([r[2] / r[1] for r in rs], ratio))
PY
echo "took $(( $(date +%s) - t0 )) s"
