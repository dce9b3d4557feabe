"""The Python SDK's cuda_graphs on the CPU: Settings.graphed's dry run refuses a
step that reads a value on the host (observe_loss inside it), a clean step is
then refused on the CPU with the reason after running once, fp16 refused (its
GradScaler reads on the host), the step runs as
it is when graphs are off, step_input keeps static copies (a changed shape
refused), and gradients are zeroed in place under graphs. Capture and replay
need a GPU (tests/gpu/cuda_graphs_test.sh for the C++ workloads).

usage: python_graphs_test.py GPUSWEEP SDK_DIR
"""
import json
import subprocess
import sys

gpusweep_bin, sdk_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sdk_dir)
import gpusweep  # noqa: E402
import torch  # noqa: E402

table = json.loads(subprocess.run([gpusweep_bin, "settings", "--format", "json"], check=True,
                                  capture_output=True, text=True).stdout)["settings"]
failures = []


def settings(**config):
    return gpusweep.Settings(config, "cpu", False, table)


def refusal(s, work):
    try:
        s.graphed(work)
    except gpusweep.Skipped as e:
        return str(e)
    return ""


calls = []
loss = torch.ones(1)
on = settings(cuda_graphs=True)
why = refusal(on, lambda: (calls.append(1), on.observe_loss(loss)))
if "reads a device value on the host" not in why or "1 host sync" not in why:
    failures.append("a step reading its loss inside graphed was not refused for it: %r" % why)
if len(calls) != 1:
    failures.append("the dry run ran the step %d times, not once" % len(calls))
why = refusal(settings(cuda_graphs=True), lambda: calls.append(1))
if why != "cuda_graphs captures CUDA kernels; device is cpu":
    failures.append("a clean step on the CPU: %r" % why)
if len(calls) != 2:
    failures.append("the clean step's dry run did not run it")
# fp16: torch.amp.GradScaler decides on the host whether to skip each
# update; refused before the step runs.
why = refusal(settings(cuda_graphs=True, precision="fp16"), lambda: calls.append(1))
if "precision=fp16" not in why or "GradScaler" not in why:
    failures.append("fp16 under graphs was not refused for its scaler: %r" % why)
if len(calls) != 2:
    failures.append("the fp16 step ran before its refusal")

off = settings()
for _ in range(5):
    if off.graphed(lambda: calls.append(1) or 7) != 7:
        failures.append("graphs off: graphed did not return the step's value")
    off.observe_loss(loss)  # allowed anywhere: nothing is captured
if len(calls) != 7:
    failures.append("graphs off: the step ran %d times in 5 calls" % (len(calls) - 2))
batch = torch.arange(4.0)
if off.step_input(0, batch) is not batch:
    failures.append("graphs off: step_input copied the batch")

first = on.step_input(0, torch.arange(4.0))
second = on.step_input(0, torch.arange(4.0) * 10)
if first.data_ptr() != second.data_ptr() or first[3].item() != 30.0:
    failures.append("step_input did not copy into one static tensor")
try:
    on.step_input(0, torch.arange(5.0))
    failures.append("step_input took a batch of another shape")
except gpusweep.Skipped as e:
    if "changed from [4]" not in str(e):
        failures.append("a changed shape's reason: %s" % e)

for graphs, expect_none in ((False, True), (True, False)):
    s = settings(cuda_graphs=graphs)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 3)).sum().backward()
    s.zero_grad(opt)
    if (model.weight.grad is None) != expect_none:
        failures.append("cuda_graphs=%s: zero_grad left grad %r" % (graphs, model.weight.grad))
if settings(cuda_graphs=True).stats().get("zero_grad_in_place") != 1:
    failures.append("the stats do not say gradients are zeroed in place")

for f in failures:
    print("FAIL: " + f)
print("PASS" if not failures else "%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
