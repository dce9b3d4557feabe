"""The exceptions a workload raises or the SDK raises for it."""


class Skipped(Exception):
    """This configuration cannot apply here; the message is the reason shown."""


class SettingIgnored(Exception):
    """A setting the trial set did nothing in its first steps (grad_accum=4
    and one backward pass a step): the trial fails with what was seen and
    the fix, rather than report numbers of a configuration that never ran."""


# Shown by their public name (gpusweep.Skipped) in tracebacks and trial errors.
Skipped.__module__ = SettingIgnored.__module__ = "gpusweep"
