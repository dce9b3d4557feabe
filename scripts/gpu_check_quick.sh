#!/usr/bin/env bash
# gpu-check.sh --quick (called by it, arguments in this order): at most 8
# minutes on one GPU.
#   1. the GPU tests (ctest -L gpu; the two-GPU ones skip with the reason on
#      one GPU);
#   2. one sweep per workload over precision and its own GPU-relevant knob
#      (dqn replay_on_device, timeseries lstm_impl, transformer attention;
#      restoration and marl precision alone), and one over cuda_graphs,
#      blocks sized by time;
#   3. diagnose of each workload;
#   4. one run of the quickstart (experiments/quickstart.json) as shipped;
# everything under OUT, then a summary table (gpu_check_summary.py) printed
# last and written to OUT/summary.txt. Exits 1 when a GPU test failed.
set -euo pipefail
bin=$1 build=$2 out=$3 device=$4 tests=$5 workloads=$6
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
db="$out/gpu-check.db"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }

tests_rc=0
if [ "$tests" = 1 ]; then
  stamp "== GPU tests (ctest -L gpu)"
  (cd "$build" && ctest -L gpu --output-on-failure --timeout 240) > "$out/ctest.log" 2>&1 ||
    tests_rc=$?
else
  : > "$out/ctest.log"
fi

# fp16 autocast needs a CUDA device.
precisions='["fp32", "bf16", "fp16"]'
[ "$device" = cpu ] && precisions='["fp32", "bf16"]'
knob_of() {
  case "$1" in
    dqn) echo '"replay_on_device": [false, true]' ;;
    timeseries) echo '"lstm_impl": ["aten", "fused"]' ;;
    transformer) echo '"attention": ["explicit", "fused"]' ;;
    *) echo "" ;;
  esac
}
quick_sweep() {  # quick_sweep NAME WORKLOAD GRID
  cat > "$out/$1.json" <<JSON
{"name": "$1", "workload": "$2", "base": {"device": "$device"},
 "grid": {$3},
 "measure": {"repeats": 3, "warmup_steps": 5, "min_warmup_s": 0.5, "block_s": 0.05,
             "blocks": 5, "timeout_s": 300}}
JSON
  stamp "== sweep $1: $3"
  if "$bin" run "$out/$1.json" --db "$db" > "$out/$1.log" 2>&1; then
    echo "$1 ran" >> "$out/sweeps.txt"
  else
    echo "$1 failed: $(tail -n 1 "$out/$1.log")" >> "$out/sweeps.txt"
  fi
}
: > "$out/sweeps.txt"
for w in $workloads; do
  name="quick_$w"
  knob=$(knob_of "$w")
  grid="\"precision\": $precisions${knob:+, $knob}"
  quick_sweep "$name" "$w" "$grid"
  # cuda_graphs on every workload, at its defaults: captured where it opted
  # in, else skipped with the reason (the table says which). Warmup covers
  # the dry run, the two side-stream calls and the capture.
  quick_sweep "graphs_$w" "$w" '"cuda_graphs": [false, true]'
done

for w in $workloads; do
  stamp "== diagnose $w"
  # Blocks by time: a canonical step is milliseconds on a GPU, seconds on a CPU.
  "$bin" diagnose "$w" --set device="$device" --set measure.warmup_steps=3 \
    --set measure.block_s=0.2 --matmul-seconds 0.5 --db "$out/diagnose.db" \
    --format json > "$out/diagnose_$w.json" 2> "$out/diagnose_$w.log" ||
    echo "{\"error\": \"diagnose exited $?\"}" > "$out/diagnose_$w.json"
done

stamp "== quickstart (experiments/quickstart.json as shipped)"
qs_start=$(date +%s)
"$bin" run "$repo/experiments/quickstart.json" --db "$out/quickstart.db" \
  --set device="$device" > "$out/quickstart.log" 2>&1 || true
echo "$(( $(date +%s) - qs_start ))" > "$out/quickstart_wall_s.txt"

stamp "== summary"
python3 "$repo/scripts/gpu_check_summary.py" "$bin" "$out" "$workloads" | tee "$out/summary.txt"
stamp "gpu-check --quick: done in $(( $(date +%s) - start )) s"
if [ "$tests_rc" != 0 ]; then
  echo "gpu-check: FAILED: GPU tests failed (ctest exit status $tests_rc; see $out/ctest.log)"
  exit 1
fi
