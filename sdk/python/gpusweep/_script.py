"""The `script` workload's Python side: a user's own training script run as
`python train.py ARGS` would run it, on a thread of the trial's worker,
stepped by the worker one optimiser step at a time.

The script reports each optimiser step with one line (`gpusweep.step(...)`
in a plain loop, `gpusweep.hf.Callback()` or `gpusweep.lightning.Callback()`
for a Trainer). That call hands control to the worker and waits for the
trial's next step: between turns the script stands still in it, and the
processes it started (DataLoader workers) are stopped (SIGSTOP) until the
trial's next turn. When the measurement is over the call stops training:
the callbacks ask their Trainer to stop (it then runs what follows
train()/fit(), its own evaluation included), and a plain loop gets
StopTraining, which the runtime catches.

What the trial set reaches the script as its own flags (a flag map:
FLAG_MAPS, or the sweep's own) and through gpusweep.setting(name, default).
"""
import json
import os
import runpy
import shlex
import signal
import sys
import threading
import time
import traceback

from ._errors import Skipped

# The common settings each built-in map carries, as the flags the script's
# parser takes: a setting's value either formats into the flag's argument
# ("{}"), or picks flags from a table of values. A setting a map lacks
# skips the trial that sets it, saying so.
FLAG_MAPS = {
    # transformers' TrainingArguments, parsed by HfArgumentParser.
    "hf": {
        "batch_size": "--per_device_train_batch_size",
        "precision": {"fp32": [], "bf16": ["--bf16"], "fp16": ["--fp16"]},
        "tf32": {"true": ["--tf32", "True"], "false": []},
        "compile": {"true": ["--torch_compile"], "false": []},
        "compile_mode": {"default": [], "reduce-overhead": ["--torch_compile_mode",
                                                            "reduce-overhead"],
                         "max-autotune": ["--torch_compile_mode", "max-autotune"],
                         "max-autotune-no-cudagraphs": ["--torch_compile_mode",
                                                        "max-autotune-no-cudagraphs"]},
        "grad_accum": "--gradient_accumulation_steps",
        "loader_workers": "--dataloader_num_workers",
        "pin_memory": {"true": ["--dataloader_pin_memory", "True"],
                       "false": ["--dataloader_pin_memory", "False"]},
        "prefetch": "--dataloader_prefetch_factor",
        "seed": "--seed",
    },
    # LightningCLI's trainer and data arguments.
    "lightning": {
        "batch_size": "--data.batch_size",
        "precision": {"fp32": ["--trainer.precision", "32-true"],
                      "bf16": ["--trainer.precision", "bf16-mixed"],
                      "fp16": ["--trainer.precision", "16-mixed"]},
        "grad_accum": "--trainer.accumulate_grad_batches",
        "cudnn_benchmark": {"true": ["--trainer.benchmark", "true"],
                            "false": ["--trainer.benchmark", "false"]},
        "seed": "--seed_everything",
    },
    "none": {},
}

# Settings a trial sets that need no flag: the worker applies them to the
# process before the script runs (threads, seed, TF32, cuDNN benchmark).
PROCESS_WIDE = ("threads", "interop_threads", "seed", "tf32", "cudnn_benchmark", "device")

# The script's own keys in a trial's config, not settings for it.
SCRIPT_KEYS = ("script", "args", "flags", "cwd", "quality", "higher_is_better",
               "step_timeout_s", "module")


class StopTraining(BaseException):
    """Raised by gpusweep.step() in a plain loop once the trial's measurement
    is done. A BaseException, so that the script's `except Exception` does
    not catch it; the runtime does."""


StopTraining.__module__ = "gpusweep"

