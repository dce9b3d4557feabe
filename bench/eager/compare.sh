#!/usr/bin/env bash
# gpusweep plugins against idiomatic PyTorch-eager implementations of the same
# canonical specs (docs/workloads.md), same machine, same LibTorch (the torch wheel
# the plugins were built against: .venv/bin/python3, or GPUSWEEP_PYTHON), same
# intra-op thread count.
#
# For each workload, ROUNDS rounds; each round runs the plugin at its
# canonical config (a one-trial sweep, fresh worker process, fresh database)
# and the eager script, in alternating order (plugin first in odd rounds,
# eager first in even ones), with the same warmup / steps per block / blocks.
# Each run gives the median block throughput; the table shows the median
# over rounds of each side, their ratio (plugin / eager), the range of the
# per-round paired ratios, the goal (1.5x for dqn and marl, 1.0x otherwise)
# and pass/fail. The machine is noisy: ratios, not absolute numbers, matter.
#
# With --compile, each round also runs the script with torch.compile (its
# modules compiled in place, mode MODE, "default" unless given with
# --compile-mode), in the order plugin, eager, compiled in odd rounds and the
# reverse in even ones; the table adds the compiled script's median, the
# plugin's ratio to it with the per-round ratios, and its goal (1.1x, issue
# 33; the eager goal is then at least 1.3x, issue 33's too), and prints
# each round's compilation time (the compiled script's first step, in its
# warmup, never in a block).
#
# With --cpu, each round also runs the plugin in-process under
# plugin_bench.cpp (built on first use into $TMPDIR with g++) and the table
# adds the ratio of CPU-time throughputs (plugin_bench vs the eager script's
# process CPU time): a cross-check that other jobs' CPU contention moves much
# less than wall-clock time (meaningful with --threads 1 only).
#
# Usage: bench/eager/compare.sh [--threads N] [--rounds R] [--cpu] [--compile]
#                               [--compile-mode MODE] [--build DIR] [--json FILE]
#                               [WORKLOAD ...]
#   WORKLOAD: dqn restoration timeseries marl transformer (default: all)
#   --threads N  intra-op threads on both sides (default 1 = what both
#                LibTorch and python3-torch pick by default on this machine;
#                the plugin gets "threads": N, the script torch.set_num_threads(N))
#   --rounds R   interleaved rounds per workload (default 3)
#   --build DIR  gpusweep build folder (default: the repo's build/)
#   --cpu        add the CPU-time cross-check (one more run per round)
#   --compile    add the torch.compile'd script (one more run per round)
#   --compile-mode MODE  its mode (default, reduce-overhead, max-autotune, ...)
#   --json FILE  also write every run's numbers as JSON lines to FILE
# Exit status: 0 if every workload meets its goal, 1 if one misses, 2 on usage errors.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build="$repo/build"
threads=1
rounds=3
json_out=""
cpu=0
compile=0
compile_mode=default
workloads=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --json) json_out=$2; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --compile) compile=1; shift ;;
    --compile-mode) compile=1; compile_mode=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) workloads+=("$1"); shift ;;
  esac
