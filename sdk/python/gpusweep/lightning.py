"""gpusweep's one line for a Lightning Trainer:
`Trainer(..., callbacks=[gpusweep.lightning.Callback()])`. Under gpusweep it
reports each optimiser step and the metrics validation logs (val_loss ...),
and sets trainer.should_stop once the trial's measurement is done; outside
gpusweep it does nothing."""
try:
    import lightning as _L
except ImportError:  # the older package name
    import pytorch_lightning as _L

from . import _script


def _samples_of(batch):
    """The batch dimension of a batch's first tensor (a tensor, a tuple or
    list of them, or a dict)."""
    if hasattr(batch, "shape") and getattr(batch, "shape", None):
        return int(batch.shape[0])
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for b in batch:
            n = _samples_of(b)
            if n:
                return n
    return 0


class Callback(_L.Callback):
    """Reports each optimiser step (trainer.global_step moved) with the
    samples of the batches it took, and validation's logged metrics."""

    def __init__(self):
        self._samples = 0
        self._step = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._samples += _samples_of(batch)
        if self._step is None:
            self._step = 0
        if trainer.global_step == self._step:
            return  # a micro-batch of gradient accumulation: no optimiser step yet
        self._step = trainer.global_step
        samples, self._samples = self._samples, 0
        if _script.handoff(samples or None, None):
            trainer.should_stop = True

    def on_validation_end(self, trainer, pl_module):
        if trainer.sanity_checking:
            return
        for name, value in trainer.callback_metrics.items():
            try:
                _script.report_quality(name, float(value))
            except (TypeError, ValueError):
                continue
