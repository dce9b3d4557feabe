#!/usr/bin/env python3
"""The bookkeeping of bench/check/real_runs.sh: one line a run into a TSV as
it finishes, the anchors' rules on two one-after-another runs, and the final
Markdown table with 95% Wilson intervals. Standard library only.

  real_runs.py check OUT ITER CONDITION RC WALL LOAD0 JSON
      records a `gpusweep check` run from its --format json output
  real_runs.py anchors OUT ITER CONDITION RC WALL LOAD0 BASE_CSV HEAD_CSV
      records two rules on the block samples (`gpusweep export --blocks`) of
      a base run and a head run made one after the other:
        asv     asv continuous's defaults: per config, the medians' ratio
                beyond a factor 1.1 and a Mann-Whitney U test on the raw
                block samples at p < 0.002
        fixed5  a fixed percentage threshold (Bencher/CodSpeed style): head
                over base median below 0.95 is a regression, above 1/0.95 an
                improvement
  real_runs.py table OUT
      prints the Markdown table of OUT/runs.tsv

OUT/runs.tsv has one line a run and rule; OUT/configs.tsv one a config.
"""
import csv
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from wilson import wilson  # noqa: E402

# verdict is the run's overall verdict (check's own, quality and memory guards
# included); throughput_verdict the worst of its configs' throughput verdicts
# alone; guard names what turned a config's verdict into a regression besides
# its throughput (quality, memory).
RUNS_HEADER = ["iter", "utc", "condition", "rule", "exit", "verdict", "rounds", "wall_s",
               "load1_start", "load1_end", "load5_end", "tolerance", "throughput_verdict",
               "guard", "stopped"]
CONFIGS_HEADER = ["iter", "condition", "rule", "config", "verdict", "ratio", "low", "high", "p",
                  "throughput_verdict", "guard"]
SEVERITY = ["no regression", "improvement", "inconclusive", "regression"]  # check's overall()

ASV_FACTOR = 1.1
ASV_P = 0.002
FIXED_THRESHOLD = 0.95


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def append(path, header, row):
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write("\t".join(header) + "\n")
        f.write("\t".join(str(x) for x in row) + "\n")
        f.flush()


def worst(verdicts):
    known = [v for v in verdicts if v in SEVERITY]
    if len(known) != len(verdicts) or not known:
        return "error"
    return max(known, key=SEVERITY.index)


def record(out, it, condition, rule, rc, wall, load0, verdict, rounds, stopped, configs,
           tolerance=""):
    l1, l5, _ = loadavg()
    tp = worst([c.get("throughput_verdict", c.get("verdict")) for c in configs])
    guard = ",".join(sorted({c["guard"] for c in configs if c.get("guard")}))
    append(os.path.join(out, "runs.tsv"), RUNS_HEADER,
           [it, time.strftime("%H:%M:%S", time.gmtime()), condition, rule, rc, verdict, rounds,
            "%.1f" % float(wall), load0, l1, l5, tolerance, tp, guard,
            stopped.replace("\t", " ")])
    for c in configs:
        append(os.path.join(out, "configs.tsv"), CONFIGS_HEADER,
               [it, condition, rule] + [c.get(k, "") for k in CONFIGS_HEADER[3:]])


def fmt(x, digits=4):
    return "" if x is None else ("%.*f" % (digits, x) if isinstance(x, float) else str(x))


def cmd_check(out, it, condition, rc, wall, load0, path):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError):
        record(out, it, condition, "check", rc, wall, load0, "error", "", "no json output", [])
        return
    stopped = d.get("stopped", "")
    rounds = stopped.split()[0] if stopped[:1].isdigit() else ""
    configs = [{"config": c.get("config"), "verdict": c.get("verdict"),
                "ratio": fmt(c.get("ratio")), "low": fmt(c.get("low")),
                "high": fmt(c.get("high")), "p": "",
                "throughput_verdict": c.get("throughput_verdict", c.get("verdict")),
                "guard": ",".join(g for g, k in (("quality", "quality_loss"),
                                                 ("memory", "memory_growth")) if c.get(k))}
               for c in d.get("configs", [])]
    record(out, it, condition, "check", rc, wall, load0, d.get("verdict", "error"), rounds,
           stopped, configs, fmt(d.get("tolerance")))


