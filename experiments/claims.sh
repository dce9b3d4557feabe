#!/usr/bin/env bash
# The guides' claims, measured on this machine: runs the five claims sweeps
# (experiments/claims_*.json, one per guide of docs/guides.md) into one
# database, prints each sweep's claims table (`gpusweep compare --claims`)
# and writes them into experiments/README.md between the markers
# "<!-- claims:begin -->" and "<!-- claims:end -->", with the date and the
# machine.
#
# Usage: experiments/claims.sh [--db FILE] [--build DIR] [--no-readme] [--no-run] [GUIDE ...]
#   GUIDE      dqn restoration timeseries marl transformer (default: all)
#   --db FILE  results database (default: experiments/claims.db, recreated)
#   --build    gpusweep build folder (default: the repo's build/)
#   --no-readme  print the tables only
#   --no-run   rebuild the tables from the database of an earlier run
# Takes about 5 minutes on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build="$repo/build"
db="$here/claims.db"
readme=1
run=1
guides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --db) db="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --no-readme) readme=0; shift ;;
    --no-run) run=0; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    dqn|restoration|timeseries|marl|transformer) guides+=("$1"); shift ;;
    *) echo "claims.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#guides[@]} -gt 0 ] || guides=(dqn restoration timeseries marl transformer)
gpusweep="$build/gpusweep"
[ -x "$gpusweep" ] || { echo "claims.sh: no $gpusweep; build first (scripts/build.sh)" >&2; exit 2; }

if [ "$run" = 1 ]; then
  rm -f "$db" "$db-wal" "$db-shm"
elif [ ! -f "$db" ]; then
  echo "claims.sh: --no-run needs the database of an earlier run, $db" >&2; exit 2
fi
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT
for g in "${guides[@]}"; do
  sweep="$here/claims_$g.json"
  if [ "$run" = 1 ]; then
    echo "== $g: gpusweep run experiments/claims_$g.json" >&2
    # A refuted claim is a finding, not a failure: only a broken run stops us.
    "$gpusweep" run "$sweep" --db "$db" >&2
  fi
  name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$sweep")
  "$gpusweep" compare --db "$db" --sweep "$name" --claims
  {
    echo
    echo "#### $g (\`experiments/claims_$g.json\`)"
    echo
    "$gpusweep" compare --db "$db" --sweep "$name" --claims --format md
  } >> "$tables"
done

if [ "$readme" = 1 ]; then
  # The machine line is doctor's findings, never a hard-coded "no GPU".
  # doctor exits 1 when it finds a problem; its findings still describe the machine.
  doctor_json=$("$gpusweep" doctor --format json --matmul-seconds 0 2>/dev/null || true)
  machine=$(printf '%s' "$doctor_json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
m, lt, cu = d["machine"], d["libtorch"], d["cuda"]
torch = lt.get("version", "unknown")
if lt.get("cuda_build"):
    torch += " (CUDA %s build)" % lt.get("cuda", "?")
elif lt.get("probed"):
    torch += " (CPU-only build)"
devices = cu.get("devices") or []
if devices:
    gpus = ", ".join("cuda:%d %s" % (g.get("index", 0), g.get("name", "?")) for g in devices)
    gpus += ", driver for CUDA %s" % (cu.get("driver") or "?")
elif cu.get("driver"):
    gpus = "driver for CUDA %s but no GPU visible" % cu["driver"]
else:
    gpus = "no NVIDIA driver, no GPU"
print("%d cores (%s), LibTorch %s, %s" % (m.get("logical_cores", 0), m.get("cpu", "?"), torch, gpus))
' || echo "unknown machine (gpusweep doctor failed)")
  {
    echo "<!-- claims:begin -->"
    when=$("$gpusweep" sql --db "$db" --format csv "SELECT max(created_at) FROM sweeps" | tail -n 1)
    echo "Last run: ${when:-unknown} on $machine."
    echo "Command: \`experiments/claims.sh\` (database \`$(basename "$db")\`)."
    cat "$tables"
    echo "<!-- claims:end -->"
  } > "$tables.block"
  python3 - "$here/README.md" "$tables.block" <<'PY'
import sys, re
path, block = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
text = open(path).read()
pat = re.compile(r"<!-- claims:begin -->.*?<!-- claims:end -->", re.S)
if not pat.search(text):
    sys.exit(f"claims.sh: {path} has no <!-- claims:begin --> ... <!-- claims:end --> markers")
open(path, "w").write(pat.sub(lambda m: block, text))
PY
  rm -f "$tables.block"
  echo "claims tables written into experiments/README.md" >&2
fi
