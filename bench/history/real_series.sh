#!/usr/bin/env bash
# A real history with a step injected (issue 57): two series of 2 x RUNS runs
# of one small sweep of the spin_build fixture (tests/fixtures/plugins/
# spin_build.cpp: SPIN_US a step, one config, 3 repeats, BLOCKS blocks of 100
# steps), each series in its own database:
#   step        RUNS runs of builds/base, then RUNS of builds/slow5 (its step
#               5% slower: compiled with GPUSWEEP_FIXTURE_SLOWDOWN=1.05)
#   stationary  2 x RUNS runs of builds/base
# The two series' runs alternate, so that both see the same machine: a change
# point both show at the same time is the machine's. After every run,
# `gpusweep history` reads the series as it stands then (as a nightly job
# would), which tells when the step was first found. Prints both histories
# at the end and one summary line.
# Usage: bench/history/real_series.sh [BUILD] [RUNS] [SPIN_US] [BLOCKS] [KEEP_DIR]
#   e.g. cmake --build build --target gpusweep gpusweep-worker \
#          gpusweep_plugin_spin_build_base gpusweep_plugin_spin_build_slow5 &&
#        bench/history/real_series.sh build 12 2000 20 /tmp/series
# KEEP_DIR, when given, keeps the two databases and each step's history.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
runs=${2:-12}
spin=${3:-2000}
blocks=${4:-20}
keep=${5:-}
bin=$build/gpusweep
builds=$build/tests/fixtures/builds
for b in base slow5; do
  [ -f "$builds/$b/gpusweep_spin_build.so" ] || {
    echo "missing $builds/$b/gpusweep_spin_build.so: build gpusweep_plugin_spin_build_$b" >&2
    exit 2
  }
done
source "$(dirname "$0")/../lib.sh"
# Private copies: a rebuild of the build tree during the series (others
# build on this machine) would swap the binaries between runs, or break one.
mkdir "$work/bin"
cp "$bin" "$build/gpusweep-worker" "$work/bin/"
bin=$work/bin/gpusweep
cat > "$work/sweep.json" <<JSON
{"name": "spin_build_history", "workload": "spin_build",
 "base": {"spin_us": $spin}, "grid": {},
 "measure": {"warmup_steps": 50, "steps_per_block": 100, "blocks": $blocks, "repeats": 3}}
JSON

# The change points of the newest series in history's json, as
# "index:ratio:p" words (index 0 is the series' first run), or "none".
points() {
  python3 -c 'import json,sys
s=json.load(open(sys.argv[1]))["series"]
cps=s[0]["change_points"] if s else []
print(" ".join("%d:%.3f:%.2g"%(c["index"],c["ratio"],c["p_value"]) for c in cps) or "none")' "$1"
}

start=$(date +%s)
: > "$work/step.grow"
: > "$work/flat.grow"
for i in $(seq 1 $((2 * runs))); do
  head=base
  [ "$i" -gt "$runs" ] && head=slow5
  for series in step flat; do
    b=$head
    [ "$series" = flat ] && b=base
    t0=$(date +%s.%N)
    "$bin" run "$work/sweep.json" --db "$work/$series.db" --plugin-path "$builds/$b" \
      > "$work/run.out" 2>&1 || { cat "$work/run.out" >&2; exit 1; }
    t1=$(date +%s.%N)
    "$bin" history spin_build --db "$work/$series.db" --format json > "$work/h.json"
    echo "$i $(points "$work/h.json")" >> "$work/$series.grow"
    printf 'run %2d %-10s %-5s %5.1f s  load %s  change points: %s\n' "$i" "$series" "$b" \
      "$(echo "$t1 - $t0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)" "$(points "$work/h.json")"
  done
done

for series in step flat; do
  echo
  echo "== $series series: gpusweep history spin_build --db $series.db"
  "$bin" history spin_build --db "$work/$series.db"
done

# The summary, by the simulation's rules (bench/change_points): the step is
# found by a change point within 3 runs of the first slow5 run (index RUNS);
# every other change point is false.
python3 - "$work/step.grow" "$work/flat.grow" "$runs" "$(( $(date +%s) - start ))" <<'PY'
import sys
step, flat, at, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def read(path):
    out = []
    for line in open(path):
        i, *words = line.split()
        cps = [] if words == ["none"] else [w.split(":") for w in words]
        out.append((int(i), [(int(c[0]), float(c[1])) for c in cps]))
    return out
near = lambda ix: abs(ix - at) <= 3
grow = read(step)
first = next((i for i, cps in grow if any(near(ix) for ix, _ in cps)), None)
final = grow[-1][1]
hit = [(ix, r) for ix, r in final if near(ix)]
false_step = [ix + 1 for ix, _ in final if not near(ix)]
flat_grow = read(flat)
flat_final = [ix + 1 for ix, _ in flat_grow[-1][1]]
flat_ever = sorted({ix + 1 for _, cps in flat_grow for ix, _ in cps})
if hit:
    found = "found at run %d (%.3fx; the step is at run %d)" % (hit[0][0] + 1, hit[0][1], at + 1)
else:
    found = "not found"
if first is not None:
    found += ", first shown by history after run %d: %d run(s) after the step" % (first, first - at)
print("summary: step series (%d base + %d slow5 runs): step %s; false change points at the end:"
      " %s; stationary series (%d base runs): false change points at the end: %s, ever shown: %s;"
      " %s s" % (at, at, found, false_step or "none", 2 * at, flat_final or "none",
                 flat_ever or "none", secs))
PY
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  cp "$work"/step.db* "$work"/flat.db* "$work"/*.grow "$work/sweep.json" "$keep"/
fi
