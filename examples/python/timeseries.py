"""timeseries, written in Python: the canonical LSTM forecaster of
docs/workloads.md ("timeseries") as a gpusweep Python workload, the same task
as the built-in C++ plugin `timeseries`.

LSTM(1 -> hidden_size 64, num_layers 2, batch_first) -> Linear(hidden -> 1)
on the last step, predicting the next value of a window of seq_len 30 values.
Data: 64 synthetic hourly series of 4000 steps (linear trend + daily and
weekly seasonality + Gaussian noise, amplitudes per series), generated from
the trial's seed, standardised per series with training-part statistics, the
last 20% held out. Adam 1e-3, MSE; batch 128 windows drawn uniformly with
replacement from the training part (a sampler with a seeded generator; the
Dataset gathers a whole batch of windows with numpy fancy indexing, so that
loader workers have the batch's work to do). One step = one optimiser step
on batch_size x grad_accum windows; unit: sequences.

Quality: the validation MAE (standardised units) of one-step-ahead forecasts
at every 8th held-out step of every series (6400 windows), with its standard
error over the windows, next to the seasonal-naive forecast's (the value 24
steps earlier) on the same steps.

Run it (from the repository root):

    ./build/gpusweep run examples/python/timeseries_sweep.json
    ./build/gpusweep compare

The module is self-contained: it imports only gpusweep, torch, numpy and the
standard library. The model and data code follow bench/eager/timeseries.py.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, RandomSampler

import gpusweep

# Canonical task (docs/workloads.md): not knobs, so that every trial trains
# the same task.
N_SERIES, LENGTH, LR = 64, 4000, 1e-3
TRAIN_LEN = LENGTH * 8 // 10  # the last 20% of each series is held out
SEASONAL_LAG = 24             # the seasonal-naive forecast's lag
VAL_STRIDE = 8                # forecast every 8th held-out step: 64 x 100 windows
VAL_CHUNK = 1024              # validation windows per forward
DATA_STREAM, SAMPLER_STREAM = 1, 2

MANIFEST = gpusweep.Manifest(
    name="timeseries",
    version="1.0.0",
    description=(
        "LSTM forecaster (docs/workloads.md, timeseries): LSTM(1 -> hidden_size, num_layers, "
        "batch_first) -> Linear(hidden -> 1) on the last step, predicting the next value of a "
        "window of seq_len values. 64 synthetic hourly series of 4000 steps (linear trend, daily "
        "and weekly seasonality, Gaussian noise, amplitudes per series), standardised per series "
        "with training-part statistics, last 20% held out. Adam 1e-3, MSE. A DataLoader draws "
        "random training windows. A step is one optimiser step on batch_size x grad_accum "
        "windows."),
    unit="sequences",
    batch_size=128,
    deterministic=True,
    quality=gpusweep.Quality(
        "val_mae", higher_is_better=False, reference="seasonal_naive_mae",
        description=(
            "mean absolute error (standardised units) of one-step-ahead forecasts at every 8th "
            "held-out step of every series (6400 windows), next to the seasonal-naive forecast's "
            "(the value 24 steps earlier) on the same steps; initial_val_mae is the untrained "
            "model's")),
    metrics=[gpusweep.Metric("val_mae", higher_is_better=False, min=0.0,
                             description="validation MAE, standardised units")],
    supports=gpusweep.Supports(channels_last=False, input_pipeline=True, cudnn=True,
                               grad_accum=True, reason="an LSTM has no 4-D tensors"),
    params=[
        gpusweep.Param.int("hidden_size", 64, min=1, max=4096,
                           description="LSTM hidden units per layer (canonical 64); compute per "
                                       "step grows about as its square"),
        gpusweep.Param.int("num_layers", 2, min=1, max=8,
                           description="stacked LSTM layers (canonical 2); compute grows "
                                       "linearly"),
        gpusweep.Param.int("seq_len", 30, min=1, max=1024,
                           description="window length in steps fed to the LSTM for each "
                                       "forecast (canonical 30); step time grows linearly"),
    ],
)


def derive_seed(seed, *stream):
    """A 63-bit seed for one consumer (stream, index...) of the trial's seed."""
    return int(np.random.SeedSequence([seed, *stream]).generate_state(1, np.uint64)[0] >> 1)


def make_series(rng):
    """N_SERIES x LENGTH float32 values, each series standardised with the
    mean and standard deviation of its training part."""
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


