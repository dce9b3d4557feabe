"""What a script trial's first steps did with the settings it set, seen in
code gpusweep did not write (gpusweep._script's Watch): the script
workload's counterpart of _watch, for a module's step. The steps watched
are the same number, WATCHED_STEPS, after the script's first reported step
(its setup's)."""
import shlex

from ._errors import SettingIgnored
from ._script import _text, flag_map
from ._watch import WATCHED_STEPS


def compiled_frames():
    """Frames torch.compile has compiled in this process."""
    try:
        from torch._dynamo.utils import counters
        return counters["frames"]["ok"]
    except (ImportError, KeyError):
        return 0


class Watch:
    """What the script's first steps did with the settings the trial set,
    seen where they act, in code gpusweep did not write: autocast and weight
    dtypes in the model's forward passes (a global forward pre-hook),
    backward passes per optimiser step (Tensor.backward counted, optimiser
    steps by torch's global step hook), DataLoader workers (the loaders
    iterated), frames torch.compile compiled, and the samples each step
    took. A setting that did nothing fails the trial (SettingIgnored) with
    what was set and what was seen."""

    def __init__(self, config, argv):
        import torch

        self.torch, self.config, self.argv = torch, config, argv
        self.device = str(config.get("device", "cpu")).split(":")[0]
        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.handles = []
        self.autocast_dtypes, self.weight_dtypes = set(), set()
        self.backwards = self.optimizer_steps = 0
        self.per_step_backwards = []
        self.loader_workers = set()
        self.samples = []
        self.forwards = self.forwards_low = 0
        self.want = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config.get("precision"))
        self.seen = {}             # what the watched steps showed, as stats
        self.done = False
        self._patched = []
        self._install()

    def _install(self):
        torch = self.torch
        if not self.config.get("compile", False):
            # A hook inside a compiled module would be traced into its graph:
            # under compile, the compile counters speak instead.
            def forward(module, args):
                self.forwards += 1
                low = False
                if torch.is_autocast_enabled(self.device):
                    dtype = torch.get_autocast_dtype(self.device)
                    self.autocast_dtypes.add(dtype)
                    low = dtype == self.want
                for p in module.parameters(recurse=False):
                    self.weight_dtypes.add(p.dtype)
                    low = low or p.dtype == self.want
                    break
                self.forwards_low += low
            self.handles.append(torch.nn.modules.module.register_module_forward_pre_hook(forward))

        def stepped(*_):
            self.optimizer_steps += 1
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.handles.append(register_optimizer_step_post_hook(stepped))
        backward = torch.Tensor.backward

        def counted_backward(tensor, *args, **kwargs):
            self.backwards += 1
            return backward(tensor, *args, **kwargs)
        torch.Tensor.backward = counted_backward
        self._patched.append((torch.Tensor, "backward", backward))
        loader = torch.utils.data.DataLoader
        iterate = loader.__iter__

        def iterated(dl):
            self.loader_workers.add(dl.num_workers)
            return iterate(dl)
        loader.__iter__ = iterated
        self._patched.append((loader, "__iter__", iterate))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles.clear()
        for owner, name, original in self._patched:
            setattr(owner, name, original)
        self._patched.clear()

    def reset(self):
        """Forgets the setup's step (the first reported): the watch counts
        from the next."""
        self.backwards = self.forwards = self.forwards_low = 0

    def after_step(self, samples):
        """After each watched step; raises SettingIgnored at the end of the
        watch when a setting did nothing. False once the watch is over."""
        if self.done:
            return False
        self.per_step_backwards.append(self.backwards)
        self.backwards = 0
        self.samples.append(samples)
        if len(self.samples) < WATCHED_STEPS:
            return True
        self.done = True
        self.remove()
        self.seen = self.observed()
        problems = self.problems()
        if problems:
            raise SettingIgnored("; also ".join(problems))
        return False

    def observed(self):
        """What the watched steps showed, as the trial's stats (plugins
        --check says by them what each setting did)."""
        seen = {"backward_passes_per_step": sum(self.per_step_backwards) / WATCHED_STEPS}
        samples = [s for s in self.samples if s is not None]
        if samples:
            seen["samples_per_step"] = sum(samples) / len(samples)
        if self.forwards:
            seen["forwards_seen"] = self.forwards
            if self.want is not None:
                seen["forwards_low_precision"] = self.forwards_low
        if self.loader_workers:
            seen["loader_num_workers"] = max(self.loader_workers)
        if self.config.get("compile", False):
            seen["compiled_frames"] = compiled_frames()
        return seen

    def problems(self):
        torch, c, out = self.torch, self.config, []
        flags = " ".join(shlex.quote(a) for a in self.argv[1:]) or "(none)"

        def ignored(name, seen, fix):
            out.append("%s=%s did nothing: %s (the script was run with: %s); fix: %s"
                       % (name, _text(c[name]), seen, flags, fix))
        fix_map = ("check that base.flags maps it to the flag the script's parser reads, and "
                   "that the script uses it")
        want = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(c.get("precision"))
        if want is not None and not c.get("compile", False) and                 want not in self.autocast_dtypes and want not in self.weight_dtypes:
            ignored("precision", "no forward pass of its first %d steps ran under autocast to %s "
                    "or with %s weights (seen: autocast %s, weights %s)"
                    % (WATCHED_STEPS, want, want,
                       sorted(str(d) for d in self.autocast_dtypes) or "off",
                       sorted(str(d) for d in self.weight_dtypes) or "none"), fix_map)
        g = int(c.get("grad_accum", 1))
        accumulates = not (g > 1 and any(b != g for b in self.per_step_backwards))
        if not accumulates:
            ignored("grad_accum", "its first %d steps ran %s backward pass(es) each, not %d"
                    % (WATCHED_STEPS, ", ".join(str(b) for b in self.per_step_backwards), g),
                    fix_map)
        workers = c.get("loader_workers")
        if workers is not None and workers != 0 and self.loader_workers and                 workers not in self.loader_workers:
            ignored("loader_workers", "its DataLoader has num_workers=%s"
                    % ", ".join(str(w) for w in sorted(self.loader_workers)), fix_map)
        if c.get("compile", False):
            if not compiled_frames():
                ignored("compile", "torch.compile compiled no frame in its first steps", fix_map)
        batch = c.get("batch_size")
        seen = [s for s in self.samples if s is not None]
        if batch is not None and seen and accumulates and \
                "batch_size" in flag_map(c.get("flags", "none")):
            expected = batch * g
            if any(abs(s - expected) > 1e-9 for s in seen):
                ignored("batch_size", "its steps took %s samples each, not %d (batch_size x "
                        "grad_accum)" % (", ".join("%g" % s for s in seen), expected), fix_map)
        return out
