#!/usr/bin/env bash
# A noisy neighbour for the benchmarks: LOOPS busy loops (default 2) switched
# on and off at random intervals of MIN to MAX seconds (default 0.1 to 0.9,
# in tenths; seeded by SEED), until killed (kill its process group). What a
# shared machine does to a benchmark, reproducibly: fast switching is a
# neighbour's bursts, slow switching (2 to 6 s) the drift from one minute to
# the next.
# Usage: bench/neighbour.sh [SEED] [LOOPS] [MIN_S] [MAX_S] &
RANDOM=${1:-1}
loops=${2:-2}
lo=$(awk -v v="${3:-0.1}" 'BEGIN { print int(v * 10) }')
hi=$(awk -v v="${4:-0.9}" 'BEGIN { print int(v * 10) }')
tenths() { awk -v t=$((lo + RANDOM % (hi - lo + 1))) 'BEGIN { printf "%.1f", t / 10 }'; }
while :; do
  sleep "$(tenths)"
  on=$(tenths)
  for _ in $(seq 1 "$loops"); do timeout "$on" sh -c 'while :; do :; done' & done
  wait
done
