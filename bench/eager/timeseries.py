#!/usr/bin/python3
"""PyTorch-eager reference for the canonical timeseries workload
(docs/workloads.md "timeseries").

nn.LSTM(1, 64, num_layers=2, batch_first=True) -> nn.Linear(64, 1) on the
last step, Adam 1e-3, MSE. Data: 64 synthetic hourly series of 4000 steps
(linear trend + daily and weekly seasonality + Gaussian noise, amplitudes per
series), standardised per series with training-part statistics, last 20%
held out. Each step draws batch 128 random training windows of seq_len 30
(uniform series, uniform start, with replacement; target = the next value),
built with numpy fancy indexing, as the plugin's in-step input pipeline does
(loader_workers 0). Loss read back every step (sync_every 1).
One step = one optimiser step on 128 windows; unit: sequences/s.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import compiled, measure, parse_args

N_SERIES, LENGTH, SEQ_LEN, BATCH, HIDDEN, LAYERS, LR = 64, 4000, 30, 128, 64, 2, 1e-3
TRAIN_LEN = LENGTH * 8 // 10


def make_series(rng):
    t = np.arange(LENGTH, dtype=np.float64)
    out = np.empty((N_SERIES, LENGTH), dtype=np.float32)
    for i in range(N_SERIES):
        offset = rng.uniform(-10, 10)
        scale = np.exp(rng.uniform(np.log(0.5), np.log(20.0)))
        slope = rng.uniform(-2, 2) / LENGTH
        daily, weekly = rng.uniform(0.5, 2.0), rng.uniform(0.3, 1.5)
        p1, p2 = rng.uniform(0, 2 * np.pi, size=2)
        noise = rng.normal(0, rng.uniform(0.1, 0.4), size=LENGTH)
        raw = offset + scale * (slope * t + daily * np.sin(2 * np.pi * t / 24 + p1)
                                + weekly * np.sin(2 * np.pi * t / 168 + p2) + noise)
        train = raw[:TRAIN_LEN]
        out[i] = (raw - train.mean()) / train.std(ddof=1)
    return out


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, HIDDEN, num_layers=LAYERS, batch_first=True)
        self.head = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def main():
    args = parse_args(__doc__, steps=10, warmup=5)
    t_setup = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    series = make_series(rng)
    window = np.arange(SEQ_LEN + 1)
    model = Forecaster()
    compiled(args, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    last = {"loss": 0.0}

    def get_batch():
        s = rng.integers(0, N_SERIES, size=BATCH)
        start = rng.integers(0, TRAIN_LEN - SEQ_LEN, size=BATCH)
        w = series[s[:, None], start[:, None] + window]  # [B, seq_len + 1]
        return torch.from_numpy(w[:, :SEQ_LEN, None]), torch.from_numpy(w[:, SEQ_LEN:])

    def step():
        x, y = get_batch()
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        last["loss"] = loss.item()

    measure("timeseries", "sequences", step, float(BATCH), args,
            setup_s=time.perf_counter() - t_setup)


if __name__ == "__main__":
    main()
