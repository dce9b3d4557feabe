"""GradStep: a training step's back half over grad_accum micro-batches, as
torchkit's (exported as gpusweep.GradStep)."""


class GradStep:
    """One optimiser step over grad_accum micro-batches, as torchkit's
    GradStep: backward(loss) for each micro-batch, then step().

        self.train = gpusweep.GradStep(s, torch.optim.Adam(model.parameters()))
        ...
        for _ in range(s.grad_accum):
            x, y = (s.to_device(t) for t in next(self.batches))
            with s.phase("forward"), s.autocast():
                out = model(x)
            self.train.backward(loss_fn(out.float(), y))
        self.train.step()
        return s.batch_size * s.grad_accum

    It brings the fp16 loss scaler (s.grad_scaler(): a no-op at fp32 and
    bf16), clears the gradients after each step as zero_grad_to_none says,
    reads the step's last loss back every sync_every steps (observe_loss;
    under cuda_graphs call s.observe_loss after s.graphed instead) and times
    the backward and optimizer phases for `gpusweep diagnose`."""

    def __init__(self, settings, optimizer):
        self.settings, self.optimizer = settings, optimizer
        self.scaler = settings.grad_scaler()
        self.micro_batches = self.optimizer_steps = 0
        self._loss = None
        settings._watch.parameters(p for g in optimizer.param_groups for p in g["params"])

    def backward(self, loss):
        """Backpropagates one micro-batch's mean loss divided by grad_accum, so
        that the accumulated gradient is that of one batch grad_accum times
        larger (times the loss scale at fp16)."""
        s = self.settings
        with s.phase("backward"):
            self.scaler.scale(loss / s.grad_accum if s.grad_accum > 1 else loss).backward()
        self._loss = loss
        self.micro_batches += 1

    def step(self):
        """Steps the optimiser (fp16: unscaled, skipped where a gradient is not
        finite), updates the loss scale, clears the gradients, and passes the
        last micro-batch's loss to observe_loss."""
        s = self.settings
        with s.phase("optimizer"):
            self.scaler.step(self.optimizer)
            self.scaler.update()
        s.zero_grad(self.optimizer)
        self.optimizer_steps += 1
        if self._loss is not None and not s._in_graphed:
            s.observe_loss(self._loss)
        self._loss = None


GradStep.__module__ = "gpusweep"
