#!/usr/bin/env bash
# cuda_graphs on a GPU, measured side by side in one call (issue 47's
# figures): for each workload one sweep of cuda_graphs [false, true] at the
# settings the issue names (dqn: replay_on_device=true, target_sync=inplace;
# the others at their defaults), the two trials interleaved, so that the
# graphed/eager ratio is paired in time; then anchor.py, the records'
# PyTorch script, in the same call: the DQN update eager and captured
# (torch.cuda.graph), the transformer step eager and under
# torch.compile(mode="reduce-overhead"). Printed: each side's median block
# throughput, graphed/eager for the plugin and for the script, and the
# graphed transformer plugin against the reduce-overhead script.
# Goals (issue 47): dqn graphed >= 4x eager on an H100-class card;
# transformer graphed >= 1.0x the reduce-overhead script.
#
# Usage: bench/graphs/graphs.sh [--build DIR] [--device cuda|cpu] [--out DIR]
#                               [WORKLOAD ...]
#   WORKLOAD: dqn transformer marl restoration timeseries (default: all)
#   --device cpu  tries the script here: every graphed trial ends `skipped`
#                 (graphs capture CUDA kernels) and the anchors run eagerly
#   --out DIR     keep the database and logs there (default: a temporary
#                 folder, removed)
# Anchors run with GPUSWEEP_PYTHON, else the repository's .venv, else python3.
# Exit status: 0 when every goal measured is met, 1 when one is missed, 2 on
# usage errors, 77 when no CUDA device is visible (without --device cpu).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build="$repo/build"
device=cuda
out=""
workloads=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "graphs.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) workloads+=("$1"); shift ;;
  esac