# The running trial's script, or None: outside gpusweep every call of the
# one line does nothing.
CURRENT = None


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def flag_map(flags):
    """The map a trial's `flags` names: a built-in's name, or a map of the
    sweep's own (a dict, or its JSON text)."""
    if isinstance(flags, str) and flags.lstrip().startswith("{"):
        try:
            flags = json.loads(flags)
        except ValueError as e:
            raise ValueError("flags: a map of your own must be JSON: %s" % e) from None
    if isinstance(flags, dict):
        return flags
    if flags in FLAG_MAPS:
        return FLAG_MAPS[flags]
    raise ValueError("flags %r: name a built-in map (%s)%s or give a map of your own, setting to "
                     "flag ({\"batch_size\": \"--batch-size\", \"precision\": {\"bf16\": "
                     "[\"--amp\"], \"fp32\": []}})"
                     % (flags, ", ".join(sorted(FLAG_MAPS)), _nearest(flags, FLAG_MAPS)))


def _nearest(name, names):
    import difflib

    close = difflib.get_close_matches(str(name), sorted(names), n=3, cutoff=0.6)
    return " (did you mean %s?)" % " or ".join(close) if close else ""


def check_flags(flags, settings):
    """What is wrong with a sweep's flag map, before anything runs ("" when
    nothing): a setting it names that the workload does not have, a rule
    that is neither a flag nor a table of value to flags, a table's value
    the setting cannot take. settings: name -> its allowed values' texts
    (None where any value is allowed)."""
    try:
        table = flag_map(flags)
    except ValueError as e:
        return str(e)
    for name, rule in table.items():
        if name not in settings:
            return ("flags: the map names %r, which is not a setting of the script workload%s; "
                    "a map carries these: %s" % (name, _nearest(name, settings),
                                                 ", ".join(sorted(settings))))
        if isinstance(rule, str):
            if not rule.startswith("-"):
                return ("flags: the map's %s is %r, not a flag: give the flag that takes the "
                        "value (\"--%s\")" % (name, rule, name.replace("_", "-")))
            continue
        if not isinstance(rule, dict) or not all(
                isinstance(v, list) and all(isinstance(f, str) for f in v) for v in rule.values()):
            return ("flags: the map's %s must be a flag (\"--x\") or a table of value to a list "
                    "of flags ({\"bf16\": [\"--amp\"], \"fp32\": []}), not %s"
                    % (name, json.dumps(rule)))
        allowed = settings[name]
        for value in rule:
            if allowed is not None and value not in allowed:
                return ("flags: the map's %s has an entry for %r, which %s cannot be (it takes "
                        "%s)%s" % (name, value, name, ", ".join(allowed), _nearest(value, allowed)))
    return ""


def mapped_flags(config, defaults, flags):
    """The flags a trial's settings map to under `flags`, and the settings
    it sets (not at their defaults) that the map has no flag for."""
    table = flag_map(flags)
    out, unmapped = [], []
    for name, value in config.items():
        if name in SCRIPT_KEYS or name.startswith("-"):
            continue
        # A DataLoader takes a prefetch factor only with worker processes.
        if name == "prefetch" and not config.get("loader_workers"):
            continue
        rule = table.get(name)
        if rule is None:
            if name in defaults and value != defaults[name] and name not in PROCESS_WIDE:
                unmapped.append(name)
            continue
        if isinstance(rule, str):
            out += [rule, _text(value)]
        elif isinstance(rule, dict):
            key = _text(value)
            if key not in rule:
                raise ValueError("flags: %s=%s has no entry in the map's %s (it has %s)"
                                 % (name, key, name, ", ".join(sorted(rule))))
            out += [str(f) for f in rule[key]]
        else:
            raise ValueError("flags: the map's %s must be a flag (\"--x\") or a table of value to "
                             "flags, not %r" % (name, rule))
    return out, unmapped


def own_flags(config):
    """The grid's axes named as the script's own flags (`"--optim"`): true
    gives the bare flag, false nothing, anything else `--flag value`."""
    out = []
    for name, value in config.items():
        if not name.startswith("-"):
            continue
        if value is True:
            out.append(name)
        elif value is False or value is None:
            continue
        else:
            out += [name, _text(value)]
    return out


