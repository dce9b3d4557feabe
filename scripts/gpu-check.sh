#!/usr/bin/env bash
# One command for a GPU machine: is gpusweep right here? It runs
#   1. the GPU tests (ctest -L gpu: fp16 with its scaler, block timing against
#      a known-length kernel, two workers on two GPUs, the CUDA memory cap,
#      transfer time and NVML of the trial's own GPU, CUDA graphs);
#   2. a short sweep of every workload over each of precision, tf32,
#      channels_last, cudnn_benchmark, pin_memory, non_blocking,
#      loader_workers and cuda_graphs (one setting at a time against the defaults; a setting
#      the workload has nothing to act on is refused, and said so);
#   3. the guides' claims (experiments/claims.sh);
# and writes one self-contained HTML file with all of it (each sweep's
# `gpusweep report` inline). Without a visible CUDA device it says why and
# exits 77 (skipped). When a GPU test fails it still runs the rest and
# writes the report, then says which tests failed and exits 1. Takes about
# 30-60 minutes on one GPU.
#
# Usage: scripts/gpu-check.sh [--quick] [--build DIR] [--out DIR] [--workloads "dqn ..."]
#                             [--settings "precision ..."] [--no-tests] [--no-claims]
#                             [--device cuda|cpu]
#   --quick       at most 8 minutes on one GPU: the GPU tests, one sweep per
#                 workload over precision and its own GPU knob (dqn
#                 replay_on_device, timeseries lstm_impl, transformer
#                 attention), diagnose of each workload, one quickstart run;
#                 a summary table printed last (scripts/gpu_check_summary.py)
#   --out DIR     where the database, logs and gpu-check.html go (default gpu-check/)
#   --device cpu  runs the sweeps on the CPU, to try the script without a GPU
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build"
out="$repo/gpu-check"
workloads="dqn restoration timeseries marl transformer"
settings="precision tf32 channels_last cudnn_benchmark pin_memory non_blocking loader_workers cuda_graphs"
tests=1 claims=1 device=cuda quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --no-tests) tests=0; shift ;;
    --no-claims) claims=0; shift ;;
    --device) device=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bin="$build/gpusweep"
[ -x "$bin" ] || { echo "gpu-check.sh: no $bin; build first (scripts/build.sh)" >&2; exit 2; }
export GPUSWEEP_PLUGIN_PATH="$build/plugins"

if [ "$device" = cuda ]; then
  found=$("$bin" doctor --format json --matmul-seconds 0 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["cuda"]; print(len(c["devices"]), c.get("verdict",""))' ||
          echo "0 doctor failed")
  if [ "${found%% *}" = 0 ]; then
    echo "gpu-check: skipped: no CUDA device is visible to LibTorch (${found#* })"
    exit 77
  fi
  echo "gpu-check: ${found%% *} CUDA device(s) visible"
fi

mkdir -p "$out"
db="$out/gpu-check.db"
rm -f "$db" "$db-wal" "$db-shm"
sections="$out/sections.txt"
: > "$sections"

tests_rc=0
if [ "$quick" = 1 ]; then
  exec "$repo/scripts/gpu_check_quick.sh" "$bin" "$build" "$out" "$device" "$tests" "$workloads"
fi
if [ "$tests" = 1 ]; then
  echo "== GPU tests (ctest -L gpu)"
  # A failure is kept for the exit status; the sweeps and the report go on.
  (cd "$build" && ctest -L gpu --output-on-failure) > "$out/ctest.log" 2>&1 || tests_rc=$?
  tail -n 20 "$out/ctest.log"
  echo "tests|GPU tests (ctest -L gpu)|$out/ctest.log" >> "$sections"
fi

# The other value of a setting (the manifest's default is the baseline).
values_of() {
  case "$1" in
    precision) echo '["fp32", "bf16", "fp16"]' ;;
    loader_workers) echo '[0, 4]' ;;
    *) echo '[false, true]' ;;
  esac
}

