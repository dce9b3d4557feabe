#!/usr/bin/env bash
# On a GPU: a Python workload's step runs on CUDA and is measured as a C++
# plugin's is. The restoration example at fp32 and at fp16 (autocast with a
# GradScaler, from the SDK's Settings) trains on cuda:0: both trials ok, every
# block timed by CUDA events recorded from C++ on the stream Python's torch
# queues its work on (the host and device clocks compared), peak memory read
# from the caching allocator the Python step allocated from, and the fp16
# trial's loss scale reported.
# Usage: python_test.sh GPUSWEEP_BIN PLUGIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
source_dir=$3
. "$(dirname "$0")/lib.sh"
need_gpus 1
cat > "$work/s.json" <<JSON
{"name": "py_gpu", "workload": "python",
 "base": {"module": "$source_dir/examples/python/restoration.py", "device": "cuda"},
 "grid": {"precision": ["fp32", "fp16"]},
 "measure": {"repeats": 1, "warmup_steps": 5, "steps_per_block": 20, "blocks": 5}}
JSON
"$bin" run "$work/s.json" --db "$work/r.db" --gpus 0 > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
cat "$work/log"
ok=$(sql "$work/r.db" "SELECT count(*) FROM trials WHERE status = 'ok'")
untimed=$(sql "$work/r.db" "SELECT count(*) FROM blocks WHERE device_seconds IS NULL")
compared=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'clock_disagreeing_blocks'")
# The clocks agree: no block's device time far from its host time (a step
# queued on another stream than the one timed would leave device time short),
# and the device time covers the block (at least 0.9 of it in every trial).
disagreeing=$(sql "$work/r.db" "SELECT coalesce(sum(value), -1) FROM metrics WHERE name = 'clock_disagreeing_blocks'")
short=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'device_time_fraction' AND value < 0.9")
small=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'peak_memory_bytes' AND value < 1048576")
scaled=$(sql "$work/r.db" "SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id
  WHERE json_extract(t.config_json, '$.precision') = 'fp16' AND m.name = 'loss_scale'")
echo "ok trials: $ok of 2; blocks without a device time: $untimed; trials whose clocks were" \
     "compared: $compared, blocks where they disagreed: $disagreeing, trials whose device time" \
     "covered under 0.9 of the blocks: $short; peaks under 1 MiB: $small; fp16 trials" \
     "reporting loss_scale: $scaled"
[ "$ok" = 2 ] || { echo "FAIL: $ok of 2 trials ok"; exit 1; }
[ "$untimed" = 0 ] || { echo "FAIL: blocks without a device time (CUDA events)"; exit 1; }
[ "$compared" = 2 ] || { echo "FAIL: a trial did not compare its host and device clocks"; exit 1; }
[ "${disagreeing%.*}" = 0 ] || { echo "FAIL: $disagreeing blocks whose host and device clocks disagree"; exit 1; }
[ "$short" = 0 ] || { echo "FAIL: device time short of the block time (another stream?)"; exit 1; }
[ "$small" = 0 ] || { echo "FAIL: peak memory not read from the CUDA allocator"; exit 1; }
[ "$scaled" = 1 ] || { echo "FAIL: the fp16 trial reports no loss_scale"; exit 1; }
echo "PASS"
