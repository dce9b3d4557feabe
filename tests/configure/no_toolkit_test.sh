#!/usr/bin/env bash
# A CUDA LibTorch without the CUDA toolkit is a configure error that names the
# fix, never a silent CPU-only build: configures gpusweep's source tree with
# the toolkit hidden (an empty tmpfs over it, in a private mount namespace)
# and checks that CMake stops with the message. Skipped (77), saying why,
# where the LibTorch found is not a CUDA build or no mount namespace can be
# made (not root).
# Usage: no_toolkit_test.sh CMAKE SOURCE_DIR TOOLKIT_ROOT TORCH_IS_CUDA
set -euo pipefail
cmake=$1 src=$2 toolkit=$3 torch_cuda=$4
if [ "$torch_cuda" != ON ]; then
  echo "SKIPPED: this build's LibTorch is not a CUDA build; nothing to refuse"
  exit 77
fi
if ! unshare -m bash -c "mount -t tmpfs none '$toolkit'" 2> /dev/null; then
  echo "SKIPPED: cannot hide the toolkit here (a private mount namespace with a tmpfs over" \
       "$toolkit needs root and mount rights)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# nvcc off PATH too: only the system's own folders.
if unshare -m bash -c "mount -t tmpfs none '$toolkit' && PATH=/usr/bin:/bin '$cmake' -S '$src' -B '$work/b' -DGPUSWEEP_BUILD_TESTS=OFF -DGPUSWEEP_BUILD_BENCH=OFF" > "$work/log" 2>&1; then
  cat "$work/log"
  echo "FAIL: configuring against a CUDA LibTorch with the toolkit hidden succeeded"
  exit 1
fi
# CMake wraps the message at a width that depends on the paths in it: match
# on the text with its line breaks and indentation folded into single spaces.
flat=$(tr -s ' \n' '  ' < "$work/log")
if [[ "$flat" != *"is a CUDA build"* || "$flat" != *"-DCUDAToolkit_ROOT="* ]]; then
  cat "$work/log"
  echo "FAIL: configure failed, but not with the message that names the fix"
  exit 1
fi
sed -n '/CMake Error/,/^$/p' "$work/log"
echo "PASS"
