#!/usr/bin/env bash
# The quickstart's acceptance figures over fresh runs: RUNS runs (default 5)
# of experiments/quickstart.json, each with its own measure.order_seed, into
# a fresh database each. For each run: the wall time, every ratio's 95%
# half-width and their median (from `compare --format json`), and the knob
# table's widest half-width against the widest per-config one it summarises
# (from `compare --knobs --format json`; the promise is at most twice; in
# the quickstart's 2 x 2 grid every knob row summarises all three configs).
# Usage: bench/quickstart_fresh.sh BUILD [RUNS]
set -euo pipefail
bin=$(cd "$1" && pwd)/gpusweep
runs=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
sweep="$here/../experiments/quickstart.json"
source "$here/lib.sh"
echo "run  wall  half-widths (%)          median  knobs' widest / configs' widest"
for i in $(seq 1 "$runs"); do
  db="$work/q$i.db"
  t0=$(date +%s.%N)
  "$bin" run "$sweep" --db "$db" --set measure.order_seed="$i" > /dev/null
  t1=$(date +%s.%N)
  "$bin" compare quickstart --db "$db" --format json > "$work/c.json"
  "$bin" compare quickstart --db "$db" --knobs --format json > "$work/k.json"
  python3 - "$work/c.json" "$work/k.json" "$i" "$(echo "$t1 - $t0" | bc)" <<'PY'
import json, statistics, sys
rows = [r for r in json.load(open(sys.argv[1])) if not r["baseline"] and r["ratio"]]
knobs = [k for k in json.load(open(sys.argv[2])) if k["ratio"]]
half = lambda r: 50 * (r["ci_high"] - r["ci_low"]) / r["ratio"]
hw = [half(r) for r in rows]
widest = max(hw)
kw = max(half(k) for k in knobs)
print("%3s %5.0fs  %-24s %5.2f%%  %.2f%% / %.2f%% = %.2f %s" % (
    sys.argv[3], float(sys.argv[4]), ", ".join("%.2f" % h for h in hw),
    statistics.median(hw), kw, widest, kw / widest, "ok" if kw <= 2 * widest else "WIDER"))
PY
done
