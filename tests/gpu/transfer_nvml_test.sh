#!/usr/bin/env bash
# On a GPU: every CUDA trial of a workload that copies batches to the device
# records its host-to-device time (audit M9) without diagnose, and NVML's
# figures are those of the trial's own GPU over its measured phase (H3, M10).
# restoration with pin_memory off and on: both record host_to_device_s_per_step
# > 0 and GPU utilisation; `compare --claims`-style transfer_time is measurable.
# Usage: transfer_nvml_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 1
cat > "$work/s.json" <<JSON
{"name": "copy", "workload": "restoration",
 "base": {"device": "cuda", "batch_size": 16, "loader_workers": 2},
 "grid": {"pin_memory": [false, true], "non_blocking": [false, true]},
 "measure": {"repeats": 1, "warmup_steps": 5, "steps_per_block": 20, "blocks": 5},
 "claims": [{"claim": "pinned, asynchronous copies take less time",
             "change": {"pin_memory": true, "non_blocking": true},
             "metric": "transfer_time", "expected": [0.2, 1.0]}]}
JSON
"$bin" run "$work/s.json" --db "$work/r.db" --gpus 0 > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
timed=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'host_to_device_s_per_step' AND value > 0")
util=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'monitor_gpu_device_util_mean'")
samples=$(sql "$work/r.db" "SELECT min(value) FROM metrics WHERE name = 'monitor_gpu_samples_measured'")
"$bin" compare --db "$work/r.db" --claims || true
echo "trials with transfer time: $timed of 4; with GPU utilisation: $util; fewest measured NVML samples: $samples"
[ "$timed" = 4 ] || { echo "FAIL: a CUDA trial recorded no transfer time"; exit 1; }
[ "$util" = 4 ] || { echo "FAIL: a CUDA trial has no NVML figures"; exit 1; }
echo "PASS"
