#!/usr/bin/env bash
# On a machine with one GPU or more: a data-parallel trial whose two ranks
# share one GPU through Gloo (dp_backend gloo; NCCL refuses two ranks on one
# GPU). It runs the CUDA path of the ranks that a one-GPU machine can: the
# reducer on CUDA tensors, the comm hook's CUDA events, each rank's device
# sync. restoration at world_size 2 x batch 8 trains as world_size 1 x
# batch 16 does (the parameters' norm and PSNR after 50 steps within 1e-4
# relative), all-reduced once a step, its device and host clocks agreeing
# in every block (clock_disagreeing_blocks 0). Elsewhere it prints why and
# exits 77.
# Usage: data_parallel_gloo_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES%%,*}  # one GPU for both ranks
sweep() {  # NAME WORLD BATCH
  cat > "$work/$1.json" <<JSON
{"name": "$1", "workload": "restoration",
 "base": {"device": "cuda", "seed": 3, "world_size": $2, "batch_size": $3, "dp_backend": "gloo",
          "base_channels": 16, "num_blocks": 2, "patch_size": 32},
 "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 10, "blocks": 5, "timeout_s": 300}}
JSON
  "$bin" run "$work/$1.json" --db "$work/r.db" > "$work/$1.log" 2>&1 || { cat "$work/$1.log"; exit 1; }
}
sweep one 1 16
sweep two 2 8
ok=$(sql "$work/r.db" "SELECT count(*) FROM trials WHERE status = 'ok'")
[ "$ok" = 2 ] || { cat "$work/two.log"; echo "FAIL: $ok trials ok of 2"; exit 1; }
for name in param_norm psnr_db; do
  a=$(stat one $name); b=$(stat two $name)
  echo "$name: world_size 1 x 16 $a, world_size 2 x 8 on one GPU (gloo) $b"
  python3 -c "import sys; a, b = float('$a'), float('$b'); sys.exit(0 if abs(a - b) <= 1e-4 * max(1, abs(a)) else 1)" ||
    { echo "FAIL: $name differs"; exit 1; }
done
synced=$(stat two dp_synced_steps); share=$(stat two dp_comm_share)
disagree=$(stat two clock_disagreeing_blocks)
echo "synced steps $synced, exposed communication share $share, clock-disagreeing blocks ${disagree:-none}"
[ "${synced%.*}" = 50 ] || { echo "FAIL: $synced all-reduces for 50 steps"; exit 1; }
python3 -c "import sys; s = float('$share'); sys.exit(0 if 0 < s < 1 else 1)" || { echo "FAIL: share $share"; exit 1; }
[ "${disagree%.*}" = 0 ] || { echo "FAIL: clock_disagreeing_blocks '${disagree}'"; exit 1; }
echo "PASS"
