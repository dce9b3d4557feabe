#!/usr/bin/env bash
# A noisy neighbour for the benchmarks: two busy loops switched on and off
# at random intervals of 0.1 to 0.9 s (seeded by $1), until killed (kill its
# process group). What a shared machine does to a benchmark, reproducibly.
# Usage: bench/neighbour.sh [SEED] &
RANDOM=${1:-1}
while :; do
  sleep "0.$((RANDOM % 9 + 1))"
  on="0.$((RANDOM % 9 + 1))"
  timeout "$on" sh -c 'while :; do :; done' &
  timeout "$on" sh -c 'while :; do :; done' &
  wait
done
