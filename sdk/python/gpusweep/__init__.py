"""gpusweep's Python SDK: write a workload as a Python module, and gpusweep
measures its training step as it does its C++ plugins (the `python` workload,
docs/writing-plugins.md "Python workloads").

A workload module defines

    MANIFEST = gpusweep.Manifest(...)   # what it is, what it measures, its knobs
    def create(config): ...             # -> an object with step() and evaluate()

`create` gets a `Config`: every parameter's value (the common settings and the
module's own), and `config.settings`, a `Settings` that applies the common
settings the way gpusweep's C++ plugins do (autocast, GradScaler,
channels_last, zero_grad(set_to_none), deferred loss reads, non-blocking
copies, DataLoader workers and pinning, torch.compile). The process-wide ones
(threads, seed, TF32, cuDNN benchmark) are applied before `create` runs.

The workload object has
    step() -> samples                       one training step; the number of
                                            samples in the manifest's unit, or
                                            (samples, secondary_samples)
    evaluate() -> {metric: value}           quality on held-out data; a
                                            metric's standard error as
                                            "<metric>_se"
and optionally stats() -> {name: number}, pause() and resume() (stop and
restart background work between interleaved turns).

`GradStep(settings, optimizer)` is the training step's back half:
backward(loss) per micro-batch, then step() (grad_accum, the fp16 scaler,
zero_grad, the deferred loss read).

Raise `Skipped("why")` when a configuration cannot apply (the trial is
skipped with that reason). A setting the trial sets that demonstrably did
nothing in its first steps (grad_accum=4 with one backward pass a step)
fails the trial with `SettingIgnored`, naming it. Nothing here needs more
than torch.
"""
import contextlib
import random
import signal
import time

from ._errors import SettingIgnored, Skipped
from ._grad_step import GradStep
from ._script import StopTraining, setting, signal_processes, step
from ._script import report_quality as quality
from ._watch import WATCHED_STEPS, _Watch

__all__ = ["Param", "Quality", "Metric", "Supports", "Manifest", "Skipped", "SettingIgnored",
           "Config", "Settings", "Batches", "GradStep", "step", "setting", "quality",
           "StopTraining", "hf", "lightning"]


def __getattr__(name):
    """gpusweep.hf and gpusweep.lightning, imported when first named: a
    script that uses neither needs neither library."""
    if name in ("hf", "lightning"):
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'gpusweep' has no attribute %r" % name)

# What autocast() at fp32 and phase() outside diagnose return: one reusable
# no-op context, not a new object on every call of a step's hot path.
_NO_CONTEXT = contextlib.nullcontext()

COMPILE_MODES = ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]


def _setting_value(entry, config):
    """A common setting's value in config, or the table's default; checked
    against the table's type, range and values (ValueError naming it)."""
    name, value = entry["name"], config.get(entry["name"], entry["default"])
    kind = {"bool": bool, "int": int, "float": (int, float), "string": str}[entry["type"]]
    wrong_type = not isinstance(value, kind) or (entry["type"] != "bool" and isinstance(value, bool))
    if (wrong_type or ("choices" in entry and value not in entry["choices"])
            or ("min" in entry and value < entry["min"])
            or ("max" in entry and value > entry["max"])):
        allowed = (" of %s" % entry["choices"] if "choices" in entry else
                   " in [%s, %s]" % (entry.get("min"), entry.get("max")) if "min" in entry else "")
        raise ValueError("common setting %s=%r: expected a %s%s"
                         % (name, value, entry["type"], allowed))
    return value


class Param:
    """One of the workload's own parameters (its knobs), typed, with a default."""

    def __init__(self, name, type, default, description="", min=None, max=None, choices=None):
        self.name, self.type, self.default = name, type, default
        self.description, self.min, self.max, self.choices = description, min, max, choices

    @classmethod
    def int(cls, name, default, min=None, max=None, description=""):
        return cls(name, "int", default, description, min, max)

    @classmethod
    def float(cls, name, default, min=None, max=None, description=""):
        return cls(name, "float", default, description, min, max)

    @classmethod
    def bool(cls, name, default, description=""):
        return cls(name, "bool", default, description)

    @classmethod
    def str(cls, name, default, description=""):
        return cls(name, "string", default, description)

    @classmethod
    def choice(cls, name, default, choices, description=""):
        return cls(name, "string", default, description, choices=list(choices))

    def to_dict(self):
        d = {"name": self.name, "type": self.type, "default": self.default,
             "description": self.description, "common": False}
        if self.min is not None:
            d["min"] = self.min
        if self.max is not None:
            d["max"] = self.max
        if self.choices:
            d["choices"] = self.choices
        return d


