#!/usr/bin/env bash
# Renders the HTML report of a real small sweep in headless Chromium: checks
# the browser logs no console errors, counts each chart's marks in the DOM
# Chromium built, and saves a screenshot (build/report-screenshot.png).
# Usage: chromium_test.sh GPUSWEEP_BIN FIXTURE_PLUGIN_DIR OUT_DIR
set -euo pipefail
bin=$1 plugins=$2 out=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium is not installed (apt-get install chromium); the report was not rendered"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/sweep.json" <<'JSON'
{"name": "report_browser", "workload": "faults",
 "grid": {"mode": ["ok", "slow_step", "skip", "throw_step"]},
 "measure": {"min_block_s": 0, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "repeats": 2},
 "baseline": {"mode": "ok"}}
JSON
GPUSWEEP_PLUGIN_PATH=$plugins "$bin" run "$work/sweep.json" --db "$work/r.db" --jobs 2 > /dev/null
"$bin" report --db "$work/r.db" --html "$work/report.html" > /dev/null

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$work/profile" --enable-logging=stderr --v=0)
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$work/report.html" > "$work/dom.html" 2> "$work/dom.log"
timeout 120 "$browser" "${flags[@]}" --window-size=1200,2600 \
  --screenshot="$out/report-screenshot.png" "file://$work/report.html" > /dev/null 2> "$work/shot.log"

fail=0
if grep -h "CONSOLE" "$work/dom.log" "$work/shot.log"; then
  echo "FAIL: the page logged console messages"
  fail=1
fi
# Count marks per chart in the DOM Chromium built.
count() {
  python3 - "$work/dom.html" "$1" <<'PY'
import re, sys
html = open(sys.argv[1]).read()
m = re.search(r'<svg[^>]*data-chart="%s".*?</svg>' % sys.argv[2], html, re.S)
print(-1 if not m else len(re.findall(r'class="mark', m.group(0))))
PY
}
# Two configs finished ok (ok, slow_step) with 2 repeats x 5 blocks each;
# skip and throw_step produce no samples; the fixture reports no memory.
for expect in throughput:2 speedup:2 blocks:20 memory:0 quality:2; do
  chart=${expect%%:*} want=${expect##*:}
  got=$(count "$chart")
  if [ "$got" != "$want" ]; then
    echo "FAIL: chart $chart has $got marks, expected $want"
    fail=1
  else
    echo "ok: chart $chart has $got marks"
  fi
done
grep -q "fixture: not applicable here" "$work/dom.html" || { echo "FAIL: skipped trial reason missing"; fail=1; }
[ -s "$out/report-screenshot.png" ] || { echo "FAIL: no screenshot"; fail=1; }
echo "screenshot: $out/report-screenshot.png"
exit $fail