class Windows(Dataset):
    """Every training window of every series: index = series * starts + start;
    a sample is (window [seq_len, 1], next value [1]). A window's target is at
    most the last training value."""

    def __init__(self, series, seq_len):
        self.series, self.seq_len = series, seq_len
        self.starts = TRAIN_LEN - seq_len
        self.offsets = np.arange(seq_len + 1)

    def __len__(self):
        return self.series.shape[0] * self.starts

    def __getitem__(self, index):
        x, y = self.__getitems__([index])
        return x[0], y[0]

    def __getitems__(self, indices):
        # The whole batch in one numpy gather (what DataLoader calls when a
        # Dataset has __getitems__); it returns the batch already collated.
        idx = np.asarray(indices)
        w = self.series[(idx // self.starts)[:, None], (idx % self.starts)[:, None] + self.offsets]
        return torch.from_numpy(w[:, :self.seq_len, None]), torch.from_numpy(w[:, self.seq_len:])


def collated(batch):
    """collate_fn for Windows: its __getitems__ returns the batch collated."""
    return batch


class Forecaster(nn.Module):
    def __init__(self, hidden, layers):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class Timeseries:
    def __init__(self, config):
        s = self.s = config.settings
        seq_len = config["seq_len"]
        series = make_series(np.random.default_rng(derive_seed(s.seed, DATA_STREAM)))
        self.model = s.prepare(Forecaster(config["hidden_size"], config["num_layers"]))
        # Backward per micro-batch (grad_accum), the fp16 scaler, zero_grad and
        # the deferred loss read (sync_every).
        self.train = gpusweep.GradStep(s, torch.optim.Adam(self.model.parameters(), lr=LR))
        train = Windows(series, seq_len)
        # Windows drawn uniformly with replacement (as the C++ plugin and the
        # eager reference do), from a generator of the trial's seed.
        draws = torch.Generator().manual_seed(derive_seed(s.seed, SAMPLER_STREAM))
        sampler = RandomSampler(train, replacement=True, generator=draws)
        self.batches = s.loader(train, sampler=sampler, shuffle=False, collate_fn=collated)
        self._make_validation_set(series, seq_len)
        self.initial_val_mae = self._validation_errors()[0]

    def _make_validation_set(self, series, seq_len):
        """Windows ending just before every VAL_STRIDE-th held-out step (their
        inputs may reach back into the training part, as a forecaster's would),
        on the device; and the seasonal-naive error on the same steps."""
        t = np.arange(TRAIN_LEN, LENGTH, VAL_STRIDE)
        w = series[:, t[:, None] - seq_len + np.arange(seq_len + 1)].reshape(-1, seq_len + 1)
        naive = np.abs(series[:, t].astype(np.float64) - series[:, t - SEASONAL_LAG])
        self.seasonal_naive_mae = float(naive.mean())
        w = torch.from_numpy(w)
        self.val_windows = self.s.to_device(w[:, :seq_len, None].contiguous())
        self.val_next = self.s.to_device(w[:, seq_len:].contiguous())

    @torch.no_grad()
    def _validation_errors(self):
        """(MAE, its standard error over the windows, MSE) of the forecasts, in
        the trial's precision (so that what bf16 costs in quality shows). The
        module's own forward: no_grad at another batch size would otherwise
        compile graphs of its own when compile is on."""
        self.model.eval()
        forecasts = []
        for chunk in self.val_windows.split(VAL_CHUNK):
            with self.s.autocast():
                forecasts.append(self.model.forward(chunk).float())
        self.model.train()
        error = (torch.cat(forecasts) - self.val_next).double()
        abs_error = error.abs().flatten()
        mae, sd, mse = torch.stack(
            [abs_error.mean(), abs_error.std(), error.square().mean()]).tolist()
        return mae, sd / math.sqrt(abs_error.numel()), mse

    def step(self):
        s = self.s
        for _ in range(s.grad_accum):
            windows, next_values = next(self.batches)
            windows, next_values = s.to_device(windows), s.to_device(next_values)
            with s.phase("forward"), s.autocast():  # phase: timed in diagnose trials
                forecast = self.model(windows)
            self.train.backward(F.mse_loss(forecast.float(), next_values))  # fp32 loss
        self.train.step()
        return s.batch_size * s.grad_accum

    def evaluate(self):
        mae, mae_se, mse = self._validation_errors()
        return {"val_mae": mae, "val_mae_se": mae_se, "val_mse": mse,
                "seasonal_naive_mae": self.seasonal_naive_mae,
                "initial_val_mae": self.initial_val_mae,
                "optimizer_steps": self.train.optimizer_steps}

    def stats(self):
        return {"optimizer_steps": self.train.optimizer_steps}  # the SDK reports loss_scale


def create(config):
    return Timeseries(config)
