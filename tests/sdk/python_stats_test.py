"""The stats the Python SDK reports under names gpusweep reads are the
table's (sdk/include/gpusweep/stat_names.hpp, read from `gpusweep stats
--reported --format json`): a Settings that times every phase, reads the
host, draws batches and runs under cuda_graphs reports each stat the table
says the Python SDK reports, under the table's name; and no stat it reports
looks like one of the table's (a phase, a sync count, a wait) without being
one. Fails when either side renames a stat the other reads.

usage: python_stats_test.py GPUSWEEP SDK_DIR
"""
import json
import subprocess
import sys

gpusweep_bin, sdk_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sdk_dir)
import gpusweep  # noqa: E402
import torch  # noqa: E402


def listing(*args):
    return json.loads(subprocess.run([gpusweep_bin, *args, "--format", "json"], check=True,
                                     capture_output=True, text=True).stdout)


table = listing("stats", "--reported")
settings_table = listing("settings")["settings"]
names = {r["name"] for r in table}
# What the Settings object reports (a script's own flops_per_step aside).
by_settings = {r["name"] for r in table if "Python SDK" in r["by"] and "scripts" not in r["by"]}
failures = []

s = gpusweep.Settings({"cuda_graphs": True, "batch_size": 2}, "cpu", True, settings_table)
for phase in gpusweep.PHASES:
    with s.phase(phase):
        pass
s.observe_loss(torch.ones(1))
data = torch.utils.data.TensorDataset(torch.zeros(8, 3))
batches = s.loader(data)
next(batches)
stats = s.stats()

for name in sorted(by_settings):
    if name not in stats:
        failures.append("the table says the Python SDK reports %s; Settings.stats() has %s"
                        % (name, sorted(stats)))
looks_read = [k for k in stats
              if k.startswith("phase_") or k.endswith("_syncs") or k.endswith("_wait_s")
              or k.startswith("cuda_graphs")]
for name in looks_read:
    if name not in names:
        failures.append("Settings.stats() reports %s, which the table lacks: the host does not "
                        "read it" % name)
phase_stats = [n for n in (r["name"] for r in table) if n.startswith("phase_")]
if ["phase_%s_s" % p for p in gpusweep.PHASES] != phase_stats:
    failures.append("the SDK's PHASES %s are not the table's phases %s"
                    % (list(gpusweep.PHASES), phase_stats))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("the Python SDK's %d reported stats follow the table (%d entries)"
      % (len(by_settings), len(table)))
