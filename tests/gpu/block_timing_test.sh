#!/usr/bin/env bash
# On a GPU: a measured block is timed to the end of its device work. Each
# step of the gpu_sleep fixture queues a kernel that spins for a known number
# of cycles and returns at once; a block of N steps must take at least N
# times the kernel's shortest time (cycles at the peak clock), by the host's
# clock (which waits for the trial's device at the block's end) and
# by the device's events. Both clocks agree (no disagreeing block), and the
# trial runs on cuda:0 under --gpus, as it would on any GPU of a machine.
# Usage: block_timing_test.sh GPUSWEEP_BIN GPU_TEST_PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 1
cat > "$work/s.json" <<JSON
{"name": "sleep", "workload": "gpu_sleep", "base": {"device": "cuda"},
 "grid": {"cycles": [2000000, 8000000]},
 "measure": {"repeats": 1, "warmup_steps": 3, "steps_per_block": 20, "blocks": 5}}
JSON
"$bin" run "$work/s.json" --db "$work/r.db" --gpus 0 > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
ok=$(sql "$work/r.db" "SELECT count(*) FROM trials WHERE status = 'ok'")
[ "$ok" = 2 ] || { cat "$work/log"; echo "FAIL: $ok of 2 trials ok"; exit 1; }
short=$(sql "$work/r.db" "SELECT count(*) FROM blocks b JOIN metrics m ON m.trial_id = b.trial_id
  WHERE m.name = 'kernel_s_min' AND (b.seconds < 0.99 * b.steps * m.value
                                     OR b.device_seconds < 0.99 * b.steps * m.value)")
# Counts, as integers (the metric is stored as a REAL: its sum reads 0.0).
disagree=$(sql "$work/r.db" "SELECT CAST(coalesce(sum(value), 0) AS INTEGER) FROM metrics
  WHERE name = 'clock_disagreeing_blocks'")
compared=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'clock_disagreeing_blocks'")
untimed=$(sql "$work/r.db" "SELECT count(*) FROM blocks WHERE device_seconds IS NULL")
"$bin" export --db "$work/r.db" --blocks --format csv | head -n 6 || true
echo "blocks shorter than their kernels: $short; blocks whose clocks disagree: $disagree;" \
     "trials whose clocks were compared: $compared of 2; blocks without a device time: $untimed"
[ "$short" = 0 ] || { echo "FAIL: blocks timed shorter than the work they queued"; exit 1; }
[ "$untimed" = 0 ] || { echo "FAIL: blocks without a device time (CUDA events)"; exit 1; }
[ "$compared" = 2 ] || { echo "FAIL: a trial did not compare its host and device clocks"; exit 1; }
[ "$disagree" = 0 ] || { echo "FAIL: host and device clocks disagree"; exit 1; }
echo "PASS"
