"""What the `python` workload plugin (plugins/python) calls: loading a user's
module, reading its manifest, creating its workload, and describing an
exception for the trial's result. Not an API for workload authors."""
import contextlib
import hashlib
import importlib.util
import json
import math
import os
import sys
import traceback
import zlib

import gpusweep

_modules = {}
_sources = {}  # module file -> the files its import loaded from its folder (relative)


def split_spec(spec):
    """'path/to/step.py:make' -> ('path/to/step.py', 'make'); the factory is
    'create' when not named. The rule of gpusweep/module_spec.hpp, which the
    host and the python plugin read specs by."""
    path, factory = spec, "create"
    head, sep, tail = spec.rpartition(":")
    if sep and head and "/" not in tail and tail.isidentifier():
        path, factory = head, tail
    return path, factory


def _module_name(stem, full):
    """The name the module is imported under: its own stem, as `python
    step.py` would import a sibling, so that a fresh interpreter (a DataLoader
    worker started by spawn or forkserver, which unpickles the dataset by its
    class's module) imports it from its folder on sys.path; a name the
    standard library, an imported module or another module of that stem
    already holds gets a private one instead (with which spawn cannot
    unpickle the module's classes)."""
    taken = stem in sys.modules or stem in getattr(sys, "stdlib_module_names", ()) or \
        stem in sys.builtin_module_names
    if stem.isidentifier() and not taken:
        return stem
    return "gpusweep_user_%s_%08x" % (stem, zlib.crc32(full.encode()))


@contextlib.contextmanager
def _seeded_import():
    """Runs a module's import with torch's CPU generator, random's and
    numpy's seeded with 0, and puts their states back after it, so that the
    trial's seeds (applied before or after the import) are untouched. Not
    CUDA's generators: torch.manual_seed would queue their seeding until
    Python first touches CUDA, over the trial's seed."""
    import random

    import torch

    try:
        import numpy
    except ImportError:
        numpy = None
    cpu, py = torch.get_rng_state(), random.getstate()
    np_state = numpy.random.get_state() if numpy is not None else None
    torch.default_generator.manual_seed(0)
    random.seed(0)
    if numpy is not None:
        numpy.random.seed(0)
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        random.setstate(py)
        if numpy is not None:
            numpy.random.set_state(np_state)


def _files_under(root, modules):
    """The source files of `modules` in root's folder or below (paths
    relative to it), not those of an environment installed there."""
    files = set()
    for m in modules:
        f = getattr(m, "__file__", None)
        # Some modules carry a relative name (torch._classes), not a file.
        if not isinstance(f, str) or not os.path.isabs(f):
            continue
        rel = os.path.relpath(f, root)
        parts = rel.split(os.sep)
        if rel.startswith("..") or "site-packages" in parts or "dist-packages" in parts:
            continue
        if os.path.isfile(f):
            files.add(rel)
    return files


def load(spec):
    """The module a spec names, imported once per process from its file.
    Module-level code runs with the CPU generators seeded (0), so that what
    it draws (a fixed dataset) is the same in every process that imports it
    through gpusweep; the trial's own seed is applied before create()."""
    path, factory = split_spec(spec)
    full = os.path.abspath(path)
    if full in _modules:
        return _modules[full], factory
    if not os.path.isfile(full):
        raise FileNotFoundError(
            "module '%s' does not exist (looked for %s); base.module names a Python file "
            "defining MANIFEST and %s(config)" % (path, full, factory))
    name = _module_name(os.path.splitext(os.path.basename(full))[0], full)
    module_spec = importlib.util.spec_from_file_location(name, full)
    module = importlib.util.module_from_spec(module_spec)
    # Its folder first on the path, so that it imports its siblings (and a
    # spawned worker finds it).
    root = os.path.dirname(full)
    sys.path.insert(0, root)
    before = set(sys.modules)
    sys.modules[name] = module
    try:
        with _seeded_import():
            module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    _modules[full] = module
    # What its import loaded from its folder, itself included: its version.
    _sources[full] = _files_under(root, [module] + [sys.modules[k] for k in set(sys.modules) -
                                                    before if k in sys.modules])
    return module, factory


