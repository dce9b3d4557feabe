#!/usr/bin/env bash
# The guides' claims, measured on this machine: runs the five claims sweeps
# (experiments/claims_*.json, one per guide in ../shared/seeds/) into one
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
  cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
  torch=$("$gpusweep" doctor --matmul-seconds 0.5 2>/dev/null | sed -n 's/^ *version *//p' | head -1)
  {
    echo "<!-- claims:begin -->"
    when=$("$gpusweep" sql --db "$db" --format csv "SELECT max(created_at) FROM sweeps" | tail -n 1)
    echo "Last run: ${when:-unknown} on $(nproc) cores ($cpu), LibTorch ${torch:-unknown}, no GPU."
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
