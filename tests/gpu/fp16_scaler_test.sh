#!/usr/bin/env bash
# On a GPU: fp16 goes through torchkit's gradient scaler in every plugin that
# trains with it (dqn, marl here; restoration, timeseries and transformer
# already did): a small seeded run at fp16 and at fp32 on cuda:0, both `ok`;
# the fp16 trial reports its scaler (torchkit's stats loss_scale, the final
# scale, and scaler_skipped_steps) and the scaler acted: it backed off from
# its initial 65536 or skipped at least one optimiser step (a scaler that is
# off or does nothing passes every other check), and
# at most a few (the scale settles); the fp32 trial has no scaler; fp16's
# last loss is near fp32's. Where no CUDA device is visible to LibTorch it
# prints why and exits 77 (skipped).
#
# With the scaler off this fails; there is no setting that turns it off, so
# this was checked on the code path (sdk/torchkit/src/grad_step.cpp), not on
# a GPU: a GradStep that does not scale (scaling_ false) never registers, so
# GradStep::scaler_stats and TorchWorkload::stats() report no loss_scale and
# the check below fails on "no loss_scale"; one that scales but never
# unscales, skips or updates the scale ends with loss_scale 65536 and 0
# skipped steps and fails on "never backed off". `fp16_scaler_test.sh
# --check-verdict LOSS_SCALE SKIPPED` runs the check alone on such figures.
# Premise, unverified without a GPU: a correct scaler starting at 65536
# overflows at least once in these runs (PyTorch's GradScaler usually skips
# the first steps); if a GPU run fails with loss_scale 65536 and 0 skipped,
# that premise is what broke.
# Usage: fp16_scaler_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
# The scaler's verdict on one fp16 trial's figures (empty: not reported).
scaler_verdict() {  # LOSS_SCALE SCALER_SKIPPED_STEPS
  python3 - "$1" "$2" <<'PY'
import sys
scale, skipped = sys.argv[1:]
assert scale != "", "no loss_scale stat: the fp16 trial ran without torchkit's gradient scaler"
scale, skipped = float(scale), float(skipped or 0)
assert scale < 65536 or skipped >= 1, (
    f"the scaler never backed off (loss_scale {scale:g}) nor skipped a step: it did nothing")
assert skipped <= 20, f"fp16 skipped {skipped:g} steps: the scale never settled"
PY
}
if [ "${1:-}" = --check-verdict ]; then
  scaler_verdict "${2:-}" "${3:-}"
  exit
fi
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
  stat() {  # precision name: the trial's value, empty when it has none (row 1 is the header)
    "$bin" sql --db "$work/r.db" --format csv \
      "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN sweeps s ON s.id = t.sweep_id
       WHERE s.name = 'fp16_$w' AND m.kind = 'stat' AND m.name = '$2'
       AND json_extract(t.config_json, '\$.precision') = '$1'" | sed -n 2p
  }
  scale=$(stat fp16 loss_scale) skipped=$(stat fp16 scaler_skipped_steps)
  plugin_skipped=$(stat fp16 skipped_steps) fp32_scale=$(stat fp32 loss_scale)
  fp32=$(stat fp32 last_loss) fp16=$(stat fp16 last_loss)
  echo "$w: fp16 loss scale ${scale:-(none)} at the end, $skipped optimiser steps skipped" \
       "(the plugin says $plugin_skipped); last loss fp32 $fp32, fp16 $fp16"
  scaler_verdict "$scale" "$skipped" || { echo "FAIL: $w: the scaler"; exit 1; }
  [ -z "$fp32_scale" ] || { echo "FAIL: $w: the fp32 trial reports a loss scale ($fp32_scale)"; exit 1; }
  python3 - "$fp32" "$fp16" <<'PY' || { echo "FAIL: $w"; exit 1; }
import math, sys
fp32, fp16 = (float(x) for x in sys.argv[1:])
assert math.isfinite(fp16), "fp16 loss is not finite"
assert abs(fp16 - fp32) <= 0.25 * abs(fp32) + 1e-3, "fp16 loss far from fp32's"
PY
done
echo "PASS"
