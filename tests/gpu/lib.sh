# Shared by the GPU tests (label gpu): source it after setting bin (the
# gpusweep binary). need_gpus N exits 77 (skipped) with the reason when
# LibTorch's CUDA sees fewer than N devices; sql DB QUERY prints the last
# row's first column; stat SWEEP NAME a metric's latest value in $work/r.db;
# work is a scratch folder removed on exit. Under CTest the devices are
# counted once a run (probe.sh, the gpu tests' fixture) into the file
# GPUSWEEP_GPU_PROBE names: asking doctor takes seconds a test.
visible_cuda_devices() {  # prints "COUNT VERDICT"
  if [ -n "${GPUSWEEP_GPU_PROBE:-}" ] && [ -s "$GPUSWEEP_GPU_PROBE" ]; then
    cat "$GPUSWEEP_GPU_PROBE"
    return
  fi
  "$bin" doctor --format json --matmul-seconds 0 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["cuda"]["devices"]), d["cuda"].get("verdict",""))' ||
    echo "0 doctor failed"
}
need_gpus() {
  local found
  found=$(visible_cuda_devices)
  if [ "${found%% *}" -lt "$1" ]; then
    echo "SKIPPED: needs $1 CUDA device(s) visible to LibTorch; ${found%% *} here (${found#* })"
    exit 77
  fi
}
sql() { "$bin" sql --db "$1" --format csv "$2" | tail -n 1; }
# stat SWEEP NAME: the latest value of metric NAME in sweep SWEEP of $work/r.db.
stat() {
  sql "$work/r.db" "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id
    JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = '$1' AND m.name = '$2' ORDER BY m.at_step DESC LIMIT 1"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