echo "== settings, one at a time, on $device"
for w in $workloads; do
  for s in $settings; do
    name="gpu_check_${w}_${s}"
    base="\"device\": \"$device\""
    # non_blocking copies only overlap from pinned memory.
    [ "$s" = non_blocking ] && base="$base, \"pin_memory\": true"
    baseline=$(values_of "$s" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0]))')
    cat > "$out/$name.json" <<JSON
{"name": "$name", "workload": "$w", "base": {$base},
 "grid": {"$s": $(values_of "$s")},
 "baseline": {"$s": $baseline},
 "measure": {"repeats": 2, "warmup_steps": 10, "steps_per_block": 20, "blocks": 5,
             "timeout_s": 600}}
JSON
    if "$bin" run "$out/$name.json" --db "$db" > "$out/$name.log" 2>&1; then
      echo "$w $s: ran"
      echo "sweep|$w: $s|$name" >> "$sections"
    else
      why=$(grep -m1 -iE 'error|refused|not applicable|applies' "$out/$name.log" || tail -n 1 "$out/$name.log")
      echo "$w $s: not run: $why"
      echo "note|$w: $s|$why" >> "$sections"
    fi
  done
done

if [ "$claims" = 1 ]; then
  echo "== the guides' claims"
  "$repo/experiments/claims.sh" --build "$build" --db "$out/claims.db" --no-readme \
    > "$out/claims.log" 2>&1 || true
  echo "claims|The guides' claims|$out/claims.log" >> "$sections"
fi

echo "== report"
python3 - "$bin" "$db" "$sections" "$out/gpu-check.html" "$device" <<'PY'
import html, subprocess, sys, tempfile, os, datetime
bin, db, sections, target, device = sys.argv[1:]
parts = [f"<h1>gpusweep gpu-check</h1><p>{datetime.datetime.now():%Y-%m-%d %H:%M}, device {html.escape(device)}</p>"]
doctor = subprocess.run([bin, "doctor", "--matmul-seconds", "0"], capture_output=True, text=True).stdout
parts.append("<h2>This machine (gpusweep doctor)</h2><pre>" + html.escape(doctor) + "</pre>")
for line in open(sections):
    kind, title, what = line.rstrip("\n").split("|", 2)
    parts.append(f"<h2>{html.escape(title)}</h2>")
    if kind in ("tests", "claims"):
        parts.append("<pre>" + html.escape(open(what, errors="replace").read()[-20000:]) + "</pre>")
    elif kind == "note":
        parts.append("<p>not run: " + html.escape(what) + "</p>")
    else:
        compare = subprocess.run([bin, "compare", "--db", db, "--sweep", what],
                                 capture_output=True, text=True).stdout
        parts.append("<pre>" + html.escape(compare) + "</pre>")
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "r.html")
            r = subprocess.run([bin, "report", "--db", db, "--sweep", what, "--html", page],
                               capture_output=True, text=True)
            if r.returncode == 0:
                doc = open(page).read()
                parts.append('<iframe style="width:100%;height:900px;border:1px solid #ccc" srcdoc="'
                             + html.escape(doc, quote=True) + '"></iframe>')
            else:
                parts.append("<pre>" + html.escape(r.stderr) + "</pre>")
open(target, "w").write("<!doctype html><meta charset=utf-8><title>gpusweep gpu-check</title>"
                        "<body style='font-family:sans-serif'>" + "\n".join(parts) + "</body>")
print("wrote", target)
PY

if [ "$tests_rc" != 0 ]; then
  # The failed tests' lines after ctest's heading (sed succeeds with none).
  failed=$(sed -n '/The following tests FAILED:/,${/^[[:space:]]*[0-9][0-9]* - /p}' "$out/ctest.log")
  echo "gpu-check: FAILED: GPU tests failed (ctest exit status $tests_rc; see $out/ctest.log):"
  echo "${failed:-  (ctest named none; it may not have run)}"
  exit 1
fi
if [ "$tests" = 1 ]; then
  echo "gpu-check: done; no GPU test failed (see $out/ctest.log for any skipped)"
else
  echo "gpu-check: done (GPU tests not run: --no-tests)"
fi
