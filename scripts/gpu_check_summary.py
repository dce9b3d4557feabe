#!/usr/bin/env python3
"""The summary of `gpu-check.sh --quick`: one table each for the GPU tests'
verdicts, each sweep's ratios, each workload's diagnosis and the quickstart's
precision, from what the run left in OUT.

Usage: gpu_check_summary.py GPUSWEEP_BIN OUT "WORKLOADS"
"""
import json
import os
import re
import statistics
import subprocess
import sys


def table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)] if rows else [
        len(h) for h in headers]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def compare_rows(binary, db, sweep):
    """compare --format json's rows of a sweep, or an error text."""
    r = subprocess.run([binary, "compare", "--db", db, "--sweep", sweep, "--format", "json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["compare failed"])[-1]
    doc = json.loads(r.stdout)
    rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
    return rows, ""


def grid_keys(sweep_file):
    """The settings a sweep file varies (compare's rows carry them by name)."""
    try:
        return list(json.load(open(sweep_file)).get("grid", {}))
    except (OSError, ValueError):
        return []


def config_label(row, keys):
    named = [f"{k}={row[k]}" for k in keys if k in row]
    return ", ".join(named) if named else "#" + str(row.get("config", "?"))


def ratio_text(row):
    ratio = row.get("ratio")
    if ratio is None:  # the baseline, or a config without a ratio (skipped, failed)
        return "baseline" if row.get("verdict") == "baseline" else "-"
    low, high = row.get("ci_low"), row.get("ci_high")
    ci = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"{ratio:.3f}x{ci}"


def tests_section(out):
    log = os.path.join(out, "ctest.log")
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    if not text.strip():
        return "GPU tests: not run (--no-tests)"
    rows = []
    for m in re.finditer(r"Test\s+#\d+:\s+(\S+)\s+\.+\s*([^\n]*?)\s+[\d.]+ sec", text):
        verdict = m.group(2).strip().replace("*", "").strip() or "?"
        rows.append((m.group(1), verdict))
    summary = re.search(r"\d+% tests passed.*", text)
    head = "GPU tests (ctest -L gpu): " + (summary.group(0) if summary else "no ctest summary")
    return head + "\n" + table(["test", "verdict"], rows)


def sweeps_section(binary, out, workloads):
    rows = []
    db = os.path.join(out, "gpu-check.db")
    for w in workloads:
        for name in (f"quick_{w}", f"graphs_{w}"):
            data, error = compare_rows(binary, db, name) if os.path.exists(db) else (None, "no db")
            if data is None:
                rows.append((w, "-", error[:80]))
                continue
            keys = grid_keys(os.path.join(out, name + ".json"))
            for row in data:
                rows.append((w, config_label(row, keys), ratio_text(row) + (
                    f"  {row['verdict']}" if row.get("verdict") else "")))
    return "Sweeps (throughput ratio to the baseline, 95% CI)\n" + table(
        ["workload", "config", "ratio"], rows)


def diagnose_section(out, workloads):
    rows = []
    for w in workloads:
        path = os.path.join(out, f"diagnose_{w}.json")
        try:
            d = json.load(open(path))
        except (OSError, ValueError):
            rows.append((w, "-", "-", "-", "no diagnosis (see diagnose_%s.log)" % w))
            continue
        if "error" in d:
            rows.append((w, "-", "-", "-", d["error"]))
            continue
        busy = d.get("device_busy_share")
        rows.append((w, d.get("device", "?"), f"{d['step_time_s'] * 1e3:.2f} ms",
                     "-" if busy is None else f"{100 * busy:.0f}%", d.get("bottleneck", "?")))
    return "Diagnoses\n" + table(["workload", "device", "step", "device busy", "bottleneck"],
                                 rows)


def quickstart_section(binary, out):
    db = os.path.join(out, "quickstart.db")
    wall = open(os.path.join(out, "quickstart_wall_s.txt")).read().strip() if os.path.exists(
        os.path.join(out, "quickstart_wall_s.txt")) else "?"
    if not os.path.exists(db):
        return "Quickstart: no database (see quickstart.log)"
    data, error = compare_rows(binary, db, "quickstart")
    if data is None:
        return "Quickstart: " + error
    widths = []
    rows = []
    keys = grid_keys(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments",
                                  "quickstart.json"))
    for row in data:
        if row.get("ratio") is not None and row.get("ci_low") is not None:
            widths.append(100 * (row["ci_high"] - row["ci_low"]) / 2 / row["ratio"])
        rows.append((config_label(row, keys), ratio_text(row), row.get("verdict", "")))
    median = f"{statistics.median(widths):.1f}%" if widths else "-"
    return (f"Quickstart (as shipped): {wall} s, median half-width {median}\n" +
            table(["config", "ratio", "verdict"], rows))


def main():
    binary, out, workloads = sys.argv[1], sys.argv[2], sys.argv[3].split()
    print("\n==== gpu-check --quick summary ====\n")
    for section in (tests_section(out), sweeps_section(binary, out, workloads),
                    diagnose_section(out, workloads), quickstart_section(binary, out)):
        print(section + "\n")


if __name__ == "__main__":
    main()
