#!/usr/bin/env bash
# Builds gpusweep and runs the whole test suite (unit, integration, fault
# and LibTorch workload tests) with CTest, then the host's unit tests again
# under AddressSanitizer and UndefinedBehaviorSanitizer (scripts/sanitize.sh),
# torchkit's input pipeline threads under ThreadSanitizer (scripts/tsan.sh),
# and fuzzes the sweep parser and validator for 30 s (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --test
./scripts/build.sh
(cd build && ctest --output-on-failure --parallel "$(nproc)" "$@")
./scripts/sanitize.sh
./scripts/tsan.sh
./scripts/fuzz.sh 30