def script_argv(config, defaults):
    """The script's sys.argv for a trial, and the settings no flag carries."""
    script = os.path.abspath(config["script"])
    args = config.get("args", "")
    if isinstance(args, str):
        args = shlex.split(args)
    elif isinstance(args, list) and all(not isinstance(a, (list, dict)) for a in args):
        args = [_text(a) for a in args]
    else:
        raise ValueError("args: expected the script's arguments as a list ([\"--output_dir\", "
                         "\"out\"]) or one text, got %s" % json.dumps(args))
    flags, unmapped = mapped_flags(config, defaults, config.get("flags", "none"))
    return [script] + args + flags + own_flags(config), unmapped


def descendants(pid):
    """Every process below pid (children, their children ...), from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # The name is in parentheses and may hold spaces: the ppid follows it.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def signal_processes(pids, signum):
    """Sends signum to each process; those that were there to take it."""
    sent = []
    for pid in pids:
        try:
            os.kill(pid, signum)
            sent.append(pid)
        except ProcessLookupError:
            pass
    return sent


def wait_stopped(pids, timeout_s):
    """Waits until each process is stopped (or gone), at most timeout_s."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t", "Z", "X"):
                        break
            except OSError:
                break
            time.sleep(0.0005)


def _measure():
    """The trial's measure spec, which the worker puts in GPUSWEEP_MEASURE
    ({} outside a measured trial: plugins --check)."""
    try:
        m = json.loads(os.environ.get("GPUSWEEP_MEASURE", ""))
    except ValueError:
        return {}
    return m if isinstance(m, dict) else {}


def warmup_steps():
    """The trial's warmup steps (1 outside a measured trial)."""
    return int(_measure().get("warmup_steps", 1))


def steps_needed():
    """How many optimiser steps the trial's protocol takes, in words."""
    m = _measure()
    if not m:
        return "more"
    warmup, blocks = int(m.get("warmup_steps", 0)), int(m.get("blocks", 0))
    if "steps_per_block" in m:
        per = int(m["steps_per_block"])
        return "at least %d (%d warmup, then %d blocks of %d; one step before them is the " \
               "script's setup)" % (1 + warmup + blocks * per, warmup, blocks, per)
    return "at least %d warmup steps, then %d blocks of %g s each" % (
        warmup, blocks, float(m.get("block_s", 0)))


