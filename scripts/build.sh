#!/usr/bin/env bash
# Configures and builds gpusweep into build/ (incremental; ccache when present),
# then says which LibTorch it built against and which translation units were
# compiled with their CUDA paths (GPUSWEEP_TORCH_CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build build --parallel "$(nproc)"

# The CUDA-guarded sources, and whether each was compiled with the macro on.
if [ -f build/compile_commands.json ] && command -v python3 >/dev/null; then
  python3 - "$PWD" <<'PY'
import json, os, subprocess, sys
root = sys.argv[1]
cache = open(os.path.join(root, "build", "CMakeCache.txt")).read()
torch_dir = next((l.split("=", 1)[1] for l in cache.splitlines() if l.startswith("Torch_DIR:")), "")
guarded = subprocess.run(["git", "grep", "-l", "defined(GPUSWEEP_TORCH_CUDA)", "--", "*.cpp"],
                         cwd=root, capture_output=True, text=True).stdout.split()
commands = {os.path.relpath(c["file"], root): c.get("command", " ".join(c.get("arguments", [])))
            for c in json.load(open(os.path.join(root, "build", "compile_commands.json")))}
on = [f for f in guarded if "GPUSWEEP_TORCH_CUDA=1" in commands.get(f, "")]
off = [f for f in guarded if f not in on]
print(f"build: LibTorch from {torch_dir or '(not built: GPUSWEEP_BUILD_TORCH_PLUGINS=OFF)'}")
print(f"build: {len(on)} of {len(guarded)} CUDA-guarded translation units compiled with "
      f"GPUSWEEP_TORCH_CUDA=1" + (": " + ", ".join(on) if on else ""))
if off:
    print("build: compiled without their CUDA paths (a CPU-only LibTorch): " + ", ".join(off))
PY
fi
