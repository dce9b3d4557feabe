"""bench/python_bridge.sh's workload: a step of `work` in-place adds on a
small tensor (work 0: nothing at all), to time what gpusweep's python bridge
adds to each step against the same step in a plain Python loop."""
import torch

import gpusweep

MANIFEST = gpusweep.Manifest(
    name="spin", unit="steps", batch_size=1, description="a step of `work` tiny torch ops",
    quality=gpusweep.Quality("value", higher_is_better=True),
    params=[gpusweep.Param.int("work", 0, min=0, max=1000000, description="adds per step"),
            gpusweep.Param.int("size", 64, min=1, max=1 << 24, description="the tensor's elements")],
)


class Spin:
    def __init__(self, config):
        self.work = config["work"]
        self.x = torch.zeros(config["size"])

    def step(self):
        for _ in range(self.work):
            self.x.add_(1.0)
        return 1

    def evaluate(self):
        return {"value": float(self.x[0])}


def create(config):
    return Spin(config)
