#!/usr/bin/env bash
# The gpu tests' fixture: counts the CUDA devices LibTorch sees, once for a
# CTest run, into FILE ("COUNT VERDICT"), which lib.sh's need_gpus reads.
# Usage: probe.sh GPUSWEEP_BIN PLUGIN_DIR FILE
set -euo pipefail
bin=$1
export GPUSWEEP_PLUGIN_PATH=$2
file=$3
rm -f "$file"
unset GPUSWEEP_GPU_PROBE
. "$(dirname "$0")/lib.sh"
visible_cuda_devices > "$file.tmp"
mv "$file.tmp" "$file"
echo "CUDA devices visible to LibTorch: $(cat "$file")"
