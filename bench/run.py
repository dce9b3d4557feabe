#!/usr/bin/env python3
"""The benchmark runner: one command for every case in bench/cases/.

    bench/run.py CASE [--build DIR] [--runs N] [--load] [--smoke] [--out DIR]
    bench/run.py --list

A case file (bench/cases/CASE.json) says what to run and what to read, not
how: the sweeps (inline, or a file of the repository), the overrides each run
gets (`{run}` is the run's number, so each run draws its own order), what to
read after each run (`compare --format json` of a sweep, its rows derived:
ratio, interval, half-width, whether it excludes 1, the verdict), what to
summarise over the runs (a rate with its 95% Wilson interval, a median) and
the goal. The runner runs the case RUNS times, prints a line a run as it
goes, and writes the raw reads (one JSON line a run) and a dated page,
OUT/<date>-<case>.md (OUT: bench/results, or --out). --smoke runs the case
once at its smoke settings into a temporary folder: the test suite does that
for every case, so that none rots.

Case keys: about, goal, runs, smoke {runs, set}, sweeps {NAME: SWEEP or
{"file": PATH}}, set [KEY=VALUE with {run}], read {NAME: {sweep, args,
rows: "others" | "all", one}}, derive {NAME: EXPR}, summaries [{label,
rate | median | max | sum: EXPR, goal}]; a set's {EXPR} is an expression of
run. An EXPR is Python over the run's reads
(a read with "one" is its row, else its list of rows; each row's fields as
attributes), the derived values and wall (each sweep's seconds).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from wilson import wilson  # noqa: E402


class Row(dict):
    """A compare row, its fields also attributes, with what the cases read of it."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def derive_row(r):
    row = Row(r)
    low, high, ratio = r.get("ci_low"), r.get("ci_high"), r.get("ratio")
    has = low is not None and high is not None and ratio
    row["half_width_pct"] = 50 * (high - low) / ratio if has else None
    row["excludes_one"] = bool(has and (low > 1 or high < 1))
    verdict = r.get("verdict") or ""
    row["called"] = verdict in ("faster", "slower")
    row["slower"] = verdict == "slower"
    row["faster"] = verdict == "faster"
    return row


def load_case(name):
    path = name if name.endswith(".json") else os.path.join(HERE, "cases", name + ".json")
    if not os.path.exists(path):
        sys.exit("bench/run.py: no case %s (bench/run.py --list names them)" % path)
    with open(path) as f:
        case = json.load(f)
    for key in ("sweeps", "read", "summaries"):
        if key not in case:
            sys.exit("%s: a case needs \"%s\"" % (path, key))
    case["name"] = os.path.splitext(os.path.basename(path))[0]
    return case


def sweep_files(case, work):
    """Each sweep's file and the name it runs under: {key: (path, name)}."""
    files = {}
    for key, sweep in case["sweeps"].items():
        if "file" in sweep:
            path = os.path.join(HERE, "..", sweep["file"])
            with open(path) as f:
                files[key] = (path, json.load(f)["name"])
            continue
        files[key] = (os.path.join(work, key + ".json"), key)
        with open(files[key][0], "w") as f:
            json.dump(dict(sweep, name=key), f)
    return files


