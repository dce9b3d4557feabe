"""The same Python workload timed by a plain Python loop, as a user would
time it without gpusweep: create it through the SDK (the same Settings), run
`warmup` steps, then `blocks` blocks of `steps` steps, each timed with
perf_counter; prints the blocks' median seconds per step and samples/s as JSON.
The common settings' table, which the python plugin hands the SDK, comes from
`gpusweep settings` (GPUSWEEP_BIN, else build/gpusweep).
Usage: plain_loop.py MODULE CONFIG_JSON WARMUP BLOCKS STEPS"""
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "sdk", "python"))
import torch  # noqa: E402

from gpusweep import _bridge  # noqa: E402

binary = os.environ.get("GPUSWEEP_BIN", os.path.join(ROOT, "build", "gpusweep"))
_bridge.SETTINGS_TABLE = subprocess.run([binary, "settings", "--format", "json"], capture_output=True,
                                        text=True, check=True).stdout
module, config = sys.argv[1], json.loads(sys.argv[2])
warmup, blocks, steps = (int(a) for a in sys.argv[3:6])
if config.get("threads", 0) > 0:
    torch.set_num_threads(config["threads"])
torch.manual_seed(config.get("seed", 0))
inst = _bridge.create(module, json.dumps(config), "cpu")
step = inst.step
for _ in range(warmup):
    step()
per_step, rate = [], []
for _ in range(blocks):
    samples = 0.0
    t0 = time.perf_counter()
    for _ in range(steps):
        samples += step()
    dt = time.perf_counter() - t0
    per_step.append(dt / steps)
    rate.append(samples / dt)
print(json.dumps({"step_s": statistics.median(per_step), "throughput": statistics.median(rate)}))
