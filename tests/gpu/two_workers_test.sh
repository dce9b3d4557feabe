#!/usr/bin/env bash
# On a machine with two GPUs or more: `run --jobs 2` gives each running
# trial a GPU of its own. The trials' runtimes report two different GPU
# UUIDs, each trial's CUDA saw exactly one device, and NVML sampled each
# trial's own GPU (by its PCI bus id): two different NVML indices.
# Usage: two_workers_test.sh GPUSWEEP_BIN GPU_TEST_PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 2
cat > "$work/s.json" <<JSON
{"name": "two", "workload": "gpu_sleep", "base": {"device": "cuda"},
 "grid": {"cycles": [50000000, 50000001, 50000002, 50000003]},
 "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 10, "blocks": 5}}
JSON
"$bin" run "$work/s.json" --db "$work/r.db" --jobs 2 > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
grep -q "one GPU per worker" "$work/log" || { cat "$work/log"; echo "FAIL: no GPU assignment"; exit 1; }
uuids=$(sql "$work/r.db" "SELECT count(DISTINCT json_extract(e.gpus_json, '\$[0].uuid'))
  FROM trials t JOIN environments e ON e.id = t.environment_id WHERE t.status = 'ok'")
single=$(sql "$work/r.db" "SELECT count(*) FROM trials t JOIN environments e ON e.id = t.environment_id
  WHERE json_array_length(e.gpus_json) = 1")
indices=$(sql "$work/r.db" "SELECT count(DISTINCT value) FROM metrics WHERE name = 'monitor_gpu_index'")
echo "distinct GPU UUIDs: $uuids; trials that saw one device: $single of 4; NVML indices sampled: $indices"
[ "$uuids" = 2 ] || { echo "FAIL: the workers did not run on two GPUs"; exit 1; }
[ "$single" = 4 ] || { echo "FAIL: a worker saw more than its own GPU"; exit 1; }
[ "$indices" = 2 ] || { echo "FAIL: NVML did not sample each trial's own GPU"; exit 1; }
echo "PASS"
