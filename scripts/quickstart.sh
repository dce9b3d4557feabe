#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the quickstart sweep
# into gpusweep.db and prints its comparison with the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./build/gpusweep run experiments/quickstart.json --db gpusweep.db
echo
./build/gpusweep compare quickstart --db gpusweep.db
