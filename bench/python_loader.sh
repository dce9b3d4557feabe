#!/usr/bin/env bash
# A Python workload's loader_workers, interleaved against one trial at a
# time (whether its loaders stop between turns): the Python restoration
# example (examples/python/restoration.py, its DataLoader from
# Settings.loader) at loader_workers 0 and 2, batch 8, one thread, three
# repeats, measured twice in one go: interleaved (measure.interleave auto:
# the trials take turns, each paused between its turns, its loader's worker
# processes stopped with it) and sequential (interleave 1: one trial alive
# at a time, nothing to pause). Prints each mode's ratio of 2 workers to 0
# with its interval, and the two ratios' quotient: before the loaders were
# paused, a paused trial's workers built batches during the neighbour's
# turns, which its next turn then consumed free, and their processes slowed
# the neighbour's measured block, so the interleaved ratio flattered the
# workers.
# Usage: bench/python_loader.sh [BUILD=build] [REPEATS=3]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
repeats=${2:-3}
bin=$build/gpusweep
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
source "$here/lib.sh"
for mode in interleaved sequential; do
  interleave='"auto"'
  [ "$mode" = sequential ] && interleave=1
  cat > "$work/$mode.json" <<JSON
{"name": "loader_$mode", "workload": "python",
 "base": {"device": "cpu", "seed": 0, "module": "$root/examples/python/restoration.py",
          "batch_size": 8, "threads": 1},
 "grid": {"loader_workers": [0, 2]},
 "baseline": {"loader_workers": 0},
 "measure": {"warmup_steps": 3, "steps_per_block": 2, "blocks": 6, "repeats": $repeats,
             "interleave": $interleave, "timeout_s": 600}}
JSON
  "$bin" run "$work/$mode.json" --db "$work/r.db" > "$work/$mode.log" 2>&1 || { cat "$work/$mode.log"; exit 1; }
  "$bin" compare --db "$work/r.db" --sweep "loader_$mode" --format json > "$work/$mode.out"
done
python3 - "$work/interleaved.out" "$work/sequential.out" <<'PY'
import json, sys
ratios = {}
for path, mode in zip(sys.argv[1:], ["interleaved", "sequential"]):
    row = [r for r in json.load(open(path)) if r.get("ratio") is not None][0]
    ratios[mode] = row["ratio"]
    print(f"{mode:>11}: loader_workers 2 against 0: {row['ratio']:.3f}x "
          f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}], {row['verdict']}")
print(f"interleaved over sequential: {ratios['interleaved'] / ratios['sequential']:.3f}")
PY
