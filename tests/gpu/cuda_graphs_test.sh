#!/usr/bin/env bash
# On a GPU: cuda_graphs captures the step and replays it, trains as the eager
# step does, and is faster where the step is launch-bound. For dqn (its replay
# on the device), transformer and marl (and restoration and timeseries, not
# timed: they may be compute-bound), one seed, eager and graphed side by
# side, interleaved (and transformer in fp16, its scaler's check kept on the
# device under graphs):
#   - the graphed trial is ok, captured (cuda_graphs_captured >= 1: marl
#     holds a graph per critic minibatch size and one for its actor) and
#     replayed at least once per measured step: it did not fall back to
#     eager; where the workload reports both, its optimizer_steps (plus the
#     fp16 scaler's skipped ones) equal its steps (replays counted once);
#   - its loss after the same steps agrees with the eager trial's (dqn within
#     10%: its data depends on its greedy actions, which float rounding can
#     flip, and its eager Adam is LibTorch's, rounding otherwise than the
#     fused kernel; transformer within 2%, the same AdamW kernel either way;
#     marl within 50%: its actions are sampled from the policy, and its two
#     Adams round otherwise than the fused kernels, so only a broken update
#     lands that far);
#   - its median block throughput is above the eager one's;
#   - the loss read every step (sync_every 1) after the replay is the step's
#     own: last_loss is reported, finite and agrees as above.
# Usage: cuda_graphs_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 1
failed=0
check() {  # check NAME WORKLOAD BASE-JSON LOSS-TOLERANCE [FASTER: 1, or 0 where compute-bound]
  local w=$1 workload=$2 base=$3 tolerance=$4 faster=${5:-1} db="$work/$1.db"
  cat > "$work/$w.json" <<JSON
{"name": "graphs_$w", "workload": "$workload",
 "base": {"device": "cuda", "seed": 5, "sync_every": 1 $base},
 "grid": {"cuda_graphs": [false, true]},
 "measure": {"repeats": 1, "vary_seed": false, "warmup_steps": 20, "steps_per_block": 50,
             "blocks": 6, "interleave": 2}}
JSON
  "$bin" run "$work/$w.json" --db "$db" --gpus 0 > "$work/$w.log" 2>&1 || { cat "$work/$w.log"; return 1; }
  cat "$work/$w.log"
  graphs() { echo "json_extract(t.config_json, '\$.cuda_graphs') = $1"; }
  metric() {  # metric GRAPHS NAME: the trial's value of a metric (NULL when absent)
    sql "$db" "SELECT m.value FROM trials t LEFT JOIN metrics m ON m.trial_id = t.id AND m.name = '$2'
      WHERE $(graphs "$1") ORDER BY m.at_step DESC LIMIT 1"
  }
  median() {  # the median block throughput (samples/s) of the trial
    sql "$db" "SELECT b.samples / b.seconds FROM blocks b JOIN trials t ON t.id = b.trial_id
      WHERE $(graphs "$1") ORDER BY 1 LIMIT 1 OFFSET
      (SELECT count(*) / 2 FROM blocks b JOIN trials t ON t.id = b.trial_id WHERE $(graphs "$1"))"
  }
  python3 - "$w" "$tolerance" "$faster" "$(sql "$db" "SELECT count(*) FROM trials WHERE status = 'ok'")" \
    "$(metric 1 cuda_graphs_captured)" "$(metric 1 cuda_graph_replays)" \
    "$(sql "$db" "SELECT sum(b.steps) FROM blocks b JOIN trials t ON t.id = b.trial_id WHERE $(graphs 1)")" \
    "$(metric 0 last_loss)" "$(metric 1 last_loss)" "$(median 0)" "$(median 1)" \
    "$(metric 1 optimizer_steps)" "$(metric 1 skipped_steps)" "$(metric 1 step)" <<'PY'
import math, sys
(w, tol, faster, ok, captured, replays, steps, eager_loss, graphed_loss, eager, graphed, opt_steps,
 skipped, own_steps) = sys.argv[1:]
def num(s):  # a query without rows prints its header: no value
    try:
        return float(s)
    except ValueError:
        return float("nan")
tol, ok, captured, replays, steps = float(tol), int(num(ok)), num(captured), num(replays), num(steps)
eager_loss, graphed_loss, eager, graphed = map(num, (eager_loss, graphed_loss, eager, graphed))
opt_steps, own_steps = num(opt_steps) + (num(skipped) if num(skipped) > 0 else 0), num(own_steps)
print("%s: %d of 2 trials ok; graphed: captured %s, %s replays over %s measured steps; last loss "
      "eager %g, graphed %g; median samples/s eager %g, graphed %g (%.2fx)"
      % (w, ok, captured, replays, steps, eager_loss, graphed_loss, eager, graphed,
         graphed / eager if eager > 0 else float("nan")))
fail = []
if ok != 2:
    fail.append("%d of 2 trials ok" % ok)
if not captured >= 1:
    fail.append("the graphed trial did not capture (eager fallback?)")
if not replays >= steps:
    fail.append("%s replays for %s measured steps: some steps ran eagerly" % (replays, steps))
if not (math.isfinite(graphed_loss) and abs(graphed_loss - eager_loss) <= tol * abs(eager_loss) + 1e-3):
    fail.append("losses disagree beyond %g: eager %g, graphed %g" % (tol, eager_loss, graphed_loss))
if math.isfinite(opt_steps) and math.isfinite(own_steps) and opt_steps != own_steps:
    fail.append("optimizer steps and skipped ones %g for %g steps: replays miscounted"
                % (opt_steps, own_steps))
if faster == "1" and not graphed > eager:
    fail.append("the graphed step is not faster: %g against %g samples/s" % (graphed, eager))
for f in fail:
    print("FAIL: %s: %s" % (w, f))
sys.exit(1 if fail else 0)
PY
}
check dqn dqn ', "replay_on_device": true' 0.10 || failed=1
check transformer transformer '' 0.02 || failed=1
check marl marl '' 0.50 || failed=1
# fp16: the scaler's check on the device, AdamW's kernels skipping an
# update whose gradients overflowed; the eager side reads the check
# on the host.
check transformer_fp16 transformer ', "precision": "fp16"' 0.02 || failed=1
# A supervised step with an input pipeline, cuDNN inside the capture:
# restoration's convolutions (a fixed batch shape) and timeseries' LSTM
# (lstm_impl auto: cuDNN's on a GPU, its workspace allocated in the
# capture). Both may be compute-bound: captured, replayed and training as
# eager does, not necessarily faster.
check restoration restoration '' 0.05 0 || failed=1
check timeseries timeseries '' 0.05 0 || failed=1
[ "$failed" = 0 ] || exit 1
echo "PASS"
