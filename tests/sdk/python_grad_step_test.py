"""The Python SDK's GradStep and its watch over the settings a trial sets,
on the CPU, through the bridge's Instance as the python plugin drives it:
GradStep's accumulated step equals one step on the whole batch, it clears
gradients as zero_grad_to_none says and reads the loss every sync_every
steps; a step that ignores a setting it was given fails with SettingIgnored
naming that setting (backward passes counted by hooks, whoever calls
backward), one that honours it passes, and the hooks are gone after the
watch.

usage: python_grad_step_test.py GPUSWEEP SDK_DIR
"""
import json
import subprocess
import sys

import torch

gpusweep_bin, sdk_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sdk_dir)
import gpusweep  # noqa: E402
from gpusweep import _bridge  # noqa: E402

TABLE = json.loads(subprocess.run([gpusweep_bin, "settings", "--format", "json"], check=True,
                                  capture_output=True, text=True).stdout)["settings"]
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def settings(**values):
    return gpusweep.Config(dict({"batch_size": 4}, **values), "cpu", False, TABLE).settings


class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((3, 8, 8), float(i % 5)), torch.tensor(float(i % 3))


def conv_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 1))


class Step:
    """A configurable step: `how` says which of the SDK's helpers it skips."""

    def __init__(self, s, how=()):
        self.s, self.how = s, set(how)
        self.model = s.prepare(conv_net() if "mlp" not in self.how else torch.nn.Linear(3, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.train = gpusweep.GradStep(s, self.opt)
        self.batches = s.loader(Rows()) if "no_loader" not in self.how else None
        self.x = torch.randn(4, 3, 8, 8) if "mlp" not in self.how else torch.randn(4, 3)

    def step(self):
        s = self.s
        for _ in range(1 if "no_accum" in self.how else s.grad_accum):
            x = next(self.batches)[0] if self.batches is not None and "mlp" not in self.how \
                else self.x
            x = s.to_device(x)
            if "no_autocast" in self.how:
                out = self.model(x)
            else:
                with s.autocast():
                    out = self.model(x)
            loss = out.float().pow(2).mean()
            if "own_backward" in self.how:  # the module's own loop, without GradStep
                (loss / s.grad_accum).backward()
            else:
                self.train.backward(loss)
        if "own_backward" in self.how:
            self.opt.step()
            self.opt.zero_grad()  # torch's own: ignores zero_grad_to_none
            if "item" in self.how:
                loss.item()
            else:
                s.observe_loss(loss)
        else:
            self.train.step()
        return s.batch_size

    def evaluate(self):
        return {}


def run(how=(), steps=4, **values):
    """The step driven as the plugin drives it: the SettingIgnored message,
    or None and the stats."""
    s = settings(**values)
    inst = _bridge.Instance(Step(s, how), s)
    try:
        for _ in range(steps):
            inst.step()
    except gpusweep.SettingIgnored as e:
        return str(e), None
    return None, json.loads(inst.stats())


# GradStep: two micro-batches of half the batch step as one batch would.
def trained(grad_accum):
    s = settings(grad_accum=grad_accum)
    model = conv_net()
    train = gpusweep.GradStep(s, torch.optim.SGD(model.parameters(), lr=0.5))
    x = torch.linspace(-1, 1, 8 * 3 * 64).reshape(8, 3, 8, 8)
    for part in x.chunk(grad_accum):
        train.backward(model(part).pow(2).mean())
    train.step()
    expect(all(p.grad is None for p in model.parameters()),
           "GradStep.step() left gradients behind at zero_grad_to_none=true")
    return torch.cat([p.detach().flatten() for p in model.parameters()])


expect(torch.allclose(trained(1), trained(2), atol=1e-6),
       "GradStep at grad_accum=2 on two halves did not step as one batch at grad_accum=1")
expect(not torch.equal(trained(1), torch.cat([p.detach().flatten() for p in conv_net().parameters()])),
       "GradStep.step() did not change the parameters")

# zero_grad_to_none=false: zeros in place, not None; sync_every=2: every other read.
s = settings(zero_grad_to_none=False, sync_every=2)
model = conv_net()
train = gpusweep.GradStep(s, torch.optim.SGD(model.parameters(), lr=0.1))
for _ in range(4):
    train.backward(model(torch.ones(2, 3, 8, 8)).pow(2).mean())
    train.step()
expect(all(p.grad is not None and not p.grad.any() for p in model.parameters()),
       "GradStep at zero_grad_to_none=false did not leave zeroed gradients")
expect(s.loss_reads == 2, "sync_every=2 over 4 steps read the loss %d times, not 2" % s.loss_reads)

# Settings honoured: the trial goes on; backward passes counted whoever calls backward.
for how, values, stat in [
        ((), {"grad_accum": 4}, 4),
        (("own_backward",), {"grad_accum": 3}, 3),
        ((), {"channels_last": True, "zero_grad_to_none": False, "sync_every": 3,
              "precision": "bf16", "loader_workers": 1}, 1)]:
    message, stats = run(how, **values)
    expect(message is None, "%s %s: %s" % (how, values, message))
    if stats is not None:
        expect(stats.get("backward_passes_per_step") == stat,
               "%s %s: backward_passes_per_step %s, not %s"
               % (how, values, stats.get("backward_passes_per_step"), stat))

# Settings ignored: each fails the trial naming the setting and what was seen.
for how, values, said in [
        (("no_accum",), {"grad_accum": 4}, "grad_accum=4 did nothing: the first 2 steps ran 1, 1"),
        (("no_accum", "own_backward"), {"grad_accum": 2}, "grad_accum=2 did nothing"),
        (("mlp", "no_loader"), {"channels_last": True}, "channels_last=true did nothing: the "
                                                        "prepared model has no 4-D weights"),
        (("own_backward",), {"zero_grad_to_none": False}, "zero_grad_to_none=false did nothing"),
        (("no_loader",), {"loader_workers": 1}, "loader_workers=1 did nothing: no batch came"),
        (("own_backward", "item"), {"sync_every": 5}, "sync_every=5 did nothing"),
        (("no_autocast",), {"precision": "bf16"}, "precision=bf16 did nothing")]:
    message, _ = run(how, **values)
    expect(message is not None and said in message,
           "%s %s: expected SettingIgnored saying %r, got %r" % (how, values, said, message))

# Two ignored at once: both named.
message, _ = run(("no_accum", "no_loader"), grad_accum=2, loader_workers=1)
expect(message is not None and "grad_accum=2" in message and "loader_workers=1" in message,
       "two ignored settings: %r" % message)

# The watch ends after two steps and removes its hooks: a later step is not watched.
s = settings(grad_accum=2)
step = Step(s)
inst = _bridge.Instance(step, s)
for _ in range(2):
    inst.step()
step.how.add("no_accum")
inst.step()  # a third step ignoring grad_accum is no longer judged
expect(all(not p._post_accumulate_grad_hooks for p in step.model.parameters()),
       "the watch's hooks are still on the parameters after it ended")

for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
