#!/usr/bin/env bash
# torchkit's threads under ThreadSanitizer: the input pipeline's loader
# threads, its queues, pause/resume and shutdown (the tests tagged
# [pipeline] in tests/sdk/torchkit_test.cpp), built in build-tsan/ against
# the same LibTorch as build/. LibTorch itself is not instrumented: its
# intra-op threads are held to one (OMP_NUM_THREADS=1) so that only
# torchkit's own threads run concurrently. Any report fails.
# Usage: scripts/tsan.sh [Catch2 test spec]   (default: [pipeline])
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The LibTorch (and CUDA toolkit) that build/ was configured with, if any.
found=()
for var in Torch_DIR CUDAToolkit_ROOT; do
  value=$(sed -n "s/^$var:[A-Z]*=//p" build/CMakeCache.txt 2> /dev/null | head -n 1)
  if [ -n "$value" ] && [ "${value%-NOTFOUND}" = "$value" ]; then found+=("-D$var=$value"); fi
done
cmake -S . -B build-tsan "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSWEEP_TSAN=ON \
  -DGPUSWEEP_BUILD_BENCH=OFF "${found[@]}" > /dev/null
cmake --build build-tsan --parallel "$(nproc)" --target torchkit_tests
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
export OMP_NUM_THREADS=1
spec=${1:-[pipeline]}
echo "tsan: torchkit_tests $spec"
build-tsan/tests/torchkit_tests "$spec"
