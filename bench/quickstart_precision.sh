#!/usr/bin/env bash
# The quickstart sweep before and after interleaving and rounds until
# precise, side by side in one run: each build runs its own quickstart (the
# old one its old sweep file), alternately, RUNS times (default 3), and each
# result is judged with that build's own compare. Prints the wall time and
# the median half-width of the three ratios' 95% intervals of every run,
# then the medians and the ratio of wall times. With --load a neighbour
# shares the machine in bursts (bench/neighbour.sh: two busy loops switched
# every 0.1 to 0.9 s); with --drift one busy loop switched every 2 to 6 s.
# Build the old version in a worktree, for example:
#   git worktree add /tmp/old ac7df04 && cmake -S /tmp/old -B /tmp/old/build -G Ninja \
#     -DTorch_DIR=$PWD/.venv/lib/python3.11/site-packages/torch/share/cmake/Torch \
#     -DGPUSWEEP_PLUGINS=dqn && ninja -C /tmp/old/build gpusweep gpusweep-worker \
#     gpusweep_plugin_dqn
# Usage: bench/quickstart_precision.sh NEW_BUILD OLD_BUILD OLD_QUICKSTART_JSON [RUNS] [--load|--drift]
set -euo pipefail
new=$(cd "$1" && pwd)/gpusweep
old=$(cd "$2" && pwd)/gpusweep
old_sweep=$(realpath "$3")
runs=${4:-3}
load=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
new_sweep="$here/../experiments/quickstart.json"
source "$here/lib.sh"
[ "$load" = "--load" ] && start_neighbour 2
[ "$load" = "--drift" ] && start_neighbour 2 1 2 6
# One run: wall seconds and the median half-width (%) of the ratios.
one() {  # BIN SWEEP DB
  local t0 t1
  t0=$(date +%s.%N)
  "$1" run "$2" --db "$3" > /dev/null
  t1=$(date +%s.%N)
  "$1" compare quickstart --db "$3" --format json | python3 -c '
import json, statistics, sys
rows = [r for r in json.load(sys.stdin) if not r["baseline"] and r["ratio"]]
hw = [50 * (r["ci_high"] - r["ci_low"]) / r["ratio"] for r in rows]
print("%.1f %.2f" % ('"$t1 - $t0"', statistics.median(hw)))'
}
: > "$work/new" && : > "$work/old"
for i in $(seq 1 "$runs"); do
  for which in $([ $((i % 2)) -eq 1 ] && echo "new old" || echo "old new"); do
    if [ "$which" = new ]; then r=$(one "$new" "$new_sweep" "$work/new$i.db"); else
      r=$(one "$old" "$old_sweep" "$work/old$i.db"); fi
    echo "$r" >> "$work/$which"
    printf 'run %d %-3s: %s s, median half-width %s%%\n' "$i" "$which" ${r% *} ${r#* }
  done
done
summary() {
  python3 - "$work/old" "$work/new" <<'PY'
import statistics, sys
old = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
new = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
med = lambda xs: statistics.median(xs)
print("before: median %.1f s, median half-width %.2f%%" % (med([o[0] for o in old]), med([o[1] for o in old])))
print("after:  median %.1f s, median half-width %.2f%%" % (med([n[0] for n in new]), med([n[1] for n in new])))
print("wall time after/before: %.2f" % (med([n[0] for n in new]) / med([o[0] for o in old])))
PY
}
summary
