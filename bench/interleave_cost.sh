#!/usr/bin/env bash
# What a turn costs a block that takes turns (measure.interleave) on the CPU:
# each block then starts cold (another trial's turn used the caches, the
# thread pool's workers went to sleep). Runs dqn (threads 1 and 2) with
# blocks of S steps, 4 configs of the same work (seeds 0-3), once taking
# turns (interleave 4) and once one after another (interleave 1), for S in
# STEPS, and prints the median block time per step of each and the extra
# time per block that taking turns costs: (interleaved - sequential) x S.
# That extra over the block's length is the share of a block a cold start
# is; the automatic measure.min_block_s for interleaved CPU blocks
# (kMinBlockInterleavedCpuS) keeps it small.
# Usage: bench/interleave_cost.sh [BUILD_DIR] [STEPS...]   (default 2 8 32 128)
set -euo pipefail
build=${1:-build}
shift || true
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(2 8 32 128)
bin=$(cd "$build" && pwd)/gpusweep
source "$(dirname "$0")/lib.sh"
printf '%-8s %6s %14s %14s %16s %10s\n' threads steps "seq us/step" "turns us/step" "extra us/block" "of block"
for threads in 1 2; do
  for s in "${steps[@]}"; do
    for il in 1 4; do
      cat > "$work/c.json" <<JSON
{"name": "c_${threads}_${s}_${il}", "workload": "dqn",
 "base": {"device": "cpu", "threads": $threads}, "grid": {"seed": [0, 1, 2, 3]},
 "measure": {"repeats": 1, "warmup_steps": 20, "steps_per_block": $s, "blocks": 30,
             "interleave": $il, "min_block_s": 0, "vary_seed": false}}
JSON
      "$bin" run "$work/c.json" --db "$work/r.db" > /dev/null
    done
    python3 - "$work/r.db" "$threads" "$s" <<'PY'
import sqlite3, statistics, sys
db, threads, s = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = sqlite3.connect(db)
def per_step(il):
    rows = c.execute("SELECT b.seconds / b.steps FROM blocks b JOIN trials t ON t.id = b.trial_id "
                     "JOIN sweeps w ON w.id = t.sweep_id WHERE w.name = ?",
                     (f"c_{threads}_{s}_{il}",)).fetchall()
    return statistics.median(r[0] for r in rows)
seq, turns = per_step(1), per_step(4)
extra = (turns - seq) * s
print(f"{threads:<8} {s:6d} {1e6 * seq:14.1f} {1e6 * turns:14.1f} {1e6 * extra:16.1f} "
      f"{100 * extra / (turns * s):9.1f}%")
PY
  done
done
