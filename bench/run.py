#!/usr/bin/env python3
"""The benchmark runner: one command for every case in bench/cases/.

    bench/run.py CASE [--build DIR] [--runs N] [--load | --drift] [--smoke]
                      [--out DIR] [--param NAME=VALUE ...] [-- ARGS ...]
    bench/run.py --list

A case file (bench/cases/CASE.json) is of one of two kinds.

A sweep case ("kind": "sweeps", the default) says what to run and what to
read, not how: the sweeps (inline, or a file of the repository, patched),
the overrides each run gets (`{run}` is the run's number, so each run draws
its own order), what to read after each run (`compare --format json` of a
sweep, its rows derived: ratio, interval, half-width, whether it excludes 1,
the verdict; or `best`, `export`, `results`, `sql`), what to summarise over
the runs (a rate with its 95% Wilson interval, a median) and the goal. The
runner runs the case RUNS times (each run every point of the matrix, if
any: a table a row a point), prints a line a run as it goes, and writes the
raw reads (one JSON line a run and point) and a dated page,
OUT/<date>-<case>.md (OUT: bench/results, or --out).

A program case ("kind": "program") runs one command, its logic its own (a
simulation, a script): COMMAND, then ARGS (after `--`); the page keeps its
output. Exit 77 is "skipped" (no GPU, a missing tool), and the runner exits
77 too; a program of the build that is missing is a failure, not a skip.

--smoke runs the case once at its smoke settings into a temporary folder:
the test suite does that for every case, so that none rots.

Sweep case keys: about, goal, runs, params {NAME: VALUE}, matrix {NAME:
[VALUES]}, alternate (even runs run the sweeps in reverse order), smoke
{runs, set, patch, params, matrix}, sweeps {NAME: SWEEP or {"file": PATH,
"patch": MERGE_PATCH, "build": DIR}}, set [KEY=VALUE], read {NAME: {sweep,
command (compare), args, rows: "others" | "all", one}}, derive {NAME:
EXPR}, summaries [{label, rate | median | min | max | sum | of_runs: EXPR,
format, goal}].
Program case keys: kind, about, goal, command [ARG], needs [PATH or
[COMMAND]], env {NAME: VALUE}, params, smoke {args, env, params, ok: [the
exits that pass at the smoke size, e.g. 1: a goal missed]}.
A string's {EXPR} is a Python expression of run, the matrix point's values,
the params, build, here (bench/), root and work (a temporary folder); a
string that is one {EXPR} takes its value's type. --param NAME=VALUE (VALUE
JSON, or a string) sets a param or a matrix axis. A summary's EXPR is
Python over the run's reads (a read with "one" is its row, else its list of
rows; each row's fields as attributes), the derived values, wall (each
sweep's seconds) and the point's values; of_runs's over runs (the list of
those, a run's values as attributes).
"""
import argparse
import datetime
import itertools
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from wilson import rate  # noqa: E402

SKIPPED = 77  # what ctest's SKIP_RETURN_CODE and the scripts call skipped
KINDS = ("rate", "median", "min", "max", "sum", "of_runs")
# What a summary reduces its values with, and what its expressions may call.
REDUCERS = {"median": statistics.median, "min": min, "max": max, "sum": sum}


class Row(dict):
    """A row read, its fields also attributes, with what the cases read of it."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def rows_of(value):
    """JSON as Rows: every object a Row, all the way down."""
    if isinstance(value, dict):
        return Row({k: rows_of(v) for k, v in value.items()})
    if isinstance(value, list):
        return [rows_of(v) for v in value]
    return value


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


def fill(value, ns):
    """value with each string's {EXPR} evaluated in ns; "{EXPR}" alone keeps its type."""
    if isinstance(value, dict):
        return {k: fill(v, ns) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, ns) for v in value]
    if not isinstance(value, str):
        return value
    whole = re.fullmatch(r"\{([^{}]*)\}", value)
    if whole:
        return eval(whole.group(1), dict(ns))  # noqa: S307 - the repository's own case files
    return re.sub(r"\{([^{}]*)\}", lambda m: str(eval(m.group(1), dict(ns))), value)  # noqa: S307


def merge(base, patch):
    """base with patch laid over it as a JSON merge patch (RFC 7396: null removes a key)."""
    if not (isinstance(base, dict) and isinstance(patch, dict)):
        return patch
    out = dict(base)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(base.get(k), v)
    return out


