"""What a trial's first steps did with the settings it set (_Watch), observed
rather than taken on trust; the SDK's Settings holds one."""

from ._errors import SettingIgnored


# Steps watched before the settings are judged: the first can be unlike the
# rest (torch.compile's, lazy state), and a verdict must come within the
# shortest warmup and `plugins --check`'s five steps.
WATCHED_STEPS = 2


class _Watch:
    """What a trial's first WATCHED_STEPS steps did with the settings it set,
    observed rather than taken on trust: backward passes counted by hooks on
    the prepared model's parameters (they fire once per backward that reaches
    a parameter, whoever calls backward), the prepared weights' memory format,
    and the SDK's calls that apply the rest. The bridge calls after_step();
    at the end of the watch the hooks go and a setting that did nothing fails
    the trial (SettingIgnored)."""

    def __init__(self, settings):
        self.s = settings
        self.handles = []
        self.seen = set()    # ids of the watched parameters
        self.counts = []     # hook calls this step, per watched parameter
        self.forwards = []   # prepared models' forward calls this step: autocast on or off
        self.steps = []      # per watched step: what it did
        self.last = dict(settings._calls)
        self.batches = self.graph_calls = 0
        self.done = False
        self.observed = {}   # for stats()

    def parameters(self, params):
        for p in params:
            if self.done or id(p) in self.seen or not getattr(p, "requires_grad", False):
                continue
            self.seen.add(id(p))
            i = len(self.counts)
            self.counts.append(0)

            def counted(_, i=i):
                self.counts[i] += 1
            self.handles.append(p.register_post_accumulate_grad_hook(counted))

    def forward(self, model):
        # A hook inside a compiled module would be traced into its graph
        # (and its removal recompile it): under compile, s.autocast()'s
        # calls alone say whether the forward ran under autocast.
        if self.done or self.s.compile or not hasattr(model, "register_forward_pre_hook"):
            return
        torch = self.s._torch
        kind = self.s.device.type

        def entered(*_):
            self.forwards.append(torch.is_autocast_enabled(kind))
        self.handles.append(model.register_forward_pre_hook(entered))

    def after_step(self):
        """Called after each step; raises SettingIgnored at the end of the
        watch when a setting the trial set did nothing. Returns whether it
        still watches."""
        if self.done:
            return False
        s = self.s
        calls = {k: v - self.last[k] for k, v in s._calls.items()}
        self.last = dict(s._calls)
        drawn = sum(getattr(b, "batches", 0) for b in s._batches)
        self.steps.append(dict(calls, batches=drawn - self.batches,
                               passes=max(self.counts) if self.counts else None,
                               autocast_forward=any(self.forwards),
                               graphed=s._graph_calls - self.graph_calls))
        self.batches, self.graph_calls = drawn, s._graph_calls
        self.counts[:] = [0] * len(self.counts)
        self.forwards.clear()
        if len(self.steps) < WATCHED_STEPS:
            return True
        self.done = True
        for h in self.handles:
            h.remove()
        self.handles.clear()
        problems = self.problems()
        if problems:
            raise SettingIgnored("; also ".join(problems))
        return False

    def weights(self):
        """(4-D weights of the prepared models, how many are channels-last)."""
        torch = self.s._torch
        params = {id(p): p for m in self.s._models for p in m.parameters()}.values()
        four = [p for p in params if p.dim() == 4]
        return len(four), sum(p.is_contiguous(memory_format=torch.channels_last) for p in four)

    def problems(self):
        """What each setting the trial set was seen to do, as problems
        "NAME=VALUE did nothing: what was seen; fix: how"."""
        s, steps, out = self.s, self.steps, []
        n = len(steps)
        passes = [st["passes"] for st in steps]
        if passes[-1] is not None:
            self.observed["backward_passes_per_step"] = passes[-1]
        self.observed["zero_grad_calls_per_step"] = steps[-1]["zero_grad"]
        four, last = self.weights()
        self.observed["weights_4d"], self.observed["channels_last_weights"] = four, last

        def ignored(name, seen, fix):
            v = getattr(s, name)
            v = ("true" if v else "false") if isinstance(v, bool) else v
            out.append("%s=%s did nothing: %s; fix: %s" % (name, v, seen, fix))

        def changed(name):
            return getattr(s, name) != s._defaults.get(name)

        def first_without(key):
            return next((i + 1 for i, st in enumerate(steps) if not st[key]), None)

        g = s.grad_accum
        if g > 1 and not self.seen:
            ignored("grad_accum", "no backward pass could be counted, as no model went through "
                    "s.prepare(model) and no optimiser through gpusweep.GradStep",
                    "build the model with s.prepare(model)")
        elif g > 1 and any(p is None or p < g or p % g for p in passes):
            ignored("grad_accum", "the first %d steps ran %s backward pass(es) each on the "
                    "model's parameters, not %d (one per micro-batch)"
                    % (n, ", ".join(str(p or 0) for p in passes), g),
                    "run grad_accum micro-batches a step (for _ in range(s.grad_accum)), each "
                    "loss through gpusweep.GradStep's backward(loss), then its step(), and "
                    "return batch_size * grad_accum samples")
        if s.channels_last and not s._models:
            ignored("channels_last", "no model went through s.prepare(model), which lays its "
                    "4-D weights out channels-last", "build the model with s.prepare(model)")
        elif s.channels_last and four == 0:
            ignored("channels_last", "the prepared model has no 4-D weights (no convolution) "
                    "to lay out", "declare Supports(channels_last=False, reason=...)")
        elif s.channels_last and last < four:
            ignored("channels_last", "%d of the prepared model's %d 4-D weights are not "
                    "channels-last after %d steps" % (four - last, four, n),
                    "change no layout after s.prepare(model) (a .contiguous(), a layer added "
                    "later)")
        if changed("zero_grad_to_none") and not s.cuda_graphs and first_without("zero_grad"):
            ignored("zero_grad_to_none", "step %d cleared no gradients through "
                    "s.zero_grad(optimizer) or gpusweep.GradStep" % first_without("zero_grad"),
                    "clear them with gpusweep.GradStep or s.zero_grad(optimizer) "
                    "(optimizer.zero_grad() ignores the setting)")
        loader = next((k for k in ("loader_workers", "prefetch", "pin_memory") if changed(k)),
                      None)
        workers = [w for w in (getattr(getattr(b, "_iterable", None), "num_workers", None)
                               for b in s._batches) if w is not None]
        if loader and not any(st["batches"] for st in steps):
            ignored(loader, "no batch came from s.loader(dataset) or s.track(batches) in the "
                    "first %d steps" % n,
                    "draw the step's batches with next() of s.loader(dataset)")
        elif loader == "loader_workers" and workers and s.loader_workers not in workers:
            ignored(loader, "the tracked DataLoader has num_workers=%d" % workers[0],
                    "build it with s.loader(dataset), which sets it")
        if changed("non_blocking") and s.device.type == "cuda" and first_without("to_device"):
            ignored("non_blocking", "step %d copied nothing with s.to_device(tensor)"
                    % first_without("to_device"), "copy the batch with s.to_device(tensor)")
        if changed("sync_every") and first_without("observe_loss"):
            ignored("sync_every", "step %d passed no loss to s.observe_loss(loss) or "
                    "gpusweep.GradStep" % first_without("observe_loss"),
                    "pass it to s.observe_loss(loss) (a loss.item() of the step's own reads "
                    "every step, whatever the setting)")
        no_autocast = next((i + 1 for i, st in enumerate(steps)
                            if not st["autocast"] and not st["autocast_forward"]), None)
        if s.amp_dtype is not None and no_autocast:
            ignored("precision", "step %d ran no forward pass under s.autocast()" % no_autocast,
                    "wrap the forward pass and loss in `with s.autocast():`")
        if s.cuda_graphs and first_without("graphed"):
            ignored("cuda_graphs", "step %d ran no device work through s.graphed(...)"
                    % first_without("graphed"),
                    "run the step's device work as s.graphed(lambda: ...)")
        return out

    def stats(self):
        return dict(self.observed)
