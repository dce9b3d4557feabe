#!/usr/bin/env bash
# A CI job's performance gate (docs/ci.md): one `gpusweep check` of base
# against head, its Markdown for the pull request and the job summary, and
# check's exit status as the script's, so that the job fails as check does.
set -uo pipefail

me=ci-check.sh

usage() {
  cat <<'EOF'
usage: scripts/ci-check.sh --sweep SWEEP.json --base PATH --head PATH [--out DIR] [--db FILE]
                           [-- CHECK_OPTION ...]

Runs `gpusweep check SWEEP.json --base PATH --head PATH` once, as the CI jobs
of docs/ci.md do, and writes into DIR (default gpusweep-check), all from the
one measured run:
  check.md    the verdicts in Markdown: the pull-request comment; appended to
              the file $GITHUB_STEP_SUMMARY names when that variable is set
  check.xml   JUnit (a test case per config)
  check.json  every figure
  check.db    the results database, unless --db FILE names another

PATH is a plugin folder holding gpusweep_<workload>.so, the .so itself, or a
Python workload's module (.py). Options after `--` go to gpusweep check as
they are: --tolerance 2%, --budget-s 600, --inconclusive pass,
--base-label L, --head-label L, --set key=value, ... (--format, --output and
--db are this script's own).

gpusweep: $GPUSWEEP, else build/gpusweep beside this script's folder, else
gpusweep on PATH.

Exit status: gpusweep check's: 0 no regression, 1 a regression, 2 usage error
(nothing ran; this script's own included), 3 inconclusive (0 with
--inconclusive pass), 130 interrupted.
EOF
}

fail_usage() {
  echo "$me: $1" >&2
  echo "$me: see $me --help" >&2
  exit 2
}

sweep='' base='' head='' out=gpusweep-check db=''
extra=()
while [ $# -gt 0 ]; do
  opt=$1
  case $opt in
    -h | --help)
      usage
      exit 0
      ;;
    --)
      shift
      extra=("$@")
      break
      ;;
    --sweep=* | --base=* | --head=* | --out=* | --db=*)
      set -- "${opt%%=*}" "${opt#*=}" "${@:2}"
      continue
      ;;
    --sweep | --base | --head | --out | --db)
      [ $# -ge 2 ] || fail_usage "$opt needs a value"
      case $opt in
        --sweep) sweep=$2 ;;
        --base) base=$2 ;;
        --head) head=$2 ;;
        --out) out=$2 ;;
        --db) db=$2 ;;
      esac
      shift 2
      ;;
    *) fail_usage "unknown option '$opt' (gpusweep check's own options go after --)" ;;
  esac
done

[ -n "$sweep" ] || fail_usage "--sweep is required: the sweep file the check runs"
[ -n "$base" ] || fail_usage "--base is required: the build to compare against (a plugin folder, .so or .py)"
[ -n "$head" ] || fail_usage "--head is required: the build under test (a plugin folder, .so or .py)"
[ -n "$out" ] || fail_usage "--out needs a folder"
for arg in ${extra[@]+"${extra[@]}"}; do
  case $arg in
    --format | --format=* | --output | --output=* | --db | --db=*)
      fail_usage "${arg%%=*} after --: the script sets it (check.md, check.xml and check.json in --out; --db FILE before --)"
      ;;
  esac
done

if [ -n "${GPUSWEEP:-}" ]; then
  gpusweep=$GPUSWEEP
  if [ ! -f "$gpusweep" ] || [ ! -x "$gpusweep" ]; then
    fail_usage "GPUSWEEP=$GPUSWEEP is not an executable file"
  fi
elif [ -x "$(dirname "$0")/../build/gpusweep" ]; then
  gpusweep=$(dirname "$0")/../build/gpusweep
elif command -v gpusweep > /dev/null; then
  gpusweep=$(command -v gpusweep)
else
  fail_usage "no gpusweep: set GPUSWEEP=/path/to/gpusweep, build this checkout (build/gpusweep), or put gpusweep on PATH"
fi

mkdir -p "$out" || fail_usage "--out $out: cannot create the folder"
[ -n "$db" ] || db=$out/check.db
md=$out/check.md
# A file left by an earlier run must not pass for this run's.
rm -f "$md" "$out/check.xml" "$out/check.json"

args=("$sweep" --base "$base" --head "$head" --db "$db" ${extra[@]+"${extra[@]}"}
  --output "$md" --output "$out/check.xml" --output "$out/check.json")
printf '%s:' "$me" >&2
printf ' %q' "$gpusweep" check "${args[@]}" >&2
echo >&2
"$gpusweep" check "${args[@]}"
status=$?

if [ -f "$md" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  { cat "$md"; echo; } >> "$GITHUB_STEP_SUMMARY" ||
    echo "$me: warning: cannot append to GITHUB_STEP_SUMMARY=$GITHUB_STEP_SUMMARY" >&2
fi

written=''
for f in "$md" "$out/check.xml" "$out/check.json"; do
  [ -f "$f" ] && written="$written $f"
done
echo "$me: wrote${written:- nothing}; exit $status" >&2
exit "$status"