# Mann-Whitney U, two-sided, as asv computes it: exact null distribution for
# samples of at most 20, the normal approximation (no tie or continuity
# correction) beyond; ties broken the least significant way.
def _u_counts(m, n, memo):
    # counts[u] = number of orderings of m x's and n y's with U = u
    key = (m, n)
    if key in memo:
        return memo[key]
    if m == 0 or n == 0:
        res = [1]
    else:
        a = _u_counts(m, n - 1, memo)  # the largest value is a y: U unchanged
        b = _u_counts(m - 1, n, memo)  # the largest value is an x: U grows by n
        res = [0] * (m * n + 1)
        for u, c in enumerate(a):
            res[u] += c
        for u, c in enumerate(b):
            res[u + n] += c
    memo[key] = res
    return res


def mann_whitney_p(x, y):
    m, n = len(x), len(y)
    u = sum(1 for a in x for b in y if a > b)
    ties = sum(1 for a in x for b in y if a == b)
    half = m * n // 2
    if u <= half <= u + ties:
        ties = half - u
    lo1 = min(u, m * n - u)
    lo2 = min(u + ties, m * n - (u + ties))
    ux = max(lo1, lo2)  # the least significant tie breaking
    if max(m, n) <= 20:
        counts = _u_counts(m, n, {})
        total = math.comb(m + n, m)
        below = sum(counts[: ux + 1]) / total
        above = sum(counts[m * n - ux:]) / total
        return min(1.0, below + above) if ux != m * n - ux else 1.0
    var = m * n * (m + n + 1) / 12
    z = (ux - m * n / 2) / math.sqrt(var)
    return min(1.0, math.erfc(-z / math.sqrt(2)))


def read_blocks(path):
    # {config_index: (settings without the seed, [block throughputs])}
    out = {}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return out
    cols = list(rows[0].keys())
    settings = cols[cols.index("error") + 1: cols.index("block")]
    # the settings that tell the configs apart (the seed varies by repeat)
    settings = [s for s in settings if s != "seed" and len({r[s] for r in rows}) > 1]
    for r in rows:
        if r["status"] != "ok":
            continue
        key = int(r["config_index"])
        label = " ".join("%s=%s" % (s, r[s]) for s in settings) or "config %d" % key
        out.setdefault(key, (label, []))[1].append(float(r["throughput"]))
    return out


def cmd_anchors(out, it, condition, rc, wall, load0, base_csv, head_csv):
    base, head = read_blocks(base_csv), read_blocks(head_csv)
    per_rule = {"asv": [], "fixed5": []}
    for key in sorted(set(base) | set(head)):
        if key not in base or key not in head or base[key][0] != head[key][0]:
            for rule in per_rule:
                per_rule[rule].append({"config": "config %d" % key, "verdict": "error"})
            continue
        label, xs = base[key]
        ys = head[key][1]
        ratio = statistics.median(ys) / statistics.median(xs)
        p = mann_whitney_p(xs, ys)
        different = p < ASV_P
        if different and ratio < 1 / ASV_FACTOR:
            v = "regression"
        elif different and ratio > ASV_FACTOR:
            v = "improvement"
        else:
            v = "no regression"
        per_rule["asv"].append({"config": label, "verdict": v, "ratio": fmt(ratio),
                                "p": "%.3g" % p})
        if ratio < FIXED_THRESHOLD:
            v = "regression"
        elif ratio > 1 / FIXED_THRESHOLD:
            v = "improvement"
        else:
            v = "no regression"
        per_rule["fixed5"].append({"config": label, "verdict": v, "ratio": fmt(ratio),
                                   "p": "%.3g" % p})
    for rule, configs in per_rule.items():
        vs = [c["verdict"] for c in configs]
        if not vs or "error" in vs:
            overall = "error"
        elif "regression" in vs:
            overall = "regression"
        elif "improvement" in vs:
            overall = "improvement"
        else:
            overall = "no regression"
        record(out, it, condition, rule, rc, wall, load0, overall, 3,
               "one after another, 3 repeats each", configs)


def share_text(k, n):
    """"k/n = p% [lo, hi]", the 95% Wilson interval (bench/wilson.py)."""
    if n == 0:
        return "-"
    p, lo, hi = wilson(k, n)
    return "%d/%d = %.0f%% [%.0f, %.0f]" % (k, n, 100 * p, 100 * lo, 100 * hi)