class Run:
    """One trial's script on its own thread, and the handoff of its steps.

    The worker calls step(); the script's gpusweep.step() (or a Trainer
    callback) calls arrived() after each optimiser step. Exactly one of the
    two runs at a time."""

    def __init__(self, argv, cwd, timeout_s):
        self.argv, self.cwd, self.timeout_s = argv, cwd, timeout_s
        self._go = threading.Semaphore(0)
        self._back = threading.Semaphore(0)
        self.stopping = False      # the measurement is over: training should stop
        self.finished = False      # the script's thread has ended
        self.error = None          # its exception, with the traceback's text
        self.exit_code = None      # its sys.exit() status
        self.steps = 0
        self.samples = self.tokens = None
        self.quality = {}          # name -> (value, se)
        self.stderr_tail = []
        self.stopped = []          # processes pause() stopped
        self.read = set()          # settings the script asked for (gpusweep.setting)
        self.count_flops = False   # count the FLOPs of the step after setup's
        self.flops_per_step = None
        self._flops = None
        self.thread = threading.Thread(target=self._main, name="gpusweep-script", daemon=True)

    # The script's side.
    def _main(self):
        script = self.argv[0]
        old_argv, old_path = sys.argv, list(sys.path)
        try:
            sys.argv = list(self.argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
        except StopTraining:
            pass
        except SystemExit as e:
            code = e.code
            self.exit_code = code if isinstance(code, int) else (0 if code is None else 1)
            if not isinstance(code, (int, type(None))):
                self.error = str(code)
        except BaseException as e:  # noqa: BLE001 - the script's, whatever it is
            self.error = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            sys.stderr.write(self.error)
            sys.stderr.flush()
        finally:
            sys.argv = old_argv
            sys.path[:] = old_path
            self.finished = True
            self._back.release()

    def arrived(self, samples, tokens):
        """An optimiser step is done: hand it to the worker and wait for the
        next turn. True once training should stop."""
        self.steps += 1
        if self._flops is not None:  # the step just done ran under the counter
            self._flops.__exit__(None, None, None)
            self.flops_per_step = float(self._flops.get_total_flops())
            self._flops = None
        self.samples, self.tokens = samples, tokens
        self._back.release()
        self._go.acquire()
        if self.steps == 1 and self.count_flops and not self.stopping:
            # The first step after setup, a warmup step, runs under PyTorch's
            # FLOP counter (on this thread, where the script's ops dispatch):
            # the step's FLOPs, counted once, give its achieved FLOP/s.
            from torch.utils.flop_counter import FlopCounterMode

            self._flops = FlopCounterMode(display=False)
            self._flops.__enter__()
        return self.stopping

    # The worker's side.
    def _wait(self, what):
        if not self._back.acquire(timeout=self.timeout_s):
            raise RuntimeError(
                "the script %s reported no optimiser step for %.0f s (%s); add the one line: "
                "gpusweep.step(samples=...) after each optimiser step of a plain loop, "
                "callbacks=[gpusweep.hf.Callback()] for a transformers Trainer, "
                "callbacks=[gpusweep.lightning.Callback()] for a Lightning Trainer (or raise "
                "base.step_timeout_s if its steps are that slow)"
                % (self.argv[0], self.timeout_s, what))
        if self.finished:
            raise RuntimeError(self._ended(what))

    def _ended(self, what):
        if self.error is not None:
            last = self.error.strip().splitlines()[-1] if self.error.strip() else self.error
            return "the script %s raised %s (%s, after %d steps; its traceback is in the trial's " \
                   "log: gpusweep results --trial N)" % (self.argv[0], last, what, self.steps)
        if self.exit_code not in (None, 0):
            return "the script %s exited with status %d %s after %d steps%s" % (
                self.argv[0], self.exit_code, what, self.steps,
                " (its parser refused its arguments? they were: %s; the parser's message is in "
                "the trial's log)" % " ".join(shlex.quote(a) for a in self.argv[1:])
                if self.steps == 0 else "")
        return "the script %s ended by itself after %d optimiser steps, %s: the measurement " \
               "needs %s (give it more steps: --max_steps, epochs, or a longer dataset; or " \
               "measure fewer: measure.blocks, measure.warmup_steps)" % (
                   self.argv[0], self.steps, what, steps_needed())

    def start(self):
        """Runs the script up to its first reported step (its setup)."""
        self.thread.start()
        self._wait("before its first step")

    def step(self):
        self._go.release()
        self._wait("during the measurement")
        return self.samples, self.tokens

    def finish(self, timeout_s):
        """Asks training to stop and lets the script run to its end (what
        follows train()/fit(): its own evaluation); waits at most timeout_s."""
        if self.finished:
            return
        self.stopping = True
        self._go.release()
        self.thread.join(timeout_s)

    def pause(self):
        """Stops the processes the script started, where they stand, and
        returns once they have stopped (a signal is delivered when the
        process is next scheduled, not when it is sent)."""
        if self.stopped:
            return
        self.stopped = signal_processes(descendants(os.getpid()), signal.SIGSTOP)
        wait_stopped(self.stopped, 0.5)

    def resume(self):
        stopped, self.stopped = self.stopped, []
        signal_processes(stopped, signal.SIGCONT)


def handoff(samples=None, tokens=None):
    """An optimiser step done: hands it to gpusweep and waits for the trial's
    next one. True once the trial's measurement is done (training should
    stop); False, at once, outside gpusweep or off the script's thread."""
    run = CURRENT
    if run is None or threading.current_thread() is not run.thread:
        return False
    return run.arrived(samples, tokens)


def step(samples=None, tokens=None):
    """gpusweep.step: the one line of a plain loop, after each optimiser step.
    Once the trial's measurement is done it raises StopTraining, which ends
    the script's loop (gpusweep catches it)."""
    if handoff(samples, tokens):
        raise StopTraining()


def setting(name, default=None):
    """The trial's value of a setting (a common one: batch_size, precision,
    grad_accum ...), or default outside gpusweep."""
    run = CURRENT
    if run is None:
        return default
    run.read.add(name)
    return run.config.get(name, default)


def report_quality(name, value, se=None):
    """Reports a quality metric of the script's own evaluation (the latest
    value counts); does nothing outside gpusweep."""
    run = CURRENT
    if run is None:
        return
    run.quality[str(name)] = (float(value), None if se is None else float(se))


class Instance:
    """What the python plugin drives for a script trial (as _bridge.Instance
    for a module): step, evaluate, stats, pause, resume."""

    def __init__(self, config, device, table):
        global CURRENT
        self.config = dict(config)
        # The manifest's defaults (the plugin passes them), else the table's.
        defaults = self.config.pop("__defaults", None) or {e["name"]: e["default"] for e in table}
        argv, unmapped = script_argv(self.config, defaults)
        self.metric = self.config.get("quality", "")
        cwd = self.config.get("cwd") or os.path.dirname(os.path.abspath(argv[0]))
        os.chdir(cwd)
        self.run = Run(argv, cwd, float(self.config.get("step_timeout_s", 300)))
        self.run.config = self.config
        # Not under torch.compile (its tracing and the counter's dispatch
        # mode do not mix), nor where the step would be a measured one.
        self.run.count_flops = not self.config.get("compile", False) and warmup_steps() >= 1
        self.watch = Watch(self.config, argv)
        CURRENT = self.run
        try:
            self.run.start()
        except BaseException:
            self.watch.remove()
            raise
        # A setting no flag carries reaches the script only if it asked for
        # it (gpusweep.setting) in its setup: else the trial would measure
        # the script at its own default, under the setting's name.
        unread = [name for name in unmapped if name not in self.run.read]
        if unread:
            self.watch.remove()
            name, flags = unread[0], self.config.get("flags", "none")
            raise Skipped("%s=%s: the flag map %s has no flag for %s, and the script did not ask "
                          "for it (gpusweep.setting) before its first step, so it would never "
                          "see it; add one to a map of your own (base.flags: {\"%s\": "
                          "\"--your-flag\"}) or read it with gpusweep.setting(\"%s\")"
                          % (name, _text(self.config[name]),
                             "'%s'" % flags if isinstance(flags, str) and flags in FLAG_MAPS
                             else "of the sweep",
                             name, name, name))
        # The first reported step is its setup's (compilation, lazy state):
        # the watch counts from the next.
        self.watch.reset()
        self.watching = True

    def step(self):
        samples, tokens = self.run.step()
        if self.watching:
            self.watching = self.watch.after_step(samples)
        if samples is None:
            samples = self.config.get("batch_size", 1) * self.config.get("grad_accum", 1)
        return (float(samples), float(tokens or 0))

    def pause(self):
        self.run.pause()

    def resume(self):
        self.run.resume()

    def evaluate(self):
        """Stops training and lets the script end (its own evaluation runs
        then); its last reported quality is the trial's."""
        self.run.resume()
        self.run.finish(float(self.config.get("step_timeout_s", 300)))
        if self.run.error is not None:
            raise RuntimeError(self.run._ended("after the measurement"))
        out = {}
        for name, (value, se) in self.run.quality.items():
            out[name] = value
            if se is not None:
                out[name + "_se"] = se
        if self.metric and self.metric in self.run.quality:
            value, se = self.run.quality[self.metric]
            out["quality"] = value
            if se is not None:
                out["quality_se"] = se
        return json.dumps(out)

    def stats(self):
        from . import compile_seconds

        out = dict(self.watch.seen, script_steps=self.run.steps)
        if self.run.flops_per_step:
            out["flops_per_step"] = self.run.flops_per_step
        if self.config.get("compile", False):
            out["compile_s"] = compile_seconds()
        return json.dumps(out)


__all__ = ["StopTraining", "step", "setting", "report_quality", "handoff", "FLAG_MAPS"]


# Its watch is a module of its own, which reads this one's flag maps.
from ._script_watch import Watch  # noqa: E402