done
[[ ${#workloads[@]} -gt 0 ]] || workloads=(dqn transformer marl restoration timeseries)
bin="$build/gpusweep"
[[ -x "$bin" ]] || { echo "graphs.sh: no $bin; build first" >&2; exit 2; }
export GPUSWEEP_PLUGIN_PATH="$build/plugins"
py=${GPUSWEEP_PYTHON:+$GPUSWEEP_PYTHON/bin/python3}
[[ -n "$py" ]] || { [[ -x "$repo/.venv/bin/python3" ]] && py="$repo/.venv/bin/python3"; } || true
[[ -n "$py" ]] || py=python3
if [[ -z "$out" ]]; then
  . "$repo/bench/lib.sh"
  out=$work
fi
mkdir -p "$out"

if [[ "$device" == cuda ]]; then
  n=$("$bin" doctor --format json --matmul-seconds 0 2>/dev/null |
      python3 -c 'import json,sys; print(len(json.load(sys.stdin)["cuda"]["devices"]))' || echo 0)
  if [[ "$n" == 0 ]]; then
    echo "graphs.sh: skipped: no CUDA device is visible to LibTorch"
    exit 77
  fi
fi

base_of() {
  case "$1" in
    dqn) echo ', "replay_on_device": true, "target_sync": "inplace"' ;;
    *) echo "" ;;
  esac
}
db="$out/graphs.db"
for w in "${workloads[@]}"; do
  cat > "$out/$w.json" <<JSON
{"name": "graphs_$w", "workload": "$w", "base": {"device": "$device" $(base_of "$w")},
 "grid": {"cuda_graphs": [false, true]},
 "measure": {"repeats": 2, "warmup_steps": 10, "min_warmup_s": 0.5, "block_s": 0.1,
             "blocks": 8, "interleave": 2, "timeout_s": 300}}
JSON
  echo "== $w: cuda_graphs [false, true]" >&2
  "$bin" run "$out/$w.json" --db "$db" > "$out/$w.log" 2>&1 ||
    echo "graphs.sh: $w's sweep failed: $(tail -n 1 "$out/$w.log")" >&2
done

# The anchors: CUDA graphs and reduce-overhead need a GPU; on the CPU the
# eager sides only (each line a JSON object, or the error).
anchor() {  # anchor NAME ARGS...
  local name=$1
  shift
  echo "== anchor $name" >&2
  if ! "$py" "$here/anchor.py" "$@" --device "$device" > "$out/anchor_$name.json" \
      2> "$out/anchor_$name.log"; then
    echo "{\"error\": \"$(tail -n 1 "$out/anchor_$name.log" | tr -d '"\\')\"}" > "$out/anchor_$name.json"
  fi
}
anchor dqn_eager dqn eager
anchor gpt_eager gpt eager
if [[ "$device" == cuda ]]; then
  anchor dqn_graph dqn graph
  anchor gpt_reduce_overhead gpt reduce-overhead
fi

python3 - "$db" "$out" "${workloads[@]}" <<'PY'
import json, os, sqlite3, statistics, sys

db, out, workloads = sys.argv[1], sys.argv[2], sys.argv[3:]
con = sqlite3.connect(db) if os.path.exists(db) else None

def plugin(w):
    """{graphed: (median samples/s over the trials' blocks, status note)}"""
    res = {}
    if con is None:
        return res
    for graphed in (0, 1):
        rows = con.execute(
            "SELECT t.id, t.status, coalesce(t.error, '') FROM trials t JOIN sweeps s "
            "ON s.id = t.sweep_id WHERE s.name = ? AND "
            "json_extract(t.config_json, '$.cuda_graphs') = ?", ("graphs_" + w, graphed)).fetchall()
        rates = [r for (tid, status, _) in rows if status == "ok" for (r,) in con.execute(
            "SELECT samples / seconds FROM blocks WHERE trial_id = ?", (tid,))]
        notes = sorted({status + (": " + err[:70] if err else "")
                        for (_, status, err) in rows if status != "ok"})
        res[graphed] = (statistics.median(rates) if rates else None, "; ".join(notes))
    return res

def anchor(name):
    try:
        with open(os.path.join(out, "anchor_%s.json" % name)) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return {}

def fmt(x):
    return "-" if x is None else "%.4g" % x

missed = []
print("%-12s %14s %14s %8s  %s" % ("workload", "eager /s", "graphed /s", "ratio", "note"))
figures = {}
for w in workloads:
    p = plugin(w)
    e, g = p.get(0, (None, "")), p.get(1, (None, ""))
    ratio = g[0] / e[0] if e[0] and g[0] else None
    figures[w] = (e[0], g[0], ratio)
    print("%-12s %14s %14s %8s  %s" % (w, fmt(e[0]), fmt(g[0]),
                                      fmt(ratio) + ("x" if ratio else ""), e[1] or g[1]))
de, dg = anchor("dqn_eager").get("updates_per_s"), anchor("dqn_graph").get("updates_per_s")
ge, gr = anchor("gpt_eager").get("tokens_per_s"), anchor("gpt_reduce_overhead").get("tokens_per_s")
print()
print("anchor.py (PyTorch %s): dqn update eager %s, graphed %s updates/s (%s); "
      "transformer step eager %s, reduce-overhead %s tokens/s (%s)"
      % (anchor("dqn_eager").get("torch", "?"), fmt(de), fmt(dg),
         fmt(dg / de) + "x" if de and dg else "-", fmt(ge), fmt(gr),
         fmt(gr / ge) + "x" if ge and gr else "-"))
if "dqn" in figures and figures["dqn"][2] is not None:
    r = figures["dqn"][2]
    ok = r >= 4.0
    print("goal: dqn graphed/eager %.2fx (>= 4x): %s" % (r, "met" if ok else "MISSED"))
    if not ok:
        missed.append("dqn")
if "transformer" in figures and figures["transformer"][1] and gr:
    r = figures["transformer"][1] / gr
    ok = r >= 1.0
    print("goal: transformer graphed / reduce-overhead script %.2fx (>= 1.0x): %s"
          % (r, "met" if ok else "MISSED"))
    if not ok:
        missed.append("transformer")
sys.exit(1 if missed else 0)
PY
