#!/usr/bin/python3
"""PyTorch-eager reference for the canonical restoration workload
(docs/workloads.md "restoration").

Denoising CNN: conv3x3(3->32) ReLU, 4 residual blocks (conv3x3, ReLU,
conv3x3, + skip), conv3x3(32->3); the net predicts the noise and the output
is input minus prediction. Adam 2e-4, L1 loss, batch 16 patches of 64x64.
Data: 64 procedural 256x256 RGB training images rendered at setup (smooth
gradient background, rectangles and ellipses, some with sine textures, an
optional faint sine overlay), served by a map-style Dataset doing the random
crop, random flips and fresh Gaussian noise (sigma 25/255) per sample,
batched by a DataLoader with num_workers=0 (the plugin's canonical
loader_workers=0: the step builds its own batch). --channels-last puts the
weights and each input batch in channels-last memory format, as the plugin's
channels_last=true does. Loss read back every step
(sync_every 1).
One step = one optimiser step on 16 patches; unit: images/s.
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from common import compiled, measure, parse_args

C, BLOCKS, PATCH, BATCH, LR, SIGMA = 32, 4, 64, 16, 2e-4, 25.0 / 255.0
N_TRAIN, SIZE = 64, 256


def render_image(rng, size):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    a, b = rng.uniform(0, 1, (2, 3, 1, 1)).astype(np.float32)
    ang = rng.uniform(0, 2 * np.pi)
    t = np.clip(((xx - size / 2) * np.cos(ang) + (yy - size / 2) * np.sin(ang)) / size + 0.5, 0, 1)
    img = a + (b - a) * t  # [3, H, W]
    n_shapes = int(round(rng.uniform(6, 12) * size * size / (128 * 128)))
    for _ in range(n_shapes):
        if rng.random() < 0.5:  # rectangle (may be cut by the border)
            w, h = rng.uniform(8, 64, 2)
            x0, y0 = int(rng.uniform(-w / 2, size - w / 2)), int(rng.uniform(-h / 2, size - h / 2))
            box = (slice(max(y0, 0), max(min(y0 + int(h), size), 0)),
                   slice(max(x0, 0), max(min(x0 + int(w), size), 0)))
            mask = np.ones(yy[box].shape, dtype=bool)
        else:  # rotated ellipse
            cx, cy = rng.uniform(0, size, 2)
            rx, ry = rng.uniform(5, 40, 2)
            th = rng.uniform(0, np.pi)
            r = max(rx, ry)
            box = (slice(max(int(cy - r), 0), min(int(cy + r) + 2, size)),
                   slice(max(int(cx - r), 0), min(int(cx + r) + 2, size)))
            dx, dy = xx[box] - cx, yy[box] - cy
            u = (dx * np.cos(th) + dy * np.sin(th)) / rx
            v = (-dx * np.sin(th) + dy * np.cos(th)) / ry
            mask = u * u + v * v <= 1
        ca, cb = rng.uniform(0, 1, (2, 3, 1, 1)).astype(np.float32)
        region = img[(slice(None),) + box]
        if rng.random() < 0.35:  # sine texture between two colours
            k = 2 * np.pi / rng.uniform(4, 32)
            phi = rng.uniform(0, np.pi)
            tex = 0.5 + 0.5 * np.sin(k * np.cos(phi) * xx[box] + k * np.sin(phi) * yy[box]
                                     + rng.uniform(0, 2 * np.pi))
            colour = ca + (cb - ca) * tex
        else:
            colour = ca
        alpha = rng.uniform(0.7, 1.0)
        region[:] = np.where(mask, region + alpha * (colour - region), region)
    if rng.random() < 0.5:  # faint sine overlay
        k = 2 * np.pi / rng.uniform(4, 64)
        phi = rng.uniform(0, np.pi)
        img = img + rng.uniform(0.03, 0.1) * np.sin(k * np.cos(phi) * xx + k * np.sin(phi) * yy
                                                    + rng.uniform(0, 2 * np.pi))
    return np.clip(img, 0, 1).astype(np.float32)


class NoisyPatches(Dataset):
    def __init__(self, images, patch, sigma, length):
        self.images, self.patch, self.sigma, self.length = images, patch, sigma, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        img = self.images[i % len(self.images)]
        top, left = torch.randint(0, img.shape[1] - self.patch + 1, (2,)).tolist()
        clean = img[:, top:top + self.patch, left:left + self.patch]
        if torch.rand(()) < 0.5:
            clean = clean.flip(2)
        if torch.rand(()) < 0.5:
            clean = clean.flip(1)
        clean = clean.contiguous()
        return clean + self.sigma * torch.randn_like(clean), clean


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(self.relu(self.conv1(x)))


class Denoiser(nn.Module):
    def __init__(self, c=C, blocks=BLOCKS):
        super().__init__()
        self.head = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU(inplace=True))
        self.body = nn.Sequential(*[ResBlock(c) for _ in range(blocks)])
        self.tail = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, noisy):
        return noisy - self.tail(self.body(self.head(noisy)))


def main():
    args = parse_args(__doc__, steps=1, warmup=2)
    t_setup = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    images = torch.from_numpy(np.stack([render_image(rng, SIZE) for _ in range(N_TRAIN)]))
    loader = DataLoader(NoisyPatches(images, PATCH, SIGMA, N_TRAIN * 10000), batch_size=BATCH,
                        shuffle=True, num_workers=0, drop_last=True)
    batches = iter(loader)
    model = Denoiser()
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    model.to(memory_format=layout)
    compiled(args, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    last = {"loss": 0.0}

    def step():
        noisy, clean = next(batches)
        noisy = noisy.contiguous(memory_format=layout)
        loss = F.l1_loss(model(noisy), clean)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        last["loss"] = loss.item()

    measure("restoration", "images", step, float(BATCH), args,
            setup_s=time.perf_counter() - t_setup)


if __name__ == "__main__":
    main()