class Quality:
    """The metric evaluate() reports that says how well the model trains."""

    def __init__(self, metric, higher_is_better=True, description="", reference=""):
        self.metric, self.higher_is_better = metric, higher_is_better
        self.description, self.reference = description, reference


class Metric:
    """A metric evaluate() reports that a target may name, with its range."""

    def __init__(self, name, higher_is_better=True, min=None, max=None, description=""):
        self.name, self.higher_is_better = name, higher_is_better
        self.min, self.max, self.description = min, max, description


class Supports:
    """What the workload has for the common settings to act on; a setting it
    does not support is still listed (one sweep file works across workloads)
    but a trial that sets it is skipped with `reason`."""

    def __init__(self, channels_last=False, input_pipeline=False, cudnn=False, grad_accum=False,
                 sync_every=True, precision=True, cuda_graphs=False, compile=True, reason=""):
        self.channels_last, self.input_pipeline, self.cudnn = channels_last, input_pipeline, cudnn
        self.grad_accum, self.sync_every, self.precision = grad_accum, sync_every, precision
        self.cuda_graphs = cuda_graphs  # the step runs its device work through Settings.graphed
        self.compile, self.reason = compile, reason

    def to_dict(self):
        return dict(vars(self))


class Manifest:
    """What the workload is: name, throughput unit, quality metric, batch size
    default, which common settings it honours, and its own parameters.
    deterministic=True claims that two trials with the same config and seed
    on the CPU evaluate to the same metrics (`gpusweep plugins --check` tests
    it)."""

    def __init__(self, name, unit, quality, version="1.0.0", description="", batch_size=32,
                 secondary_unit="", supports=None, params=(), metrics=(), deterministic=False):
        self.name, self.unit, self.quality, self.version = name, unit, quality, version
        self.description, self.batch_size, self.secondary_unit = description, batch_size, secondary_unit
        self.supports = supports if supports is not None else Supports()
        self.params, self.metrics = list(params), list(metrics)
        self.deterministic = deterministic

    def to_dict(self):
        return {
            "name": self.name, "version": self.version, "description": self.description,
            "unit": self.unit, "secondary_unit": self.secondary_unit,
            "batch_size": self.batch_size,
            "quality": {"metric": self.quality.metric, "reference": self.quality.reference,
                        "higher_is_better": self.quality.higher_is_better,
                        "description": self.quality.description},
            "supports": self.supports.to_dict(),
            "deterministic": self.deterministic,
            "params": [p.to_dict() for p in self.params],
            "metrics": [{"name": m.name, "higher_is_better": m.higher_is_better, "min": m.min,
                         "max": m.max, "description": m.description} for m in self.metrics],
        }


class Config(dict):
    """A trial's resolved configuration: every parameter's value by name,
    and `settings`, the common settings ready to apply."""

    def __init__(self, values, device="cpu", diagnose=False, table=None):
        super().__init__(values)
        self.settings = Settings(self, device, diagnose, table)


class Batches:
    """An endless iterator over a DataLoader (or any iterable), restarted at
    each epoch's end, that times how long the step waited for each batch
    (input_wait_s in the trial's stats). next(batches) is what the iterable
    yields: for s.loader(dataset), a batch collated by the DataLoader from
    dataset[i] (a tuple (x, y) of tensors gives a list [X, Y], each with a
    leading batch_size dimension), still on the host: copy it with
    s.to_device."""

    def __init__(self, iterable, settings=None):
        self._iterable, self._settings = iterable, settings
        self._it = iter(iterable)
        self.wait_s, self.batches = 0.0, 0
        self._stopped = []  # the loader processes pause() stopped

    def pause(self):
        """Stops the DataLoader's worker processes where they stand (SIGSTOP):
        between a trial's turns and around evaluations nothing is built off
        the clock, nor takes the cores from a neighbour's measured block. A
        batch half built when it stops is finished after resume(), on the
        clock, as torchkit rebuilds one. What the queue already held was built
        during the trial's own blocks."""
        if self._stopped:
            return
        alive = [w.pid for w in getattr(self._it, "_workers", ())
                 if w.pid is not None and w.is_alive()]
        self._stopped = signal_processes(alive, signal.SIGSTOP)

    def resume(self):
        """Lets the worker processes pause() stopped go on (SIGCONT)."""
        stopped, self._stopped = self._stopped, []
        signal_processes(stopped, signal.SIGCONT)

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        with self._settings.phase("input_wait") if self._settings else _NO_CONTEXT:
            try:
                batch = next(self._it)
            except StopIteration:
                self._it = iter(self._iterable)
                batch = next(self._it)
        self.wait_s += time.perf_counter() - t0
        self.batches += 1
        return batch