def load_case(name):
    path = name if name.endswith(".json") else os.path.join(HERE, "cases", name + ".json")
    if not os.path.exists(path):
        sys.exit("bench/run.py: no case %s (bench/run.py --list names them)" % path)
    with open(path) as f:
        case = json.load(f)
    needed = ("command",) if case.get("kind") == "program" else ("sweeps", "read", "summaries")
    for key in needed:
        if key not in case:
            sys.exit("%s: a case needs \"%s\"" % (path, key))
    case["name"] = os.path.splitext(os.path.basename(path))[0]
    return case


def parse_params(case, pairs, smoke):
    """The params and the matrix: the case's, the smoke's over them, then --param's."""
    params = dict(case.get("params", {}), **smoke.get("params", {}))
    matrix = dict(case.get("matrix", {}), **smoke.get("matrix", {}))
    for pair in pairs:
        name, _, text = pair.partition("=")
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        if name in matrix:
            matrix[name] = value if isinstance(value, list) else [value]
        else:
            params[name] = value
    return params, matrix


def sweep_files(case, work, ns, smoke):
    """Each sweep's file, the name it runs under and its binary: {key: (path, name, bin)}."""
    files = {}
    for key, entry in case["sweeps"].items():
        entry = fill(entry, ns)
        if "file" in entry:
            with open(os.path.join(ROOT, entry["file"])) as f:
                sweep = json.load(f)
        else:
            sweep = {k: v for k, v in entry.items() if k not in ("patch", "build")}
            sweep["name"] = key
        sweep = merge(merge(sweep, entry.get("patch", {})), smoke.get("patch", {}))
        path = os.path.join(work, key + ".json")
        with open(path, "w") as f:
            json.dump(sweep, f)
        binary = os.path.join(os.path.abspath(entry.get("build", ns["build"])), "gpusweep")
        files[key] = (path, sweep["name"], binary)
    return files


# --retry: a long run keeps going across a rebuild of the binary it calls.
RETRY = False


def gpusweep(binary, *args, ok=(0, 1, 3)):
    """(its stdout, the seconds it took). Under --retry a failure to start it,
    or an odd exit, is tried again once in 60 s (a binary being relinked is
    back by then); otherwise it ends the run at once."""
    for attempt in (1, 2) if RETRY else (2,):
        t0 = time.monotonic()
        try:
            done = subprocess.run([binary, *args], capture_output=True, text=True)
        except OSError as e:
            done = subprocess.CompletedProcess(args, 126, "", str(e))
        seconds = time.monotonic() - t0
        if done.returncode in ok or done.returncode == 2 or attempt == 2:
            break
        print("gpusweep %s: exit %d; again in 60 s" % (args[0], done.returncode), file=sys.stderr)
        time.sleep(60)
    if done.returncode not in ok:
        sys.exit("gpusweep %s: exit %d\n%s" % (" ".join(args), done.returncode, done.stderr[-2000:]))
    return done.stdout, seconds


def read_one(spec, binary, db, sweep):
    """One read: compare's rows derived, any other command's JSON as Rows."""
    command = spec.get("command", "compare")
    if command == "compare":
        out, _ = gpusweep(binary, "compare", sweep, "--db", db, "--format", "json", *spec.get("args", []))
        rows = [derive_row(r) for r in json.loads(out)]
        return [r for r in rows if not r.get("baseline")] if spec.get("rows", "others") == "others" else rows
    named = [] if command == "sql" else ["--sweep", sweep]
    out, _ = gpusweep(binary, command, *named, "--db", db, "--format", "json", *spec.get("args", []))
    return rows_of(json.loads(out))


def one_run(case, files, work, ns, sets):
    """Every sweep once (a database each), then the reads: the run's record."""
    wall, dbs = {}, {}
    keys = list(files)
    if case.get("alternate") and ns["run"] % 2 == 0:
        keys.reverse()
    for key in keys:
        path, _, binary = files[key]
        dbs[key] = os.path.join(work, "%s.db" % key)
        args = ["run", path, "--db", dbs[key]]
        for s in sets:
            args += ["--set", fill(s, ns)]
        wall[key] = gpusweep(binary, *args, ok=(0, 3))[1]
    reads = {}
    for name, spec in case["read"].items():
        _, sweep, binary = files[spec["sweep"]]
        reads[name] = read_one(spec, binary, dbs[spec["sweep"]], sweep)
    for db in dbs.values():
        os.remove(db)
    return {"run": ns["run"], "wall": wall, "reads": reads}


def namespace(case, record):
    ns = dict(REDUCERS, wall=Row(record["wall"]))
    ns.update(record.get("point", {}))
    for name, rows in record["reads"].items():
        rows = rows_of(rows)
        if case["read"][name].get("one") and isinstance(rows, list):
            rows = rows[0] if rows else Row()
        ns[name] = rows
    for name, expr in case.get("derive", {}).items():
        ns[name] = eval(expr, dict(ns))  # noqa: S307 - the repository's own case files
    return ns