CONDITIONS = {
    "dqn_aa_same": "dqn A/A, same file (quickstart)",
    "dqn_aa_folders": "dqn A/A, two folders (quickstart)",
    "spin_same": "spin_build base vs same (A/A)",
    "spin_slow5": "spin_build base vs slow5 (5% slower)",
    "spin_slow3": "spin_build base vs slow3 (3% slower)",
}
RULES = {"check": "gpusweep check (interleaved)",
         "check_tp": "gpusweep check, throughput verdicts alone",
         "asv": "asv: x1.1 and U p<0.002 (one after another)",
         "fixed5": "fixed 5% threshold (one after another)"}


def cmd_table(out):
    with open(os.path.join(out, "runs.tsv")) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    groups = {}
    for r in rows:
        groups.setdefault((r["condition"], r["rule"]), []).append(r)
        if r["rule"] == "check":  # the same runs, the quality and memory guards left out
            groups.setdefault((r["condition"], "check_tp"), []).append(
                dict(r, verdict=r["throughput_verdict"]))
    order = lambda k: (list(CONDITIONS).index(k[0]) if k[0] in CONDITIONS else 99,
                       list(RULES).index(k[1]) if k[1] in RULES else 99)
    print("| condition | rule | runs | called regression or improvement | called regression "
          "| inconclusive | errors | median rounds | median wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    # each share: k/n = p% [95% Wilson interval]
    for key in sorted(groups, key=order):
        rs = groups[key]
        n = len(rs)
        v = [r["verdict"] for r in rs]
        called = sum(x in ("regression", "improvement") for x in v)
        reg = sum(x == "regression" for x in v)
        inc = sum(x == "inconclusive" for x in v)
        err = sum(x == "error" for x in v)
        rounds = [float(r["rounds"]) for r in rs if r["rounds"]]
        print("| %s | %s | %d | %s | %s | %s | %d | %s | %.0f |" % (
            CONDITIONS.get(key[0], key[0]), RULES.get(key[1], key[1]), n, share_text(called, n),
            share_text(reg, n), share_text(inc, n), err,
            "%g" % statistics.median(rounds) if rounds else "-",
            statistics.median(float(r["wall_s"]) for r in rs)))
    # Per config: each spin_build check's interval against the ratio compiled
    # into the builds (its coverage: 98.5% promised), and the verdicts.
    truth = {"spin_same": 1.0, "spin_slow5": 1 / 1.05, "spin_slow3": 1 / 1.03}
    path = os.path.join(out, "configs.tsv")
    cfg = []
    if os.path.exists(path):
        with open(path) as f:
            cfg = [c for c in csv.DictReader(f, delimiter="\t")
                   if c["rule"] == "check" and c["condition"] in truth and c["low"]]
    if cfg:
        print()
        print("| condition (check, per config) | configs | interval covers the compiled ratio "
              "| regression | inconclusive | no regression |")
        print("|---|---|---|---|---|---|")
        for cond in truth:
            cs = [c for c in cfg if c["condition"] == cond]
            if not cs:
                continue
            n = len(cs)
            cover = sum(float(c["low"]) <= truth[cond] <= float(c["high"]) for c in cs)
            count = lambda v: share_text(sum(c["verdict"] == v for c in cs), n)
            print("| %s (%.4f) | %d | %s | %s | %s | %s |" % (
                CONDITIONS[cond], truth[cond], n, share_text(cover, n), count("regression"),
                count("inconclusive"), count("no regression")))
    loads = [float(r["load1_end"]) for r in rows if r["rule"] != "fixed5"]
    print()
    print("%d runs and rules, iterations %s to %s; load average (1 min) at the runs' ends: "
          "min %.2f, median %.2f, max %.2f" % (len(rows), rows[0]["iter"], rows[-1]["iter"],
                                              min(loads), statistics.median(loads), max(loads)))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    cmd, out = argv[1], argv[2]
    if cmd == "check":
        cmd_check(out, *argv[3:9])
    elif cmd == "anchors":
        cmd_anchors(out, *argv[3:10])
    elif cmd == "table":
        cmd_table(out)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