class Settings:
    """The common settings of a trial, applied as gpusweep's C++ plugins do.

    Each is an attribute of the name the common settings' table gives it
    (`gpusweep settings` lists them), its value the config's or the table's
    default. `table` is that table's "settings" list (`gpusweep settings
    --format json`); the python plugin passes it."""

    def __init__(self, config, device="cpu", diagnose=False, table=None):
        import torch

        self._torch = torch
        self.device = torch.device(device)
        # `gpusweep diagnose`: phase() times the step's phases (see there).
        self.diagnose = diagnose
        self._phase_s = dict.fromkeys(PHASES, 0.0)
        self._phase_stack = []
        self._host_syncs = 0
        if table is None:
            raise ValueError("gpusweep.Settings needs the common settings' table: run the module "
                             "through gpusweep, or pass table=json.loads(output of `gpusweep "
                             "settings --format json`)['settings']")
        for entry in table:
            if entry["name"] != "device":  # the device the trial resolved, above
                setattr(self, entry["name"], _setting_value(entry, config))
        self._defaults = {entry["name"]: entry["default"] for entry in table}
        get = config.get
        self.compile = get("compile", False)
        self.compile_mode = get("compile_mode", "default")
        self.loss_reads, self.last_loss = 0, None
        self._loss_steps = 0
        self._batches = []
        self._scalers = []
        self._graph = None  # cuda_graphs: the captured step, its output, calls and replays
        self._graph_out = None
        self._graph_calls = self._graph_replays = 0
        self._graph_stream = None  # the warmups' and the capture's side stream
        self._in_graphed = False
        self._capturing = False
        self._graph_capture_s = 0.0
        self._static = {}
        # What the step did with the settings, counted for _Watch.
        self._calls = dict.fromkeys(("zero_grad", "autocast", "observe_loss", "to_device"), 0)
        self._models = []  # the models prepare() returned
        self._watch = _Watch(self)
        random.seed(self.seed)
        try:
            import numpy
            numpy.random.seed(self.seed % 2**32)
        except ImportError:
            pass

    @property
    def amp_dtype(self):
        """The autocast dtype (torch.bfloat16, torch.float16) or None for fp32."""
        return {"bf16": self._torch.bfloat16, "fp16": self._torch.float16}.get(self.precision)

    def autocast(self):
        """A context for the forward pass: autocast at the trial's precision."""
        self._calls["autocast"] += 1
        if self.amp_dtype is None:
            return _NO_CONTEXT
        return self._torch.autocast(self.device.type, dtype=self.amp_dtype)

    def grad_scaler(self):
        """torch.amp.GradScaler, enabled for fp16 (loss scaling), else a no-op;
        its scale is reported as loss_scale in the trial's stats."""
        scaler = self._torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")
        self._scalers.append(scaler)
        return scaler

    def prepare(self, model):
        """The model on the trial's device, channels_last when set, and compiled
        (nn.Module.compile, in place: state_dict keys unchanged) when set."""
        model = model.to(self.device)
        if self.channels_last:
            model = model.to(memory_format=self._torch.channels_last)
        if self.compile:
            model.compile(mode=None if self.compile_mode == "default" else self.compile_mode)
        self._models.append(model)
        self._watch.parameters(model.parameters())
        self._watch.forward(model)
        return model

    def to_device(self, tensor):
        """A batch tensor on the device: non_blocking when set, channels_last for
        4-D tensors when set."""
        self._calls["to_device"] += 1
        with self.phase("host_to_device"):
            t = tensor.to(self.device, non_blocking=self.non_blocking)
        if self.channels_last and t.dim() == 4:
            t = t.contiguous(memory_format=self._torch.channels_last)
        return t

    def zero_grad(self, optimizer):
        """Clears gradients: to None (zero_grad_to_none) or zero in place
        (always under cuda_graphs: the captured backward writes them there)."""
        self._calls["zero_grad"] += 1
        with self.phase("optimizer"):
            optimizer.zero_grad(set_to_none=self.zero_grad_to_none and not self.cuda_graphs)

    def step_input(self, slot, tensor):
        """A batch tensor the graphed step reads: under cuda_graphs a static
        copy (the same storage every step, which a captured graph reads), the
        tensor itself otherwise. A shape or dtype that changes is Skipped."""
        if not self.cuda_graphs:
            return tensor
        kept = self._static.get(slot)
        if kept is None:
            # On the step's device: a host-to-device copy from pageable
            # memory cannot be captured, a device-to-device one can.
            kept = self._static[slot] = tensor.detach().to(self.device, copy=True)
            return kept
        if kept.shape != tensor.shape or kept.dtype != tensor.dtype:
            raise Skipped("cuda_graphs: the step's input %r changed from %s %s to %s %s; a "
                          "captured graph replays fixed shapes"
                          % (slot, list(kept.shape), kept.dtype, list(tensor.shape), tensor.dtype))
        kept.copy_(tensor, non_blocking=self.non_blocking)
        return kept

    def graphed(self, device_work):
        """Runs the step's device work, device_work() (forward, loss, backward,
        optimiser step; its inputs through step_input), and returns what it
        returns (the loss). As it is when cuda_graphs is off. On (the module's
        Supports(cuda_graphs=True)): the first call is a dry run that refuses
        (Skipped) a step reading a value on the host through the SDK
        (observe_loss: call it after graphed); the next two run on a side
        stream; the fourth is captured with torch.cuda.graph and replayed, and
        every later call replays it, returning the captured output, which
        holds the replayed step's values. The optimiser must be capturable
        (torch.optim.Adam(..., capturable=True), with or without fused=True:
        fused alone is refused by torch's capture check); a capture torch
        refuses is Skipped with its reason, never run eagerly. The warmups
        and the capture run on one side stream, so that the libraries'
        workspaces for it exist before the capture."""
        if not self.cuda_graphs:
            return device_work()
        # A GradStep inside leaves the loss read to the step, after graphed.
        self._in_graphed = True
        try:
            return self._graphed(device_work)
        finally:
            self._in_graphed = False

    def _graphed(self, device_work):
        torch = self._torch
        call = self._graph_calls
        self._graph_calls += 1
        if call == 0:
            if self.precision == "fp16":
                raise Skipped("cuda_graphs with precision=fp16: torch.amp.GradScaler reads on the "
                              "host, each step, whether a gradient overflowed (to skip the "
                              "update); a captured graph would replay the answer of the capture. "
                              "Use bf16 or fp32")
            before = self._host_syncs
            out = device_work()
            if self._host_syncs > before:
                raise Skipped("cuda_graphs: the step reads a device value on the host inside it "
                              "(%d host sync(s) in a dry run: observe_loss); a captured graph "
                              "would replay the value read at capture. Call observe_loss after "
                              "graphed" % (self._host_syncs - before))
            if self.device.type != "cuda":
                raise Skipped("cuda_graphs captures CUDA kernels; device is %s" % self.device)
            return out
        if call < 3:
            if self._graph_stream is None:
                self._graph_stream = torch.cuda.Stream(self.device)
            side = self._graph_stream
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                out = device_work()
            torch.cuda.current_stream(self.device).wait_stream(side)
            return out
        if call == 3:
            start = time.perf_counter()
            graph = torch.cuda.CUDAGraph()
            self._capturing = True  # phase() may not synchronise inside a capture
            try:
                with torch.cuda.graph(graph, stream=self._graph_stream,
                                      capture_error_mode="thread_local"):
                    self._graph_out = device_work()
            except Skipped:
                raise
            except Exception as e:  # noqa: BLE001 - torch's reason, whatever its type
                raise Skipped("cuda_graphs: the step could not be captured: %s"
                              % str(e).splitlines()[0])
            finally:
                self._capturing = False
            self._graph = graph
            self._graph_capture_s = time.perf_counter() - start
        else:
            self._graph_replays += 1
        self._graph.replay()
        return self._graph_out

    def phase(self, name):
        """A context timing one phase of the step for `gpusweep diagnose`
        (input_wait, host_to_device, forward, backward, optimizer, host_sync):
        wrap the forward pass, backward and optimiser step in one each. Off
        (every trial but diagnose's) it costs a branch; on, it synchronises the
        device at both edges, so that queued work is charged to the phase that
        queued it. The SDK's loader, to_device, zero_grad and observe_loss time
        their own phases."""
        # Inside a capture a device sync would invalidate it (torchkit's
        # CaptureScope does the same): the graphed step is timed whole.
        if not self.diagnose or self._capturing:
            return _NO_CONTEXT
        if name not in self._phase_s:
            raise ValueError("phase %r is not one of %s" % (name, ", ".join(PHASES)))
        return _PhaseTimer(self, name)

    def loader(self, dataset, **kwargs):
        """A DataLoader over dataset (a torch Dataset: __len__ and
        __getitem__(i) returning one sample, e.g. a tuple of tensors) with the
        trial's batch_size, loader_workers, prefetch and pin_memory (on CUDA),
        shuffled, dropping the last partial batch, wrapped in Batches
        (endless, timed): next() of it is one collated batch on the host.
        kwargs go to the DataLoader (sampler=, collate_fn=, generator=; a
        batch_size= of its own overrides the trial's)."""
        from torch.utils.data import DataLoader

        workers = self.loader_workers
        kwargs.setdefault("batch_size", self.batch_size)
        kwargs.setdefault("shuffle", True)
        kwargs.setdefault("drop_last", True)
        loader = DataLoader(dataset, num_workers=workers,
                            prefetch_factor=self.prefetch if workers > 0 else None,
                            persistent_workers=workers > 0,
                            pin_memory=self.pin_memory and self.device.type == "cuda", **kwargs)
        return self.track(Batches(loader, self))

    def track(self, batches):
        """Reports batches' input wait in the trial's stats, and pauses their
        loader between the trial's turns and around its evaluations."""
        self._batches.append(batches)
        return batches

    def pause(self):
        """Stops the tracked loaders' background work (the bridge calls it
        between turns and when a measured window ends)."""
        for b in self._batches:
            if hasattr(b, "pause"):
                b.pause()

    def resume(self):
        """Lets the tracked loaders go on (before a turn's block, when a
        measured window begins)."""
        for b in self._batches:
            if hasattr(b, "resume"):
                b.resume()

    def observe_loss(self, loss):
        """Call once per step with its loss: reads it back to the host (a device
        sync) only every sync_every steps."""
        self._loss_steps += 1
        self._calls["observe_loss"] += 1
        if self.sync_every > 0 and self._loss_steps % self.sync_every == 0:
            with self.phase("host_sync"):
                self.last_loss = float(loss.item())
            self.loss_reads += 1
            self._host_syncs += 1

    def synchronize(self):
        """Waits for the device's queued work (nothing to wait for on the CPU)."""
        if self.device.type == "cuda":
            self._torch.cuda.synchronize(self.device)

    def stats(self):
        """The settings' counters for the trial's stats."""
        s = {"loss_reads": self.loss_reads}
        if self.last_loss is not None:
            s["last_loss"] = self.last_loss
        if self._batches:
            s["input_wait_s"] = sum(b.wait_s for b in self._batches)
            s["input_batches"] = sum(b.batches for b in self._batches)
        if self.compile:
            s["compile_s"] = compile_seconds()
        if self.diagnose:
            for name, seconds in self._phase_s.items():
                s["phase_%s_s" % name] = seconds
            s["host_syncs"] = self._host_syncs
        if self.cuda_graphs:
            s["cuda_graphs_captured"] = 1 if self._graph is not None else 0
            s["cuda_graph_replays"] = self._graph_replays
            s["cuda_graph_capture_s"] = self._graph_capture_s
            s["zero_grad_in_place"] = 1
        scales = [sc.get_scale() for sc in self._scalers if sc.is_enabled()]
        if scales:  # fp16: the smallest loss scale the scalers reached
            s["loss_scale"] = float(min(scales))
        s.update(self._watch.stats())
        return s


PHASES = ("input_wait", "host_to_device", "forward", "backward", "optimizer", "host_sync")


class _PhaseTimer:
    """One phase's time, less the phases timed inside it (a host read inside
    the optimiser counts once, as a sync), as torchkit's PhaseTimer."""

    def __init__(self, settings, name):
        self.s, self.name, self.children = settings, name, 0.0

    def __enter__(self):
        self.s.synchronize()
        self.s._phase_stack.append(self)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.s.synchronize()
        elapsed = time.perf_counter() - self.t0
        self.s._phase_stack.pop()
        self.s._phase_s[self.name] += elapsed - self.children
        if self.s._phase_stack:
            self.s._phase_stack[-1].children += elapsed
        return False


def compile_seconds():
    """Seconds torch.compile has spent compiling in this process so far."""
    try:
        from torch._dynamo.utils import compilation_time_metrics
    except ImportError:
        return 0.0
    # Dynamo's frames (forward), and the backward graphs AOTAutograd compiles
    # at the first backward, outside them.
    return float(sum(sum(v) for k, v in compilation_time_metrics.items()
                     if k == "_compile.compile_inner" or k.endswith("bw_compiler")))