def gpusweep(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode not in (0, 1, 3):
        sys.exit("gpusweep %s: exit %d\n%s" % (" ".join(args), done.returncode, done.stderr[-2000:]))
    return done.stdout


def one_run(case, binary, files, work, run, sets):
    db = os.path.join(work, "run%d.db" % run)
    wall = {}
    for name, (path, _) in files.items():
        args = ["run", path, "--db", db]
        for s in sets:
            # {run}, or an expression of it ({run * 1000}).
            args += ["--set", re.sub(r"\{([^}]*)\}", lambda m: str(eval(m.group(1), {"run": run})), s)]
        t0 = time.monotonic()
        gpusweep(binary, *args)
        wall[name] = time.monotonic() - t0
    reads = {}
    for name, spec in case["read"].items():
        sweep = files[spec["sweep"]][1]
        out = gpusweep(binary, "compare", sweep, "--db", db, "--format", "json", *spec.get("args", []))
        rows = [derive_row(r) for r in json.loads(out)]
        if spec.get("rows", "others") == "others":
            rows = [r for r in rows if not r.get("baseline")]
        reads[name] = rows
    os.remove(db)
    return {"run": run, "wall": wall, "reads": reads}


def namespace(case, record):
    ns = {"wall": Row(record["wall"]), "median": statistics.median, "max": max, "min": min}
    for name, rows in record["reads"].items():
        rows = [Row(r) for r in rows]
        ns[name] = (rows[0] if rows else Row()) if case["read"][name].get("one") else rows
    for name, expr in case.get("derive", {}).items():
        ns[name] = eval(expr, dict(ns))  # noqa: S307 - the repository's own case files
    return ns


def summarise(case, records):
    lines = []
    spaces = [namespace(case, record) for record in records]  # the derived values, once a run
    for s in case["summaries"]:
        kind = next(k for k in ("rate", "median", "max", "sum") if k in s)
        values = []
        for ns in spaces:
            v = eval(s[kind], ns)  # noqa: S307
            values.extend(v if isinstance(v, list) else [v])
        values = [v for v in values if v is not None]
        if kind == "rate":
            k, n = sum(bool(v) for v in values), len(values)
            p, lo, hi = wilson(k, n)
            text = "%d of %d (%.1f%%, 95%% Wilson interval [%.1f%%, %.1f%%])" % (
                k, n, 100 * p, 100 * lo, 100 * hi)
        elif not values:
            text = "none"
        else:
            v = {"median": statistics.median, "max": max, "sum": sum}[kind](values)
            text = "%.3g" % v
        lines.append((s["label"], text, s.get("goal", "")))
    return lines


def page(case, args, records, lines, started):
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    out = ["# %s (%s)" % (case["name"], started.strftime("%Y-%m-%d %H:%M UTC")), "",
           case.get("about", ""), "",
           "`bench/run.py %s --runs %d%s`, gpusweep %s, %s (%d cores)%s." % (
               case["name"], len(records), " --load" if args.load else "", commit,
               platform.node(), os.cpu_count(), ", a noisy neighbour beside it" if args.load else ""),
           "", "| what | figure | goal |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % line for line in lines]
    out += ["", "Goal: %s" % case.get("goal", "(none)"), ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", nargs="?")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--runs", type=int)
    ap.add_argument("--load", action="store_true", help="a noisy neighbour beside the runs")
    ap.add_argument("--smoke", action="store_true", help="once, at the case's smoke settings")
    ap.add_argument("--out", help="where the page and the raw reads go (bench/results)")
    ap.add_argument("--list", action="store_true", help="the cases and what each measures")
    args = ap.parse_args()
    if args.list or not args.case:
        for name in sorted(os.listdir(os.path.join(HERE, "cases"))):
            if name.endswith(".json"):
                with open(os.path.join(HERE, "cases", name)) as f:
                    print("%-22s %s" % (name[:-5], json.load(f).get("about", "").split(". ")[0]))
        return
    case = load_case(args.case)
    binary = os.path.join(os.path.abspath(args.build), "gpusweep")
    smoke = case.get("smoke", {}) if args.smoke else {}
    runs = args.runs or (smoke.get("runs", 1) if args.smoke else case.get("runs", 10))
    sets = case.get("set", []) + smoke.get("set", [])
    work = tempfile.mkdtemp(prefix="bench-%s-" % case["name"])
    out_dir = args.out or (os.path.join(work, "out") if args.smoke else os.path.join(HERE, "results"))
    os.makedirs(out_dir, exist_ok=True)
    neighbour = None
    if args.load:
        neighbour = subprocess.Popen([os.path.join(HERE, "neighbour.sh"), "1"], start_new_session=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    stem = os.path.join(out_dir, "%s-%s" % (started.strftime("%Y-%m-%d"), case["name"]))
    records = []
    try:
        files = sweep_files(case, work)
        with open(stem + ".jsonl", "w") as raw:
            for run in range(1, runs + 1):
                record = one_run(case, binary, files, work, run, sets)
                records.append(record)
                raw.write(json.dumps(record) + "\n")
                raw.flush()
                walls = ", ".join("%s %.0f s" % kv for kv in record["wall"].items())
                print("run %d of %d: %s" % (run, runs, walls), flush=True)
    finally:
        if neighbour:
            os.killpg(neighbour.pid, signal.SIGTERM)
    lines = summarise(case, records)
    for label, text, goal in lines:
        print("%-40s %s%s" % (label, text, "   (goal: %s)" % goal if goal else ""))
    with open(stem + ".md", "w") as f:
        f.write(page(case, args, records, lines, started))
    shutil.rmtree(work)  # the sweep files; and a smoke run's page, which is no result
    if os.path.exists(stem + ".md"):
        print("wrote %s.md and %s.jsonl" % (stem, stem))


if __name__ == "__main__":
    main()