done
[[ ${#workloads[@]} -eq 0 ]] && workloads=(dqn restoration timeseries marl transformer)

bin="$build/gpusweep"
# The interpreter whose torch wheel the plugins were built against.
py=${GPUSWEEP_PYTHON:-$repo/.venv/bin/python3}
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
[[ -x "$bin" ]] || { echo "no gpusweep binary at $bin" >&2; exit 2; }
"$py" -c 'import torch' 2>/dev/null || { echo "$py cannot import torch" >&2; exit 2; }

# Protocol per workload: warmup steps, steps per block, blocks (both sides);
# sized for roughly 20-40 s per workload on 2 slow cores.
declare -A protocol=(
  [dqn]="200 200 5"
  [restoration]="1 1 5"
  [timeseries]="5 10 5"
  [marl]="1 1 5"
  [transformer]="2 3 5"
)
declare -A goal=([dqn]=1.5 [restoration]=1.0 [timeseries]=1.0 [marl]=1.5 [transformer]=1.0)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results="$work/results.jsonl"
: > "$results"

bench=""
if (( cpu )); then
  # Cached by source hash: building against the LibTorch headers takes ~20 s.
  src="$here/plugin_bench.cpp"
  bench="${TMPDIR:-/tmp}/gpusweep_plugin_bench.$(cat "$src" <("$py" -c 'import torch; print(torch.__version__)') | md5sum | cut -c1-12)"
  if [[ ! -x "$bench" ]]; then
    echo "# building $bench" >&2
    torch_root=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
    g++ -std=c++20 -O2 "$src" -o "$bench.tmp" -I"$repo/sdk/include" -I"$torch_root/include" \
      -I"$torch_root/include/torch/csrc/api/include" -L"$torch_root/lib" \
      -Wl,-rpath,"$torch_root/lib" -ltorch_cpu -lc10 -ldl && mv "$bench.tmp" "$bench"
  fi
fi

run_plugin() {  # workload round warmup steps blocks -> prints throughput
  local w=$1 r=$2 warmup=$3 steps=$4 blocks=$5
  local sweep="$work/$w.$r.json" db="$work/$w.$r.db"
  cat > "$sweep" <<JSON
{"name": "eager_cmp_$w", "workload": "$w",
 "description": "canonical config of $w against its PyTorch-eager reference (bench/eager)",
 "base": {"device": "cpu", "threads": $threads},
 "grid": {},
 "measure": {"warmup_steps": $warmup, "steps_per_block": $steps, "blocks": $blocks,
             "repeats": 1, "timeout_s": 600, "eval_every_blocks": 0, "order_seed": 0}}
JSON
  "$bin" run "$sweep" --db "$db" > "$work/$w.$r.log" 2>&1 || {
    echo "gpusweep run failed for $w:" >&2; cat "$work/$w.$r.log" >&2; return 1; }
  "$bin" export --db "$db" --format json |
    jq -r 'if .[0].status == "ok" then .[0].throughput_median else error("trial " + .[0].status) end'
}

run_eager() {  # workload warmup steps blocks [--compile MODE] -> prints
  # "wall_throughput cpu_throughput first_step_s"
  local w=$1 warmup=$2 steps=$3 blocks=$4
  shift 4
  (cd "$here" && "$py" "$w.py" --threads "$threads" --warmup "$warmup" --steps "$steps" \
     --blocks "$blocks" "$@" 2> "$work/$w.eager.err") | tail -n 1 |
    jq -r '"\(.throughput_median) \(.throughput_cpu_median) \(.first_step_s)"'
}

run_bench() {  # workload warmup steps blocks -> prints the plugin's CPU-time throughput
  local w=$1 warmup=$2 steps=$3 blocks=$4
  "$bench" "$build/plugins/gpusweep_$w.so" "{\"device\": \"cpu\", \"threads\": $threads}" \
    --warmup "$warmup" --steps "$steps" --blocks "$blocks" | tail -n 1 | jq -r '.throughput_cpu_median'
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ)  $(nproc) cores  threads=$threads  rounds=$rounds  load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for w in "${workloads[@]}"; do
  [[ -n "${protocol[$w]:-}" ]] || { echo "unknown workload $w" >&2; exit 2; }
  read -r warmup steps blocks <<< "${protocol[$w]}"
  for r in $(seq 1 "$rounds"); do
    pc=null c=null cs=null
    if (( r % 2 == 1 )); then
      p=$(run_plugin "$w" "$r" "$warmup" "$steps" "$blocks"); read -r e ec _ < <(run_eager "$w" "$warmup" "$steps" "$blocks")
      (( compile )) && read -r c _ cs < <(run_eager "$w" "$warmup" "$steps" "$blocks" --compile "$compile_mode")
      (( cpu )) && pc=$(run_bench "$w" "$warmup" "$steps" "$blocks")
    else
      (( cpu )) && pc=$(run_bench "$w" "$warmup" "$steps" "$blocks")
      (( compile )) && read -r c _ cs < <(run_eager "$w" "$warmup" "$steps" "$blocks" --compile "$compile_mode")
      read -r e ec _ < <(run_eager "$w" "$warmup" "$steps" "$blocks"); p=$(run_plugin "$w" "$r" "$warmup" "$steps" "$blocks")
    fi
    printf '  %-12s round %d: plugin %10.1f  eager %10.1f  ratio %.2f' "$w" "$r" "$p" "$e" \
      "$(echo "$p / $e" | bc -l)" >&2
    (( compile )) && printf '   compiled %10.1f  ratio %.2f  (compiled in %.1f s)' "$c" \
      "$(echo "$p / $c" | bc -l)" "$cs" >&2
    (( cpu )) && printf '   cpu-time: plugin %10.1f  eager %10.1f  ratio %.2f' "$pc" "$ec" \
      "$(echo "$pc / $ec" | bc -l)" >&2
    echo >&2
    echo "{\"workload\":\"$w\",\"round\":$r,\"threads\":$threads,\"plugin\":$p,\"eager\":$e,\"plugin_cpu\":$pc,\"eager_cpu\":$ec,\"compiled\":$c,\"compile_s\":$cs}" >> "$results"
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[[ -n "$json_out" ]] && cp "$results" "$json_out"

"$py" - "$results" "${workloads[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
goals = {"dqn": 1.5, "marl": 1.5}
units = {"dqn": "updates/s", "restoration": "images/s", "timeseries": "sequences/s",
         "marl": "agent-steps/s", "transformer": "tokens/s"}
cpu = any(r["plugin_cpu"] is not None for r in rows)
comp = any(r.get("compiled") is not None for r in rows)
print("| workload | unit | plugin (median) | eager (median) | ratio | per-round ratios | goal | result |"
      + (" compiled (median) | vs compiled | per-round | goal | result | compile s |" if comp else "")
      + (" cpu-time ratio |" if cpu else ""))
print("|---|---|---:|---:|---:|---|---:|---|" + ("---:|---:|---|---:|---|---:|" if comp else "")
      + ("---:|" if cpu else ""))
failed = 0
for w in sys.argv[2:]:
    rs = [r for r in rows if r["workload"] == w]
    p = statistics.median(r["plugin"] for r in rs)
    e = statistics.median(r["eager"] for r in rs)
    paired = sorted(r["plugin"] / r["eager"] for r in rs)
    # Issue 33 asks more of the eager ratio where the compiled script is
    # measured too: at least 1.3x.
    goal = max(goals.get(w, 1.0), 1.3) if comp else goals.get(w, 1.0)
    ok = p / e >= goal
    failed += not ok
    compiled_cols = ""
    if comp:
        c = statistics.median(r["compiled"] for r in rs)
        paired_c = sorted(r["plugin"] / r["compiled"] for r in rs)
        ok_c = p / c >= 1.1
        failed += not ok_c
        compiled_cols = (f" {c:.1f} | {p / c:.2f}x | {' '.join(f'{x:.2f}' for x in paired_c)} | 1.1x | "
                         f"{'pass' if ok_c else 'FAIL'} | "
                         f"{statistics.median(r['compile_s'] for r in rs):.1f} |")
    print(f"| {w} | {units[w]} | {p:.1f} | {e:.1f} | {p / e:.2f}x | "
          f"{' '.join(f'{x:.2f}' for x in paired)} | {goal:.1f}x | {'pass' if ok else 'FAIL'} |"
          + compiled_cols
          + (f" {statistics.median(r['plugin_cpu'] for r in rs) / statistics.median(r['eager_cpu'] for r in rs):.2f}x |" if cpu else ""))
sys.exit(1 if failed else 0)
PY