def figure(s, spaces):
    """One summary's figure over the runs' namespaces."""
    kind = next(k for k in KINDS if k in s)
    if kind == "of_runs":
        runs = [Row({k: v for k, v in ns.items() if not callable(v)}) for ns in spaces]
        v = eval(s[kind], dict(REDUCERS, runs=runs))  # noqa: S307
        return "none" if v is None else s.get("format", "%.3g") % v
    values = []
    for ns in spaces:
        v = eval(s[kind], ns)  # noqa: S307
        values.extend(v if isinstance(v, list) else [v])
    values = [v for v in values if v is not None]
    if kind == "rate":
        return rate(sum(bool(v) for v in values), len(values))
    if not values:
        return "none"
    v = REDUCERS[kind](values)
    return s.get("format", "%.3g") % v


def summarise(case, records):
    """[(point, [(label, figure, goal)])]: a point of the matrix each ({} without one)."""
    points = []
    for record in records:
        if record.get("point", {}) not in points:
            points.append(record.get("point", {}))
    out = []
    for point in points:
        spaces = [namespace(case, r) for r in records if r.get("point", {}) == point]
        out.append((point, [(s["label"], figure(s, spaces), s.get("goal", "")) for s in case["summaries"]]))
    return out


def table(case, summaries):
    """The figures as Markdown: what / figure / goal, or a row a point of the matrix."""
    point, lines = summaries[0]
    if not point:
        return ["| what | figure | goal |", "|---|---|---|"] + ["| %s | %s | %s |" % line for line in lines]
    head = list(point) + [s["label"] + (" (goal %s)" % s["goal"] if s.get("goal") else "")
                          for s in case["summaries"]]
    out = ["| %s |" % " | ".join(head), "|%s" % ("---|" * len(head))]
    for point, lines in summaries:
        out.append("| %s |" % " | ".join([str(v) for v in point.values()] + [text for _, text, _ in lines]))
    return out


def commit():
    return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def header(case, started, call):
    return ["# %s (%s)" % (case["name"], started.strftime("%Y-%m-%d %H:%M UTC")), "",
            case.get("about", ""), "",
            "`%s`, gpusweep %s, %s (%d cores)." % (call, commit(), platform.node(), os.cpu_count()), ""]


def page(case, call, body, started):
    out = header(case, started, call) + body + ["", "Goal: %s" % case.get("goal", "(none)"), ""]
    return "\n".join(out)


def call_line(case, args, runs):
    extra = ["--runs %d" % runs] if runs else []
    extra += ["--load"] if args.load else ["--drift"] if args.drift else []
    extra += ["--param %s" % shlex.quote(p) for p in args.param]
    extra += ["--"] + [shlex.quote(a) for a in args.args] if args.args else []
    return " ".join(["bench/run.py", case["name"]] + extra)


def start_neighbour(args):
    """A noisy neighbour (neighbour.sh) in its own process group, or None."""
    if not (args.load or args.drift):
        return None
    how = ["1"] if args.load else ["1", "1", "2", "6"]  # bursts, or one loop drifting
    return subprocess.Popen([os.path.join(HERE, "neighbour.sh"), *how], start_new_session=True)


def run_sweeps(case, args, ns, out_stem):
    """A sweep case: the runs, each line as it goes, the page's body."""
    smoke = case.get("smoke", {}) if args.smoke else {}
    runs = args.runs or (smoke.get("runs", 1) if args.smoke else case.get("runs", 10))
    params, matrix = parse_params(case, args.param, smoke)
    ns.update(fill(params, ns))
    sets = case.get("set", []) + smoke.get("set", [])
    files = sweep_files(case, ns["work"], ns, smoke)
    points = [dict(zip(matrix, values)) for values in itertools.product(*matrix.values())]
    records = []
    with open(out_stem + ".jsonl", "w") as raw:
        for run in range(1, runs + 1):
            for point in points:
                record = one_run(case, files, ns["work"], dict(ns, run=run, **point), sets)
                record["point"] = point
                records.append(record)
                raw.write(json.dumps(record) + "\n")
                raw.flush()
                walls = ", ".join("%s %.0f s" % kv for kv in record["wall"].items())
                at = "".join(" %s=%s" % kv for kv in point.items())
                print("run %d of %d%s: %s" % (run, runs, at, walls), flush=True)
    summaries = summarise(case, records)
    for point, lines in summaries:
        at = ", ".join("%s=%s" % kv for kv in point.items())
        print(at) if at else None
        for label, text, goal in lines:
            print("%s%-40s %s%s" % ("  " if at else "", label, text, "   (goal: %s)" % goal if goal else ""))
    return table(case, summaries), runs


