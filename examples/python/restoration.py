"""restoration, written in Python: the canonical image-denoising CNN of
docs/workloads.md ("restoration") as a gpusweep Python workload, the same task
as the built-in C++ plugin `restoration`.

conv3x3(3 -> C) ReLU, num_blocks residual blocks (conv3x3 C->C, ReLU,
conv3x3 C->C, + skip), conv3x3(C -> 3); the net predicts the noise and the
output is the input minus the prediction. Canonical C (base_channels) 32,
num_blocks 4, patch_size 64, batch 16; Adam 2e-4, L1 loss.
Data: 64 procedural 256x256 RGB training images rendered at setup from the
trial's seed (smooth gradient background, rectangles and ellipses, some with
sine textures, an optional faint sine overlay). A map-style Dataset does the
per-sample work, as an input pipeline does: a random crop, random left-right
and top-bottom flips and fresh Gaussian noise (sigma 25/255), each patch's
from a generator seeded by the trial's seed and the patch's index (the same
patches whatever loader_workers), batched by the trial's DataLoader
(Settings.loader: loader_workers, prefetch, pin_memory). One step = one
optimiser step on batch_size x grad_accum patches; unit: images.

Quality: mean PSNR (dB) of the denoised output on 16 fixed 128x128
validation images with fixed noise (the same for every seed), with its
standard error over the images, next to the noisy input's own PSNR.

Run it (from the repository root):

    ./build/gpusweep run examples/python/restoration_sweep.json
    ./build/gpusweep compare

The module is self-contained: it imports only gpusweep, torch, numpy and the
standard library. The model and data code follow bench/eager/restoration.py.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset

import gpusweep

# Canonical task (docs/workloads.md): not knobs, so that every trial trains
# the same task.
LR, SIGMA = 2e-4, 25.0 / 255.0
N_TRAIN, SIZE = 64, 256          # training images, rendered at setup
PATCHES_PER_IMAGE = 10000        # dataset length: N_TRAIN x this patches an epoch
# Validation: fixed images and noise whatever the trial's seed, so that
# PSNRs of different trials compare.
N_VAL, VAL_SIZE, VAL_SEED = 16, 128, 20240613
VAL_CHUNK = 8                    # validation images per forward
IMAGE_STREAM, PATCH_STREAM, SAMPLER_STREAM, VAL_NOISE_STREAM = 1, 2, 3, 4

MANIFEST = gpusweep.Manifest(
    name="restoration",
    version="1.0.0",
    description=(
        "Image denoising CNN (docs/workloads.md, restoration): conv3x3(3->C) ReLU, num_blocks "
        "residual blocks (conv3x3, ReLU, conv3x3, + skip), conv3x3(C->3); the net predicts the "
        "noise, the output is the input minus it. Procedural RGB images (gradients, rectangles, "
        "ellipses, sine textures) with Gaussian noise sigma 25/255; a Dataset crops random "
        "patches, flips them and adds fresh noise, batched by a DataLoader. Adam 2e-4. A step "
        "is one optimiser step on batch_size x grad_accum patches."),
    unit="images",
    batch_size=16,
    deterministic=True,
    quality=gpusweep.Quality(
        "psnr_db", higher_is_better=True, reference="noisy_psnr_db",
        description=(
            "mean PSNR (dB) of the denoised output on 16 fixed 128x128 validation images (fixed "
            "noise, same for every seed), next to the PSNR of the noisy input itself; "
            "initial_psnr_db is the untrained model's")),
    supports=gpusweep.Supports(channels_last=True, input_pipeline=True, cudnn=True,
                               grad_accum=True),
    params=[
        gpusweep.Param.int("base_channels", 32, min=1, max=512,
                           description="feature channels C of every hidden conv (canonical 32); "
                                       "compute grows as C^2"),
        gpusweep.Param.int("num_blocks", 4, min=0, max=64,
                           description="residual blocks of two C->C 3x3 convs each (canonical "
                                       "4); compute grows linearly"),
        gpusweep.Param.int("patch_size", 64, min=8, max=SIZE,
                           description="side in pixels of the square training patches the "
                                       "Dataset crops from the 256x256 training images "
                                       "(canonical 64); compute and loader work grow as its "
                                       "square"),
        gpusweep.Param.choice("loss", "l1", ["l1", "l2"],
                              description="training loss between the denoised patch and the "
                                          "clean one: l1 = mean absolute error (canonical), "
                                          "l2 = mean squared error"),
    ],
)


def derive_seed(seed, *stream):
    """A 63-bit seed for one consumer (stream, index...) of the trial's seed."""
    return int(np.random.SeedSequence([seed, *stream]).generate_state(1, np.uint64)[0] >> 1)


def render_image(rng, size):
    """One procedural RGB image, [3, size, size] float32 in [0, 1]."""
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


def render_images(seed, count, size):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(np.stack([render_image(rng, size) for _ in range(count)]))


