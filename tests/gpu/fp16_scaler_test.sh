#!/usr/bin/env bash
# On a GPU: fp16 goes through torchkit's gradient scaler in every plugin that
# trains with it (dqn, marl here; restoration, timeseries and transformer
# already did): a small seeded run at fp16 and at fp32 on cuda:0, both `ok`,
# fp16 skipped at most a few of its optimiser steps (the scaler backs off from
# 65536 at the start), and its last loss is near fp32's. Where no CUDA device
# is visible to LibTorch it prints why and exits 77 (skipped).
# Usage: fp16_scaler_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 1
for w in dqn marl; do
  case $w in
    dqn) base='"num_envs": 4'; steps=200 ;;
    marl) base='"batch_size": 16, "budget": 6'; steps=2 ;;
  esac
  cat > "$work/$w.json" <<JSON
{"name": "fp16_$w", "workload": "$w",
 "base": {"device": "cuda:0", "seed": 3, $base},
 "grid": {"precision": ["fp32", "fp16"]},
 "measure": {"repeats": 1, "warmup_steps": $steps, "steps_per_block": $steps, "blocks": 5, "timeout_s": 300},
 "baseline": {"precision": "fp32"}}
JSON
  "$bin" run "$work/$w.json" --db "$work/r.db" > "$work/$w.log" 2>&1 || { cat "$work/$w.log"; exit 1; }
  ok=$("$bin" sql --db "$work/r.db" --format csv \
       "SELECT count(*) FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = 'fp16_$w' AND t.status = 'ok'" | tail -n 1)
  [ "$ok" = 2 ] || { cat "$work/$w.log"; echo "FAIL: $w: $ok of 2 trials ok"; exit 1; }
  stat() {  # precision name
    "$bin" sql --db "$work/r.db" --format csv \
      "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN sweeps s ON s.id = t.sweep_id
       WHERE s.name = 'fp16_$w' AND m.kind = 'stat' AND m.name = '$2'
       AND json_extract(t.config_json, '\$.precision') = '$1'" | tail -n 1
  }
  skipped=$(stat fp16 skipped_steps)
  fp32=$(stat fp32 last_loss) fp16=$(stat fp16 last_loss)
  echo "$w: fp16 skipped $skipped optimiser steps; last loss fp32 $fp32, fp16 $fp16"
  python3 - "$skipped" "$fp32" "$fp16" <<'PY' || { echo "FAIL: $w"; exit 1; }
import math, sys
skipped, fp32, fp16 = (float(x) for x in sys.argv[1:])
assert skipped <= 20, f"fp16 skipped {skipped} steps: the scale never settled"
assert math.isfinite(fp16), "fp16 loss is not finite"
assert abs(fp16 - fp32) <= 0.25 * abs(fp32) + 1e-3, "fp16 loss far from fp32's"
PY
done
echo "PASS"
