#!/usr/bin/env bash
# Data-parallel scaling on the CPU at fixed threads per rank (a rank given
# its share of the cores measured thread scaling against the single
# process's all-core team): the dp_spin fixture (a CPU spin of SPIN_US a step, every rank
# its own, and a 5-float all-reduce through Gloo) at world_size 1 and 2,
# threads 1 (each rank one thread, bound to its own core; the single process
# one thread), so that 100% efficiency is reachable. Prints compare
# --scaling's row (speed-up, efficiency with its interval, the exposed
# communication share) for two step lengths: what the fixed cost of the
# all-reduce on loopback leaves of the ideal.
# Usage: bench/dp_efficiency.sh [BUILD=build] [REPEATS=4]
set -euo pipefail
build=${1:-build}
repeats=${2:-4}
bin=$build/gpusweep
export GPUSWEEP_PLUGIN_PATH=$build/gpu-test-plugins
. "$(dirname "$0")/lib.sh"
for spin in 20000 5000; do
  cat > "$work/s$spin.json" <<JSON
{"name": "eff$spin", "workload": "dp_spin",
 "base": {"device": "cpu", "threads": 1, "spin_us": $spin},
 "grid": {"world_size": [1, 2]},
 "measure": {"repeats": $repeats, "warmup_steps": 5, "steps_per_block": 10, "blocks": 8,
             "timeout_s": 300, "min_block_s": 0}}
JSON
  "$bin" run "$work/s$spin.json" --db "$work/r.db" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  "$bin" compare --db "$work/r.db" --sweep "eff$spin" --scaling --format json > "$work/c.json"
  python3 - "$work/c.json" "$spin" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))[0]
print(f"spin {int(sys.argv[2]) / 1000:g} ms a step, world_size 2 against 1 at 1 thread each: "
      f"speed-up {row['speedup']:.3f} [{row['speedup_low']:.3f}, {row['speedup_high']:.3f}], "
      f"efficiency {100 * row['efficiency']:.1f}% [{100 * row['efficiency_low']:.1f}, "
      f"{100 * row['efficiency_high']:.1f}], exposed communication "
      f"{100 * (row['comm_share'] or 0):.2f}% of block time")
PY
done
