#!/usr/bin/env bash
# On a GPU: every CUDA trial of a workload that copies batches to the device
# records its host-to-device time, not only under diagnose, and NVML's
# figures are those of the trial's own GPU over its measured phase, not
# GPU 0's nor the whole trial's.
# restoration with pin_memory and non_blocking off and on: every trial records
# host_to_device_s_per_step > 0 and GPU utilisation, and the sweep's claim
# on transfer_time (pinned, asynchronous copies take 0.2-1.0x the time) gets
# a measured verdict from `compare --claims` that agrees with it: confirmed
# or overlapping; refuted, inconclusive or not measurable fails.
# Three repeats, so that the ratio has an interval (one gives no verdict).
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
 "measure": {"repeats": 3, "warmup_steps": 5, "steps_per_block": 20, "blocks": 5},
 "claims": [{"claim": "pinned, asynchronous copies take less time",
             "change": {"pin_memory": true, "non_blocking": true},
             "metric": "transfer_time", "expected": [0.2, 1.0]}]}
JSON
"$bin" run "$work/s.json" --db "$work/r.db" --gpus 0 > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
trials=$(sql "$work/r.db" "SELECT count(*) FROM trials WHERE status = 'ok'")
timed=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'host_to_device_s_per_step' AND value > 0")
util=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'monitor_gpu_device_util_mean'")
samples=$(sql "$work/r.db" "SELECT min(value) FROM metrics WHERE name = 'monitor_gpu_samples_measured'")
echo "trials with transfer time: $timed of $trials ok; with GPU utilisation: $util; fewest measured NVML samples: $samples"
[ "$trials" = 12 ] || { cat "$work/log"; echo "FAIL: $trials of 12 trials (4 configs, 3 repeats) ok"; exit 1; }
[ "$timed" = "$trials" ] || { echo "FAIL: a CUDA trial recorded no transfer time"; exit 1; }
[ "$util" = "$trials" ] || { echo "FAIL: a CUDA trial has no NVML figures"; exit 1; }
"$bin" compare --db "$work/r.db" --claims > "$work/claims.txt" 2>&1 ||
  { cat "$work/claims.txt"; echo "FAIL: compare --claims failed"; exit 1; }
cat "$work/claims.txt"
"$bin" compare --db "$work/r.db" --claims --format json > "$work/claims.json" 2> "$work/claims.err" ||
  { cat "$work/claims.err"; echo "FAIL: compare --claims --format json failed"; exit 1; }
python3 - "$work/claims.json" <<'PY' || { echo "FAIL: the transfer_time claim"; exit 1; }
import json, sys
claims = json.load(open(sys.argv[1]))
assert len(claims) == 1, f"{len(claims)} claims in the output, not the sweep's one"
c = claims[0]
print(f"claim: {c['claim']}: transfer_time {c['ratio']} [{c['ci_low']}, {c['ci_high']}], "
      f"expected {c['expected']}: {c['verdict']} ({c['reason']})")
assert c["metric"] == "transfer_time", c["metric"]
assert c["ratio"] is not None, f"no measured ratio: {c['verdict']}: {c['reason']}"
assert c["verdict"] in ("confirmed", "overlaps the claim"), f"verdict {c['verdict']}: {c['reason']}"
PY
echo "PASS"