class NoisyPatches(Dataset):
    """(noisy, clean) patch pairs: patch i is a random crop of image
    i % len(images), randomly flipped, plus fresh Gaussian noise, all drawn
    from a generator seeded by (seed, i)."""

    def __init__(self, images, patch, sigma, seed, length):
        self.images, self.patch, self.sigma = images, patch, sigma
        self.seed, self.length = seed, length
        self.generator = None  # made in the process that uses it (a loader worker)

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.generator is None:
            self.generator = torch.Generator()
        g = self.generator.manual_seed(derive_seed(self.seed, PATCH_STREAM, i))
        img = self.images[i % len(self.images)]
        top, left = torch.randint(0, img.shape[1] - self.patch + 1, (2,), generator=g).tolist()
        flip_lr, flip_tb = (torch.rand(2, generator=g) < 0.5).tolist()
        clean = img[:, top:top + self.patch, left:left + self.patch]
        if flip_lr:
            clean = clean.flip(2)
        if flip_tb:
            clean = clean.flip(1)
        clean = clean.contiguous()
        return clean + self.sigma * torch.randn(clean.shape, generator=g), clean


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(self.relu(self.conv1(x)))


class Denoiser(nn.Module):
    def __init__(self, c, blocks):
        super().__init__()
        self.head = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU(inplace=True))
        self.body = nn.Sequential(*[ResBlock(c) for _ in range(blocks)])
        self.tail = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, noisy):
        return noisy - self.tail(self.body(self.head(noisy)))


def psnr_db(images, clean):
    """Per-image PSNR (dB), pixel values clamped to [0, 1] as an image is
    when saved."""
    mse = (images.float().clamp(0, 1) - clean).square().flatten(1).mean(1)
    return -10.0 * torch.log10(mse)


def mean_and_se(values):
    v = values.double()
    mean, sd = torch.stack([v.mean(), v.std()]).tolist()
    return mean, sd / math.sqrt(v.numel())


class Restoration:
    def __init__(self, config):
        s = self.s = config.settings
        self.channels, self.blocks = config["base_channels"], config["num_blocks"]
        self.patch_size = config["patch_size"]
        self.loss_fn = F.l1_loss if config["loss"] == "l1" else F.mse_loss
        images = render_images(derive_seed(s.seed, IMAGE_STREAM), N_TRAIN, SIZE)
        self.model = s.prepare(Denoiser(self.channels, self.blocks))
        # Backward per micro-batch (grad_accum), the fp16 scaler, zero_grad and
        # the deferred loss read (sync_every).
        self.train = gpusweep.GradStep(s, torch.optim.Adam(self.model.parameters(), lr=LR))
        patches = NoisyPatches(images, self.patch_size, SIGMA, s.seed, N_TRAIN * PATCHES_PER_IMAGE)
        self.batches = s.loader(
            patches, generator=torch.Generator().manual_seed(derive_seed(s.seed, SAMPLER_STREAM)))
        self._make_validation_set()
        self.initial_psnr_db = self._validation_psnr_db()[0]

    def _make_validation_set(self):
        """16 fixed images with fixed noise, on the device for the whole trial."""
        clean = render_images(VAL_SEED, N_VAL, VAL_SIZE)
        noise = torch.randn(clean.shape, generator=torch.Generator().manual_seed(
            derive_seed(VAL_SEED, VAL_NOISE_STREAM)))
        noisy = clean + SIGMA * noise
        self.noisy_psnr_db = mean_and_se(psnr_db(noisy, clean))[0]
        self.val_clean, self.val_noisy = self.s.to_device(clean), self.s.to_device(noisy)

    @torch.no_grad()
    def _validation_psnr_db(self):
        """Mean PSNR of the model's output on the validation images and its
        standard error, in the trial's precision (so that what bf16 costs in
        quality shows). The module's own forward: no_grad at another batch
        size would otherwise compile graphs of its own when compile is on."""
        self.model.eval()
        outputs = []
        for chunk in self.val_noisy.split(VAL_CHUNK):
            with self.s.autocast():
                outputs.append(self.model.forward(chunk).float())
        self.model.train()
        return mean_and_se(psnr_db(torch.cat(outputs), self.val_clean))

    def step(self):
        s = self.s
        for _ in range(s.grad_accum):
            noisy, clean = next(self.batches)
            noisy, clean = s.to_device(noisy), s.to_device(clean)
            with s.phase("forward"), s.autocast():  # phase: timed in diagnose trials
                denoised = self.model(noisy)
            self.train.backward(self.loss_fn(denoised.float(), clean))  # fp32 loss
        self.train.step()
        return s.batch_size * s.grad_accum

    def evaluate(self):
        psnr, psnr_se = self._validation_psnr_db()
        return {"psnr_db": psnr, "psnr_db_se": psnr_se, "noisy_psnr_db": self.noisy_psnr_db,
                "initial_psnr_db": self.initial_psnr_db,
                "optimizer_steps": self.train.optimizer_steps}

    def stats(self):
        # Multiply-adds of the convolutions x 2 FLOPs x 3 (forward, input and
        # weight gradients); the elementwise ops left out.
        c = self.channels
        per_pixel = 2 * 9 * (3 * c * 2 + 2 * self.blocks * c * c)
        # The SDK reports the fp16 loss_scale.
        return {"optimizer_steps": self.train.optimizer_steps,
                "flops_per_step": 3.0 * per_pixel * self.patch_size ** 2
                * self.s.batch_size * self.s.grad_accum}


def create(config):
    return Restoration(config)
