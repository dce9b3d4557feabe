"""gpusweep's one line for a transformers Trainer:
`Trainer(..., callbacks=[gpusweep.hf.Callback()])` (or
`trainer.add_callback(gpusweep.hf.Callback())`). Under gpusweep it reports
each optimiser step and the Trainer's evaluation metrics, and stops training
once the trial's measurement is done; outside gpusweep it does nothing."""
from transformers import TrainerCallback

from . import _script


def _batch_of(args, kwargs):
    """(samples, tokens) of one forward call: the batch dimension and the
    element count of input_ids, else of the first tensor argument."""
    x = kwargs.get("input_ids")
    if x is None:
        x = next((a for a in list(args) + list(kwargs.values()) if hasattr(a, "shape")), None)
    if x is None or not getattr(x, "shape", None):
        return 0, 0
    return int(x.shape[0]), int(x.numel()) if x.dim() >= 2 else 0


class Callback(TrainerCallback):
    """Reports each optimiser step (the samples and tokens its forward
    passes took), the Trainer's evaluation metrics (eval_loss ...), and sets
    control.should_training_stop when the trial is done."""

    def __init__(self):
        self._samples = self._tokens = 0
        self._hook = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if model is not None and self._hook is None and _script.CURRENT is not None:
            self._hook = model.register_forward_pre_hook(self._forward, with_kwargs=True)

    def _forward(self, module, args, kwargs):
        if module.training:
            samples, tokens = _batch_of(args, kwargs)
            self._samples += samples
            self._tokens += tokens

    def on_step_end(self, args, state, control, **kwargs):
        samples, tokens = self._samples, self._tokens
        self._samples = self._tokens = 0
        if _script.handoff(samples or None, tokens or None):
            control.should_training_stop = True
        return control

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        for name, value in (metrics or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                _script.report_quality(name, value)

    def on_train_end(self, args, state, control, **kwargs):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
