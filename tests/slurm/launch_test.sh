#!/usr/bin/env bash
# `gpusweep launch --slurm --wait` on a real single-node Slurm cluster
# (local_cluster.sh): a 6-trial noop sweep becomes a 6-task job array, each
# task writes its own shard database, and --wait merges them into one run of
# 6 `ok` trials carrying their Slurm job and task ids. The run folder's name
# has a space, a quote, a '%' and a '#', which every #SBATCH line and the
# task's command must carry, quoted; a run folder with a newline is
# refused before anything is written. The cluster is stopped
# on every way out. Exits 77 (CTest: skipped) only where Slurm cannot start.
# Usage: launch_test.sh GPUSWEEP_BIN PLUGIN_DIR
set -euo pipefail
bin=$1
plugins=$2
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s%N)

command -v sqlite3 > /dev/null || { echo "SKIPPED: sqlite3 is not installed"; exit 77; }
work=""
cleanup() {
  "$here/local_cluster.sh" stop || true
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

set +e
start_out=$("$here/local_cluster.sh" start 2>&1)
rc=$?
set -e
echo "$start_out"
if [ $rc -eq 77 ]; then
  echo "SKIPPED: the Slurm launch test needs a local Slurm cluster (see above)"
  exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: local_cluster.sh start exited $rc"; exit 1; }
eval "$("$here/local_cluster.sh" env)"

# Under /var/spool like the cluster's state: nodes run nothing from a noexec /tmp.
work=$(mktemp -d /var/spool/gpusweep-slurm-test.XXXXXX)
cd "$work"
cat > s.json << 'EOF'
{"name": "on_slurm", "workload": "noop", "grid": {"batch_size": [1, 2, 3, 4, 5, 6]},
 "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 1, "steps_per_block": 20, "blocks": 5}}
EOF

fail() {
  echo "FAIL: $*"
  echo "--- launch output:"
  cat launch.log || true
  for f in "$rundir"/logs/*.log; do [ -f "$f" ] && { echo "--- $f:"; cat "$f"; }; done
  exit 1
}
q() { sqlite3 main.db "$1"; }

# A newline in the run folder would end the script's #SBATCH block: refused,
# with no database, folder or job left behind.
set +e
GPUSWEEP_PLUGIN_PATH=$plugins "$bin" launch s.json --slurm --db nl.db --run-dir $'two\nlines' \
  > newline.log 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || { cat newline.log; fail "a run folder with a newline: exit $rc, expected 2"; }
grep -q "has a control character" newline.log || { cat newline.log; fail "no reason given"; }
[ ! -e nl.db ] && [ ! -e $'two\nlines' ] || fail "the refused launch wrote something"

rundir='run it'"'"'s "50%" #2'
set +e
GPUSWEEP_PLUGIN_PATH=$plugins "$bin" launch s.json --slurm --wait --db main.db --run-dir "$rundir" \
  --array-parallelism 4 --cpus-per-task 1 --time 5 > launch.log 2>&1
rc=$?
set -e
cat launch.log
[ $rc -eq 0 ] || fail "launch --slurm --wait exited $rc"

job=$(q "SELECT job_id FROM launches")
[ -n "$job" ] || fail "no job id recorded in launches"
[ "$(q "SELECT count(*) FROM sweeps")" = 1 ] || fail "expected one run in the main database"
[ "$(q "SELECT status FROM sweeps")" = finished ] || fail "the merged run is not finished"
[ "$(q "SELECT count(*) FROM trials WHERE status = 'ok'")" = 6 ] || fail "expected 6 ok trials"
[ "$(q "SELECT count(*) FROM trials WHERE slurm_job_id = $job")" = 6 ] ||
  fail "not every trial carries job id $job"
[ "$(q "SELECT group_concat(slurm_task_id) FROM (SELECT slurm_task_id FROM trials ORDER BY 1)")" = "1,2,3,4,5,6" ] ||
  fail "the trials do not carry task ids 1..6"
[ "$(q "SELECT count(*) FROM trials WHERE environment_id IS NULL")" = 0 ] ||
  fail "a trial lost its environment"
[ "$(q "SELECT count(*) FROM blocks")" = 30 ] || fail "expected 30 blocks"
[ "$(q "SELECT count(*) FROM merged_shards")" = 6 ] || fail "expected 6 merged shards"
[ "$(ls "$rundir"/shards/*.db | wc -l)" = 6 ] || fail "expected 6 shard databases"
grep -q "task 3 of job $job" "$rundir"/logs/task-3.log || fail "task 3's log does not name it"
grep -q "6/6 tasks completed; 6/6 trials merged" launch.log || fail "no final summary"

# Merging the run folder again (into the database launch.json names) changes nothing.
before=$(sqlite3 main.db .dump | md5sum)
(cd "$rundir" && "$bin" merge . > ../merge.log 2>&1) || fail "merge failed: $(cat merge.log)"
grep -q "0 trials imported, 6 already there" merge.log || fail "re-merge imported something: $(cat merge.log)"
[ "$(sqlite3 main.db .dump | md5sum)" = "$before" ] || fail "merging again changed the database"

echo "PASS: 6 trials as Slurm job $job (6 array tasks), merged, in $((($(date +%s%N) - t0) / 1000000)) ms"