def source_digest(spec):
    """A digest of the module's source and of every module its import loaded
    from its folder or below (its siblings, its packages; not an environment
    installed there): a change to any is a changed workload."""
    load(spec)
    full = os.path.abspath(split_spec(spec)[0])
    root = os.path.dirname(full)
    h = hashlib.sha256()
    for rel in sorted(_sources[full]):
        h.update(rel.encode() + b"\0")
        with open(os.path.join(root, rel), "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:16]


def _script_imports(path):
    """The files in path's folder (or below) that its import statements
    name: sibling modules and packages, found in the source, nothing run."""
    import ast

    root = os.path.dirname(path)
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(node.module + "." + a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            base = node.module or ""
            names.update((base + "." if base else "") + a.name for a in node.names)
            if base:
                names.add(base)
    found = set()
    for name in names:
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            candidate = os.path.join(root, *parts[:n])
            for f in (candidate + ".py", os.path.join(candidate, "__init__.py")):
                if os.path.isfile(f):
                    found.add(os.path.abspath(f))
    return found


def script_digest(path):
    """A digest of a training script and of every module of its folder it
    imports (followed through those modules' imports): a change to any is a
    changed workload. Read from the source: the script does not run."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError("script '%s' does not exist; base.script names the training "
                                "script to run (train.py), from the sweep file's folder" % path)
    seen, todo = set(), [path]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo += sorted(_script_imports(f) - seen)
    root = os.path.dirname(path)
    h = hashlib.sha256()
    for f in sorted(seen):
        h.update(os.path.relpath(f, root).encode() + b"\0")
        with open(f, "rb") as src:
            h.update(hashlib.sha256(src.read()).digest())
    return h.hexdigest()[:16]


def imported_packages(_=""):
    """The installed distributions behind the top-level modules imported so
    far (the workload's or the script's imports), with their versions, as
    JSON: part of a trial's recorded environment."""
    import importlib.metadata as metadata

    owners = metadata.packages_distributions()
    out = {}
    for name in sorted(sys.modules):
        if "." in name or name.startswith("_"):
            continue
        for dist in owners.get(name, []):
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
    return json.dumps(out, sort_keys=True)


def check_script_flags(arg_json):
    """What is wrong with a script sweep's flag map ("" when nothing) and the
    settings it maps, as JSON {"problem", "mapped"}; arg: {"flags": the
    sweep's value, "settings": name -> allowed value texts}."""
    from . import _script

    arg = json.loads(arg_json)
    problem = _script.check_flags(arg["flags"], arg["settings"])
    mapped = [] if problem else sorted(_script.flag_map(arg["flags"]))
    return json.dumps({"problem": problem, "mapped": mapped})


def create_script(config_json, device, diagnose=False):
    """A script trial: the script config.script names, run up to its first
    reported step (gpusweep._script)."""
    from . import _script

    return _script.Instance(json.loads(config_json), device, settings_table())


def _number(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise TypeError("%s must be a finite number, got %r" % (what, x))
    return float(x)


def manifest_json(spec):
    """The module's MANIFEST as JSON (the plugin adds the common settings)."""
    module, factory = load(spec)
    where = "module '%s'" % split_spec(spec)[0]
    manifest = getattr(module, "MANIFEST", None)
    if manifest is None:
        raise AttributeError("%s has no MANIFEST; define MANIFEST = gpusweep.Manifest(...)" % where)
    if callable(manifest):
        manifest = manifest()
    d = manifest.to_dict() if hasattr(manifest, "to_dict") else manifest
    if not isinstance(d, dict):
        raise TypeError("%s: MANIFEST must be a gpusweep.Manifest or a dict, not %s"
                        % (where, type(d).__name__))
    if not callable(getattr(module, factory, None)):
        raise AttributeError("%s has no function %s(config) that returns the workload"
                             % (where, factory))
    return json.dumps(d)


def create(spec, config_json, device, diagnose=False):
    """The workload, created by the module's factory from the trial's config
    (diagnose: the trial times its phases, Settings.phase)."""
    module, factory = load(spec)
    config = gpusweep.Config(json.loads(config_json), device, bool(diagnose), settings_table())
    workload = getattr(module, factory)(config)
    for method in ("step", "evaluate"):
        if not callable(getattr(workload, method, None)):
            raise TypeError("%s(config) returned %s, which has no %s() method"
                            % (factory, type(workload).__name__, method))
    return Instance(workload, config.settings)


# The common settings' table (sdk/include/gpusweep/common_settings.hpp) as
# JSON: the python plugin sets it when it imports this module.
SETTINGS_TABLE = None


def settings_table():
    """The table's entries, as the python plugin gave them."""
    if SETTINGS_TABLE is None:
        raise RuntimeError("gpusweep._bridge.SETTINGS_TABLE is unset: the python plugin sets it "
                           "from the common settings' table when it imports this module")
    return json.loads(SETTINGS_TABLE)["settings"]


# The markers of an allocation failure in an exception's message, as the C++
# boundary knows them (sdk/include/gpusweep/workload.hpp, kOomMarkers): the
# python plugin sets this list from that one when it imports this module;
# this copy serves a bridge imported without it (its own tests).
OOM_MARKERS = ["can't allocate memory", "out of memory", "_STATUS_ALLOC_FAILED",
               "_ALLOCATION_FAILED"]


class Instance:
    """A live workload and its settings, as the plugin drives it."""

    def __init__(self, workload, settings):
        self.workload, self.settings = workload, settings
        # Called by the plugin, which keeps this attribute: the step itself
        # plus one call to say, during its first steps, whether the settings
        # it set acted (SettingIgnored fails the trial if one did not).
        self._step = workload.step
        self._watching = True
        self.step = self._watched_step
        self._pause = getattr(workload, "pause", None)
        self._resume = getattr(workload, "resume", None)

    def _watched_step(self):
        result = self._step()
        if self._watching:
            self._watching = self.settings._watch.after_step()
        return result

    def pause(self):
        """Between turns and outside measured windows: the SDK's loaders stop
        first, then the module's own pause(), if it has one."""
        self.settings.pause()
        if callable(self._pause):
            self._pause()

    def resume(self):
        """The module's own resume() first, then the SDK's loaders go on."""
        if callable(self._resume):
            self._resume()
        self.settings.resume()

    def evaluate(self):
        metrics = self.workload.evaluate()
        if not isinstance(metrics, dict):
            raise TypeError("evaluate() returned %s; return a dict of metric name to number"
                            % type(metrics).__name__)
        return json.dumps({str(k): _number(v, "evaluate()'s '%s'" % k) for k, v in metrics.items()})

    def stats(self):
        out = dict(self.settings.stats())
        own = getattr(self.workload, "stats", None)
        if callable(own):
            for k, v in (own() or {}).items():
                out[str(k)] = _number(v, "stats()'s '%s'" % k)
        return json.dumps(out)


def describe_exception(exc):
    """(kind, message) for an exception out of the user's code: kind is
    'skipped', 'oom' or 'error'; the message is one line, the exception and
    where it was raised. The whole traceback goes to stderr, the trial's log."""
    if isinstance(exc, gpusweep.Skipped):
        return "skipped", str(exc)
    if isinstance(exc, SystemExit):
        return "error", "the workload called sys.exit(%r)" % (exc.code,)
    if isinstance(exc, KeyboardInterrupt):
        return "error", "the workload was interrupted (KeyboardInterrupt)"
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    sys.stderr.flush()
    headline = traceback.format_exception_only(type(exc), exc)[-1].strip()
    # The innermost frame of the user's code (not this package's).
    ours = os.path.dirname(os.path.abspath(gpusweep.__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.dirname(os.path.abspath(f.filename)) != ours]
    where = ""
    if frames:
        last = frames[-1]
        where = " (at %s:%d in %s)" % (last.filename, last.lineno, last.name)
    # MemoryError, torch's OutOfMemoryError, or a RuntimeError saying so (the
    # CUDA out-of-memory of older torch); a user's own error is not one.
    # LibTorch's CPU allocator ("can't allocate memory", what measure.max_memory
    # triggers on the CPU) and the CUDA libraries' allocation failures too: the
    # markers the C++ boundary knows (sdk/include/gpusweep/workload.hpp).
    if isinstance(exc, ModuleNotFoundError):
        headline += (" (the workload runs in %s's environment: install it there, or set "
                     "GPUSWEEP_PYTHON to the python of an environment that has it, with the same "
                     "torch; docs/your-script.md)" % sys.executable)
    text = str(exc).lower()
    oom = isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or \
        (isinstance(exc, RuntimeError) and any(m.lower() in text for m in OOM_MARKERS))
    return ("oom" if oom else "error"), headline.replace("\n", " ") + where
