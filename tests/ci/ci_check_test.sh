#!/usr/bin/env bash
# scripts/ci-check.sh, the script docs/ci.md's CI jobs run, as such a job runs
# it, on builds of the spin_build fixture: a build 5% slower a step fails the
# job (exit 1) with a Markdown table saying so; an identical build passes and
# lands in $GITHUB_STEP_SUMMARY; a missing --head or gpusweep is a usage
# error; and every call of the script in docs/ci.md's YAML names only options
# the script (before --) and gpusweep check (after --) accept.
# Usage: ci_check_test.sh GPUSWEEP_BIN BASE_DIR SAME_DIR SLOW5_DIR SOURCE_DIR
set -euo pipefail
bin=$1 base=$2 same=$3 slow5=$4 src=$5
script=$src/scripts/ci-check.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
# The suite may itself run in a GitHub job: only the case below writes a summary.
unset GITHUB_STEP_SUMMARY
export GPUSWEEP=$bin

# Steps of 10 and 20 ms: shorter ones, on a loaded 2-core machine, lose most
# of the 5% to the scheduler, whose waits the spin cannot shorten. The test
# runs alone (RUN_SERIAL), at check's default tolerance.
cat > "$work/s.json" << 'JSON'
{"name": "ci_spin", "workload": "spin_build", "grid": {"spin_us": [10000, 20000]},
 "measure": {"block_s": 0.1, "blocks": 5, "repeats": 3}}
JSON

# run NAME HEAD CHECK_OPTION...: the script into $work/NAME, its status in rc.
run() {
  rc=0
  "$script" --sweep "$work/s.json" --base "$base" --head "$2" --out "$work/$1" -- "${@:3}" \
    > "$work/$1.log" 2>&1 || rc=$?
  cat "$work/$1.log"
}

# check.xml and check.json come from the same run as check.md, whatever it
# decided.
same_run() { # same_run DIR EXIT
  grep -q "<testsuites name=\"gpusweep check ci_spin\"" "$1/check.xml" &&
    grep -q "\"exit\": $2" "$1/check.json" &&
    grep -q "\"run\": 1," "$1/check.json"
}

run slow "$slow5" --budget-s 60
check "base vs slow5 exits 1 (got $rc)" [ "$rc" -eq 1 ]
check "check.md's heading says regression" \
  grep -q "^### gpusweep check 'ci_spin' (run 1): regression$" "$work/slow/check.md"
check "check.md has the verdicts' table" \
  grep -q '^| config | base steps/s | head steps/s |' "$work/slow/check.md"
check "check.md has a row called regression" grep -q '^| spin_us=.* | regression |' "$work/slow/check.md"
check "check.xml and check.json are the same run's" same_run "$work/slow" 1

summary=$work/summary.md
echo "an earlier step's summary" > "$summary"
GITHUB_STEP_SUMMARY=$summary run same "$same" --budget-s 60
check "base vs same exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "check.md's heading says no regression" \
  grep -q "^### gpusweep check 'ci_spin' (run 1): no regression$" "$work/same/check.md"
check "\$GITHUB_STEP_SUMMARY kept what it had and got check.md appended" \
  diff <(echo "an earlier step's summary"; cat "$work/same/check.md"; echo) "$summary"
check "check.xml and check.json are the same run's" same_run "$work/same" 0

rc=0
"$script" --sweep "$work/s.json" --base "$base" --out "$work/nohead" > "$work/nohead.log" 2>&1 || rc=$?
check "a missing --head exits 2 (got $rc)" [ "$rc" -eq 2 ]
check "and says --head is required" grep -q -- "--head is required" "$work/nohead.log"
check "and runs nothing" [ ! -e "$work/nohead" ]
rc=0
GPUSWEEP=$work/nowhere "$script" --sweep "$work/s.json" --base "$base" --head "$same" \
  --out "$work/nobin" > "$work/nobin.log" 2>&1 || rc=$?
check "a GPUSWEEP that is no file exits 2 (got $rc)" [ "$rc" -eq 2 ]
check "and names it" grep -q "GPUSWEEP=$work/nowhere is not an executable file" "$work/nobin.log"

# The docs cannot drift from the script: each call in a YAML block of
# docs/ci.md, options before ` -- ` the script's usage line's, after it check's.
script_options=$("$script" --help | sed '/^$/q' | grep -oE -- '--[a-z][a-z-]*' | sort -u)
check_options=$("$bin" check --help | grep -oE '^  --[a-z][a-z-]*' | tr -d ' ' | sort -u)
calls=$(awk '/^```yaml/ {y = 1; next} /^```/ {y = 0} y && /scripts\/ci-check\.sh/' "$src/docs/ci.md")
check "docs/ci.md's GitHub and GitLab jobs call scripts/ci-check.sh" \
  [ "$(grep -c . <<< "$calls")" -ge 2 ]
while IFS= read -r call; do
  [ -n "$call" ] || continue
  args=${call#*scripts/ci-check.sh}
  own=${args%% -- *}
  passed=''
  [ "$own" = "$args" ] || passed=${args#* -- }
  for o in --sweep --base --head; do
    check "the call names $o: $call" grep -qE -- "(^| )$o( |=|$)" <<< "$own"
  done
  for o in $(grep -oE -- '(^| )--[a-z][a-z-]*' <<< "$own"); do
    check "the script takes $o" grep -qx -- "$o" <<< "$script_options"
  done
  for o in $(grep -oE -- '(^| )--[a-z][a-z-]*' <<< "$passed"); do
    check "gpusweep check takes $o" grep -qx -- "$o" <<< "$check_options"
  done
done <<< "$calls"

exit $fail
