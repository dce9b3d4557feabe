#!/usr/bin/env bash
# On a GPU: tune-batch --max-memory caps the CUDA caching allocator, so the
# search finds a boundary: the largest fit is capped below what
# the device could hold, the first failure is `oom` (CUDA's out-of-memory),
# and the fits' peak memory is under the cap. Under an address-space limit
# every CUDA probe would fail at the context. What the cap limits is the
# allocator's reserved bytes: every fit reports its reserved peak
# (peak_reserved_bytes), at or above its allocated peak and under
# the cap.
# Usage: memory_cap_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
. "$(dirname "$0")/lib.sh"
need_gpus 1
"$bin" tune-batch restoration --set device=cuda --max-memory 1GiB --max 4096 --margin 0 \
  --db "$work/r.db" --format json > "$work/out.json" 2> "$work/log" || { cat "$work/log" "$work/out.json"; exit 1; }
python3 - "$work/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
fits = [p for p in r["probes"] if p["status"] == "ok"]
print("largest fit", r["largest_fit"], "first failure", r["first_failure"])
for p in r["probes"]:
    print(" ", p["batch_size"], p["status"], p.get("peak_memory_bytes"), p.get("error", "")[:100])
assert r["largest_fit"], "nothing fit under a 1 GiB cap"
assert r["first_failure"], "no batch ran out of memory under a 1 GiB cap"
failed = [p for p in r["probes"] if p["batch_size"] == r["first_failure"]]
assert failed and failed[0]["status"] == "oom", "the first failure is not oom"
assert all((p.get("peak_memory_bytes") or 0) <= 2**30 for p in fits), "a fit peaked above the cap"
PY
cap=$(sql "$work/r.db" "SELECT count(*) FROM metrics WHERE name = 'memory_cap_device_bytes'")
[ "$cap" -gt 0 ] || { echo "FAIL: no probe ran under the device cap"; exit 1; }
fits=$(sql "$work/r.db" "SELECT count(*) FROM trials WHERE status = 'ok'")
reserved=$(sql "$work/r.db" "SELECT count(*) FROM metrics r JOIN trials t ON t.id = r.trial_id
  JOIN metrics a ON a.trial_id = r.trial_id AND a.kind = 'stat' AND a.name = 'peak_memory_bytes'
  WHERE t.status = 'ok' AND r.kind = 'stat' AND r.name = 'peak_reserved_bytes'
  AND r.value >= a.value AND r.value <= 1073741824")
echo "fits with a reserved peak at or above the allocated one and under the cap: $reserved of $fits"
[ "$reserved" = "$fits" ] || { echo "FAIL: a fit reports no reserved peak, or one outside [allocated, cap]"; exit 1; }
echo "PASS"
