"""The Python SDK's common settings come from the table
(sdk/include/gpusweep/common_settings.hpp), read from `gpusweep settings
--format json` as the python plugin hands it over: fails when the SDK reads a
setting the table lacks, when a setting of the table is not an attribute at
its default, when a value outside the table's range is taken, or when the
SDK's Supports flags or their defaults differ from the table's.

usage: python_settings_test.py GPUSWEEP SDK_DIR
"""
import ast
import inspect
import json
import subprocess
import sys
import textwrap

gpusweep_bin, sdk_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sdk_dir)
import gpusweep  # noqa: E402

table = json.loads(subprocess.run([gpusweep_bin, "settings", "--format", "json"], check=True,
                                  capture_output=True, text=True).stdout)
entries = table["settings"]
names = {e["name"] for e in entries}
failures = []

# Every setting is an attribute at the table's default (device: the trial's).
settings = gpusweep.Settings({}, "cpu", False, entries)
for e in entries:
    if e["name"] == "device":
        continue
    if not hasattr(settings, e["name"]):
        failures.append("Settings has no attribute %s" % e["name"])
    elif getattr(settings, e["name"]) != e["default"]:
        failures.append("Settings.%s is %r, the table's default %r"
                        % (e["name"], getattr(settings, e["name"]), e["default"]))


def refused(name, value):
    try:
        gpusweep.Settings({name: value}, "cpu", False, entries)
    except ValueError as exc:
        return name in str(exc)
    return False


# The table's ranges and values: the ends taken, a step beyond refused.
for e in entries:
    name = e["name"]
    if name == "device":
        continue
    for value in e.get("choices", []):
        if getattr(gpusweep.Settings({name: value}, "cpu", False, entries), name) != value:
            failures.append("%s=%r is one of the table's values but was not taken" % (name, value))
    if "choices" in e and not refused(name, "no-such-value"):
        failures.append("%s='no-such-value' is not among the table's values but was taken" % name)
    if "min" in e and e["type"] == "int":
        if not refused(name, int(e["min"]) - 1):
            failures.append("%s=%d is below the table's minimum but was taken" % (name, e["min"] - 1))
        if not refused(name, int(e["max"]) + 1):
            failures.append("%s=%d is above the table's maximum but was taken" % (name, e["max"] + 1))
    if e["type"] == "bool" and not refused(name, 1):
        failures.append("%s=1 is not a bool but was taken" % name)

# Supports: the table's flags with their defaults (data_parallel is not yet
# for Python workloads; compile and reason are the SDK's own).
params = inspect.signature(gpusweep.Supports.__init__).parameters
sdk_flags = {k: p.default for k, p in params.items() if k not in ("self", "compile", "reason")}
table_flags = {f["name"]: f["default"] for f in table["supports"] if f["name"] != "data_parallel"}
if sdk_flags != table_flags:
    failures.append("gpusweep.Supports' flags %s differ from the table's %s"
                    % (sorted(sdk_flags.items()), sorted(table_flags.items())))

# What the SDK's Settings read of itself: its methods, its own attributes,
# or a setting of the table, nothing else.
tree = ast.parse(textwrap.dedent(inspect.getsource(gpusweep.Settings)))
read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name) and n.value.id == "self"}
own = {m for m in dir(gpusweep.Settings) if not m.startswith("__")}
own |= {"device", "diagnose", "compile", "compile_mode", "loss_reads", "last_loss"}
unknown = sorted(a for a in read - own - names if not a.startswith("_"))
if unknown:
    failures.append("Settings reads %s: not in the common settings' table (add an entry there) "
                    "nor one of the SDK's own attributes" % ", ".join(unknown))
if not read & names:
    failures.append("Settings reads no setting of the table at all: the check above saw nothing")

for f in failures:
    print("FAIL:", f)
print("%d settings, %d flags checked; %d failures" % (len(entries), len(table_flags), len(failures)))
sys.exit(1 if failures else 0)
