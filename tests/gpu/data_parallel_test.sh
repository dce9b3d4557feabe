#!/usr/bin/env bash
# On a machine with two GPUs or more: a data-parallel trial on NCCL. The
# restoration workload at world_size 2 x batch 8 (each rank its own GPU,
# dp_backend auto = nccl) trains as world_size 1 x batch 16 does: the same
# parameters' norm and PSNR after 50 steps, to the rounding of fp32 on a GPU
# (1e-4 relative: cuDNN's convolution algorithms sum in other orders across
# batch sizes); the trial all-reduced once a step, its exposed communication
# is a share of the block time, and compare --scaling gives an efficiency
# with an interval. NCCL's log (NCCL_DEBUG=INFO) says which transport joined
# the ranks, each seeing only its own GPU (P2P or SHM expected), printed.
# Elsewhere it prints why and exits 77.
# Usage: data_parallel_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 2
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET NCCL_DEBUG_FILE="$work/nccl.%h.%p.log"
sweep() {  # NAME WORLD BATCH REPEATS
  cat > "$work/$1.json" <<JSON
{"name": "$1", "workload": "restoration",
 "base": {"device": "cuda", "seed": 3, "world_size": $2, "batch_size": $3,
          "base_channels": 16, "num_blocks": 2, "patch_size": 32},
 "measure": {"repeats": $4, "warmup_steps": 0, "steps_per_block": 10, "blocks": 5, "timeout_s": 300}}
JSON
  "$bin" run "$work/$1.json" --db "$work/r.db" > "$work/$1.log" 2>&1 || { cat "$work/$1.log"; exit 1; }
}
sweep one 1 16 1
sweep two 2 8 1
grep -q "one GPU per rank" "$work/two.log" || { cat "$work/two.log"; echo "FAIL: no GPU per rank"; exit 1; }
transport=$(cat "$work"/nccl.*.log 2>/dev/null | grep -oE "via (P2P/[A-Za-z/]+|SHM/[A-Za-z/]+|NET/[A-Za-z/]+)" | sort | uniq -c || true)
echo "NCCL transport between the ranks: ${transport:-not in the log}"
[ -n "$transport" ] || { ls "$work"; echo "FAIL: NCCL named no transport"; exit 1; }
for name in param_norm psnr_db; do
  a=$(stat one $name); b=$(stat two $name)
  echo "$name: world_size 1 x 16 $a, world_size 2 x 8 $b"
  python3 -c "import sys; a, b = float('$a'), float('$b'); sys.exit(0 if abs(a - b) <= 1e-4 * max(1, abs(a)) else 1)" ||
    { echo "FAIL: $name differs"; exit 1; }
done
synced=$(stat two dp_synced_steps); share=$(stat two dp_comm_share); backend=$(stat two dp_world_size)
echo "synced steps $synced, exposed communication share $share, world size $backend"
[ "${synced%.*}" = 50 ] || { echo "FAIL: $synced all-reduces for 50 steps"; exit 1; }
python3 -c "import sys; s = float('$share'); sys.exit(0 if 0 < s < 1 else 1)" || { echo "FAIL: share $share"; exit 1; }
cat > "$work/s.json" <<JSON
{"name": "scale", "workload": "restoration",
 "base": {"device": "cuda", "seed": 3, "batch_size": 16},
 "grid": {"world_size": [1, 2]},
 "measure": {"repeats": 2, "warmup_steps": 10, "steps_per_block": 10, "blocks": 5, "timeout_s": 300}}
JSON
"$bin" run "$work/s.json" --db "$work/r.db" > "$work/s.log" 2>&1 || { cat "$work/s.log"; exit 1; }
"$bin" compare --db "$work/r.db" --sweep scale --scaling --format json > "$work/c.json"
python3 - "$work/c.json" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))[0]
print(f"scaling: speed-up {row['speedup']:.3f} [{row['speedup_low']:.3f}, {row['speedup_high']:.3f}], "
      f"efficiency {row['efficiency']:.3f}, exposed communication {row['comm_share']:.3f}, "
      f"{row['allreduce_bytes_per_step'] / 2**20:.2f} MiB all-reduced a step")
assert row["efficiency_low"] < row["efficiency"] < row["efficiency_high"], row
PY
echo "PASS"
