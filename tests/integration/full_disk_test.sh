#!/usr/bin/env bash
# The results database on a full disk (a 2 MiB tmpfs): a run that cannot
# even create the database says so, exits 2 and leaves no file behind; a run
# that fills the disk mid-sweep stops with the same advice, keeps every trial
# it had finished whole (integrity_check ok, each ok trial with all its
# blocks), and `--resume` after freeing space finishes exactly the sweep.
# Needs root (or an unprivileged user namespace) to mount the tmpfs.
# Usage: full_disk_test.sh GPUSWEEP_BIN FIXTURE_PLUGIN_DIR
set -euo pipefail
bin=$1 plugins=$2

if [ "$(id -u)" -ne 0 ]; then
  if [ -z "${GPUSWEEP_IN_USERNS:-}" ] && unshare -rm true 2>/dev/null; then
    GPUSWEEP_IN_USERNS=1 exec unshare -rm "$0" "$@"
  fi
  echo "SKIPPED: mounting a small tmpfs needs root or user namespaces; the full-disk case was not run"
  exit 77
fi
command -v sqlite3 > /dev/null || { echo "SKIPPED: sqlite3 is not installed"; exit 77; }

work=$(mktemp -d)
disk=$work/disk
mkdir "$disk"
if ! mount -t tmpfs -o size=2m tmpfs "$disk" 2> "$work/mount.log"; then
  echo "SKIPPED: cannot mount a tmpfs here: $(cat "$work/mount.log")"
  rm -rf "$work"
  exit 77
fi
trap 'umount "$disk"; rm -rf "$work"' EXIT

fail=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}
export GPUSWEEP_PLUGIN_PATH=$plugins
sql() { sqlite3 "$disk/r.db" "$1"; }

# 20 noop trials of 300 one-step blocks: more than 320 KiB hold.
sizes=$(seq -s, 1 20)
cat > "$work/s.json" <<JSON
{"name": "fills_the_disk", "workload": "noop", "base": {"spin_us": 0},
 "grid": {"batch_size": [$sizes]},
 "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 300}}
JSON

# 1. No room at all: one clear error, exit 2, no database file left.
dd if=/dev/zero of="$disk/filler" bs=4k 2> /dev/null || true
set +e
"$bin" run "$work/s.json" --db "$disk/r.db" > "$work/out1.txt" 2>&1
code=$?
set -e
cat "$work/out1.txt"
check "no room: exit code 2 (was $code)" test "$code" -eq 2
check "no room: says the disk is full" grep -q "disk holding the results database is full" "$work/out1.txt"
check "no room: no database file left behind" test ! -e "$disk/r.db" -a ! -e "$disk/r.db-wal"
rm -f "$disk/filler"

# 2. Room for part of the sweep: leave 320 KiB free (the disk holds 2 MiB).
dd if=/dev/zero of="$disk/filler" bs=64k count=27 2> /dev/null
set +e
"$bin" run "$work/s.json" --db "$disk/r.db" > "$work/out2.txt" 2>&1
code=$?
set -e
tail -n 3 "$work/out2.txt"
check "disk fills mid-sweep: exit code 2 (was $code)" test "$code" -eq 2
check "disk fills mid-sweep: says the disk is full and how to go on" \
  grep -q "free some space, then run the same command with --resume" "$work/out2.txt"
rm -f "$disk/filler"
check "after the full disk: integrity_check ok" test "$(sql 'PRAGMA integrity_check')" = ok
ok_before=$(sql "SELECT count(*) FROM trials WHERE status = 'ok'")
echo "finished before the disk filled: $ok_before of 20"
check "some trials finished before the disk filled, not all" test "$ok_before" -gt 0 -a "$ok_before" -lt 20
check "every ok trial has all its 300 blocks" test "$(sql "SELECT count(*) FROM trials t WHERE
  status = 'ok' AND (SELECT count(*) FROM blocks b WHERE b.trial_id = t.id) <> 300")" = 0
check "no blocks kept for trials that did not finish" test "$(sql "SELECT count(*) FROM blocks b
  JOIN trials t ON t.id = b.trial_id WHERE t.status <> 'ok'")" = 0
sql "SELECT id, status FROM trials WHERE status = 'ok' ORDER BY id" > "$work/ok_before.txt"

# 3. Space freed: --resume finishes exactly the sweep, earlier trials untouched.
"$bin" run "$work/s.json" --db "$disk/r.db" --resume > "$work/out3.txt" 2>&1 || {
  cat "$work/out3.txt"; echo "FAIL: --resume after freeing space"; exit 1; }
check "resumed: 20 trials, all ok, one run" test \
  "$(sql "SELECT count(*), sum(status = 'ok'), count(DISTINCT sweep_id) FROM trials")" = "20|20|1"
check "resumed: the trials finished before are the same rows" \
  test -z "$(sql "SELECT id, status FROM trials WHERE status = 'ok' ORDER BY id" | comm -13 - "$work/ok_before.txt")"
check "resumed: integrity_check ok" test "$(sql 'PRAGMA integrity_check')" = ok
exit $fail