def missing(case, ns):
    """What the program needs that is not here (a file, or a command that fails), or None."""
    for need in fill(case.get("needs", []), ns):
        if isinstance(need, str) and not os.path.exists(need):
            return need
        if isinstance(need, list) and subprocess.run(need, capture_output=True).returncode != 0:
            return " ".join(need)
    return None


def run_program(case, args, ns):
    """A program case: its command run, its output echoed and kept. (exit status, body)."""
    smoke = case.get("smoke", {}) if args.smoke else {}
    params, _ = parse_params(case, args.param, smoke)
    ns.update(fill(params, ns))
    need = missing(case, ns)
    if need and need.startswith(os.path.join(ns["build"], "")):
        # Every program is built with everything: one missing is a broken
        # build, which a skip would hide.
        print("%s: %s is not built (cmake --build %s --target %s)"
              % (case["name"], need, ns["build"], os.path.basename(need)))
        return 1, ["Not built: %s." % need]
    if need:
        print("skipped: needs %s" % need)
        return SKIPPED, ["Skipped: needs %s." % need]
    command = fill(case["command"], ns) + fill(smoke.get("args", []), ns) + args.args
    env = dict(os.environ, **{k: str(v) for k, v in fill(dict(case.get("env", {}), **smoke.get("env", {})), ns).items()})
    print("$ %s" % " ".join(shlex.quote(c) for c in command), flush=True)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, cwd=ROOT)
    output = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        output.append(line)
    rc = proc.wait()
    status = "skipped" if rc == SKIPPED else "exit %d" % rc
    if args.smoke and rc in smoke.get("ok", []):
        status += " (a goal missed: at the smoke size that is no failure)"
        rc = 0
    print("%s: %s" % (case["name"], status))
    body = ["`%s`: %s." % (" ".join(shlex.quote(c) for c in command), status), "", "```", "".join(output).rstrip(), "```"]
    return rc, body


def list_cases():
    for name in sorted(os.listdir(os.path.join(HERE, "cases"))):
        if name.endswith(".json"):
            with open(os.path.join(HERE, "cases", name)) as f:
                case = json.load(f)
            print("%-22s %-7s %s" % (name[:-5], case.get("kind", "sweeps"), case.get("about", "").split(". ")[0]))


def parse_args():
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", nargs="?")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int)
    ap.add_argument("--load", action="store_true", help="a noisy neighbour beside the runs, in bursts")
    ap.add_argument("--drift", action="store_true", help="a neighbour switched every 2 to 6 s")
    ap.add_argument("--smoke", action="store_true", help="once, at the case's smoke settings")
    ap.add_argument("--out", help="where the page and the raw reads go (bench/results)")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="a param or a matrix axis of the case (VALUE JSON, or a string)")
    ap.add_argument("--list", action="store_true", help="the cases and what each measures")
    ap.add_argument("--retry", action="store_true",
                    help="a gpusweep call that fails to start or exits oddly is tried again once "
                         "in 60 s (for long runs while the binary is rebuilt)")
    args = ap.parse_args(argv)
    args.args = rest
    return args


def main():
    global RETRY
    args = parse_args()
    RETRY = args.retry
    if args.list or not args.case:
        return list_cases()
    case = load_case(args.case)
    work = tempfile.mkdtemp(prefix="bench-%s-" % case["name"])
    ns = {"build": os.path.abspath(args.build), "here": HERE, "root": ROOT, "work": work}
    out_dir = args.out or (os.path.join(work, "out") if args.smoke else os.path.join(HERE, "results"))
    os.makedirs(out_dir, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    stem = os.path.join(out_dir, "%s-%s" % (started.strftime("%Y-%m-%d"), case["name"]))
    neighbour = start_neighbour(args)
    try:
        if case.get("kind") == "program":
            rc, body = run_program(case, args, ns)
            runs = None
        else:
            (body, runs), rc = run_sweeps(case, args, ns, stem), 0
    except BaseException:
        shutil.rmtree(work)  # a failed run leaves no work folder behind
        raise
    finally:
        if neighbour:
            os.killpg(neighbour.pid, signal.SIGTERM)
    with open(stem + ".md", "w") as f:
        f.write(page(case, call_line(case, args, runs), body, started))
    shutil.rmtree(work)  # the sweep files; and a smoke run's page, which is no result
    if os.path.exists(stem + ".md"):
        print("wrote %s.md%s" % (stem, "" if runs is None else " and %s.jsonl" % stem))
    sys.exit(rc)


if __name__ == "__main__":
    main()
