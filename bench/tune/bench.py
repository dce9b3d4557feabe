#!/usr/bin/env python3
"""gpusweep tune against the truth and two anchors, on one real space.

  truth      runs the whole grid with many repeats (gpusweep run): each
             config's true throughput, and what the grid costs at the default
             3 repeats (the budget the others get a share of)
  tune       gpusweep tune, SEEDS times, each at SHARE of the grid's trial time
  optuna     Optuna (TPE sampler, WilcoxonPruner on the blocks), SEEDS times,
             each trial run through gpusweep, on the same budget
  deepspeed  DeepSpeed's autotuner rule: configs in a random order, one trial
             each, stop after 5 experiments without a 5% gain, same budget
  table      the figures: how often each pick is within 3% of the true best,
             and the trial time each used, as a share of the grid's

Trial time is counted alike for all: a trial's setup, warmup, blocks (those
it ran before a prune) and evaluation, from the databases.

Usage: bench.py STEP --build DIR --work DIR [--space FILE] [--seeds N]
       [--share 0.3] [--truth-repeats 5] [--add-truth-repeats N]
"""
import argparse
import json
import math
import os
import random
import sqlite3
import statistics
import subprocess
import sys

KNOB_ORDER = None  # the grid's keys, sorted as gpusweep numbers configs


def load_space(path):
    spec = json.load(open(path))
    grid = {}
    for key, values in sorted(spec["grid"].items()):
        if isinstance(values, dict):  # a pow2 range
            v, out = 1, []
            while v <= values["max"]:
                if v >= values["min"]:
                    out.append(v)
                v *= 2
            values = out
        grid[key] = values
    return spec, grid


def configs_of(grid):
    keys = list(grid)
    out = [{}]
    for k in keys:
        out = [dict(c, **{k: v}) for c in out for v in grid[k]]
    return out  # index = gpusweep's config_index (first key slowest)


def label(config, grid):
    return " ".join(f"{k}={json.dumps(config[k]) if not isinstance(config[k], str) else config[k]}"
                    for k in grid)


def trial_time(db, trial_ids=None, blocks_run=None):
    """setup + warmup + blocks (the first blocks_run[id] of them) + evaluation."""
    c = sqlite3.connect(db)
    rows = c.execute(
        "SELECT t.id, coalesce(s.setup_s, 0), coalesce(s.evaluate_s, 0), "
        "coalesce((SELECT value FROM metrics m WHERE m.trial_id = t.id AND m.kind = 'stat' "
        "AND m.name = 'warmup_s' ORDER BY at_step DESC LIMIT 1), 0) "
        "FROM trials t LEFT JOIN trial_summary s ON s.trial_id = t.id "
        "WHERE t.status NOT IN ('pending', 'interrupted')").fetchall()
    total = 0.0
    for tid, setup, evaluate, warmup in rows:
        if trial_ids is not None and tid not in trial_ids:
            continue
        blocks = [r[0] for r in c.execute(
            "SELECT seconds FROM blocks WHERE trial_id = ? ORDER BY idx", (tid,))]
        if blocks_run and tid in blocks_run:  # pruned after these blocks: no evaluation
            blocks = blocks[:blocks_run[tid]]
            evaluate = 0
        total += setup + warmup + sum(blocks) + evaluate
    return total


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def gpusweep(args, ns):
    env = dict(os.environ, GPUSWEEP_PLUGIN_PATH=os.path.join(ns.build, "plugins"))
    return subprocess.run([os.path.join(ns.build, "gpusweep")] + args, text=True,
                          capture_output=True, env=env)


def cycle_adjusted_levels(db):
    """Each config's level (mean log throughput over its trials) with each
    interleave cycle's common drift removed, and its standard error.

    The grid runs 8 configs at a time taking turns block by block; blocks of
    the same cycle ran back to back. A shared machine drifts by several
    percent between cycles (7% here), far more than the differences among
    the best configs, so the mean of raw trial medians would rank them by
    when they ran. Fit log(block throughput) = config + cycle by alternating
    medians, then average each trial's median of its adjusted blocks."""
    c = sqlite3.connect(db)
    # A cycle is one run's: (run, cycle), so that runs added later count too.
    obs = [(idx, tid, (run, cycle), math.log(samples / seconds))
           for idx, tid, run, cycle, samples, seconds in
           c.execute("SELECT t.config_index, t.id, t.sweep_id, b.cycle, b.samples, b.seconds "
                     "FROM trials t JOIN blocks b ON b.trial_id = t.id WHERE t.status = 'ok'")]
    level, drift = {}, {}
    for _ in range(50):
        by_config, by_cycle = {}, {}
        for idx, _tid, cycle, y in obs:
            by_config.setdefault(idx, []).append(y - drift.get(cycle, 0))
        level = {k: statistics.median(v) for k, v in by_config.items()}
        for idx, _tid, cycle, y in obs:
            by_cycle.setdefault(cycle, []).append(y - level[idx])
        drift = {k: statistics.median(v) for k, v in by_cycle.items()}
        centre = statistics.median(drift.values())
        drift = {k: v - centre for k, v in drift.items()}
    per_trial = {}
    for idx, tid, cycle, y in obs:
        per_trial.setdefault((idx, tid), []).append(y - drift[cycle])
    per_config = {}
    for (idx, _tid), v in per_trial.items():
        per_config.setdefault(idx, []).append(statistics.median(v))
    out = {}
    for idx, v in per_config.items():
        se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
        out[idx] = (statistics.fmean(v), se)
    drift_sd = statistics.pstdev(drift.values()) if len(drift) > 1 else 0.0
    return out, drift_sd


def run_grid(ns, db, repeats, *settings):
    r = gpusweep(["run", ns.space, "--db", db, "--set", f"measure.repeats={repeats}"]
                 + [a for s in settings for a in ("--set", s)], ns)
    if r.returncode != 0:
        sys.exit("truth run failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])


def step_truth(ns):
    db = os.path.join(ns.work, "truth.db")
    if not os.path.exists(db):
        run_grid(ns, db, ns.truth_repeats)
    if ns.add_truth_repeats > 0:  # another run of the grid into the same truth
        runs = sqlite3.connect(db).execute("SELECT count(*) FROM sweeps").fetchone()[0]
        run_grid(ns, db, ns.add_truth_repeats, f"measure.order_seed={runs + 1}")
    levels, drift_sd = cycle_adjusted_levels(db)
    c = sqlite3.connect(db)
    truth = {k: math.exp(v[0]) for k, v in levels.items()}
    se = {k: v[1] for k, v in levels.items()}
    repeats = c.execute("SELECT count(*) FROM trials WHERE status = 'ok'").fetchone()[0] / len(truth)
    grid_s = trial_time(db) / repeats * 3
    json.dump({"truth": truth, "se": se, "drift_sd": drift_sd, "grid_s": grid_s},
              open(os.path.join(ns.work, "truth.json"), "w"))
    best = max(truth, key=truth.get)
    print(f"truth: {len(truth)} configs ran ok; the grid at 3 repeats is {grid_s:.0f} s of trial "
          f"time; the cycles' drift removed: {100 * drift_sd:.1f}% (sd)")
    for k in sorted(truth, key=truth.get, reverse=True)[:8]:
        print(f"  #{k}: {100 * truth[k] / truth[best]:.1f}% of the best "
              f"(standard error {100 * se[k]:.1f}%)")


def truth_of(ns):
    t = json.load(open(os.path.join(ns.work, "truth.json")))
    return {int(k): v for k, v in t["truth"].items()}, t["grid_s"]


def record(ns, method, seed, pick, used_s, extra="", **fields):
    truth, grid_s = truth_of(ns)
    best = max(truth.values())
    ratio = truth.get(pick, 0) / best if pick is not None else 0
    line = {"method": method, "seed": seed, "pick": pick, "of_best": ratio,
            "used_share": used_s / grid_s, "note": extra, **fields}
    with open(os.path.join(ns.work, "results.jsonl"), "a") as f:
        f.write(json.dumps(line) + "\n")
    print(f"{method} seed {seed}: pick #{pick} at {100 * ratio:.1f}% of the best, "
          f"{100 * used_s / grid_s:.0f}% of the grid's trial time {extra}")


def step_tune(ns):
    _, grid_s = truth_of(ns)
    budget = ns.share * grid_s
    for seed in range(1, ns.seeds + 1):
        db = os.path.join(ns.work, f"tune_{seed}.db")
        r = gpusweep(["tune", ns.space, "--db", db, "--budget", f"{budget:.1f}", "--seed",
                      str(seed), "--set", f"measure.order_seed={seed}", "--format", "json"], ns)
        if r.returncode != 0:
            print(r.stderr[-2000:])
            record(ns, "tune", seed, None, trial_time(db) if os.path.exists(db) else 0, "failed")
            continue
        out = json.loads(r.stdout)
        # tune numbers configs from 1, as compare does; the truth by config_index.
        pick = out["winner"]["config"] - 1 if out["winner"] else None
        vs = out["winner"].get("vs_baseline") if out["winner"] else None
        record(ns, "tune", seed, pick, trial_time(db),
               f"({out['tried']} configs tried, {out['rounds']} rounds)",
               vs_baseline=[vs["ratio"], vs["low"], vs["high"]] if vs else None)


def one_trial(ns, config, db, name):
    """One gpusweep trial of config (repeats 1); its id, blocks and mean throughput."""
    spec, grid = load_space(ns.space)
    sweep = {"name": name, "workload": spec["workload"],
             "base": dict(spec.get("base", {}), **config),
             "measure": dict(spec.get("measure", {}), repeats=1)}
    path = os.path.join(ns.work, name + ".json")
    json.dump(sweep, open(path, "w"))
    r = gpusweep(["run", path, "--db", db], ns)
    c = sqlite3.connect(db)
    row = c.execute("SELECT t.id, t.status FROM trials t JOIN sweeps s ON s.id = t.sweep_id "
                    "WHERE s.name = ? ORDER BY t.id DESC LIMIT 1", (name,)).fetchone()
    if row is None or row[1] != "ok":
        return (row[0] if row else None), [], None
    blocks = [b / s for b, s in c.execute(
        "SELECT samples, seconds FROM blocks WHERE trial_id = ? ORDER BY idx", (row[0],))]
    return row[0], blocks, sum(blocks) / len(blocks)


def step_optuna(ns):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec, grid = load_space(ns.space)
    configs = configs_of(grid)
    _, grid_s = truth_of(ns)
    budget = ns.share * grid_s
    for seed in range(1, ns.seeds + 1):
        db = os.path.join(ns.work, f"optuna_{seed}.db")
        blocks_run = {}
        ids = set()
        counter = [0]

        def objective(trial):
            config = {k: trial.suggest_categorical(k, v) for k, v in grid.items()}
            counter[0] += 1
            tid, blocks, mean = one_trial(ns, config, db, f"optuna{seed}_{counter[0]}")
            if tid is not None:
                ids.add(tid)
            if mean is None:
                raise optuna.TrialPruned()  # failed: nothing to learn but that
            for i, v in enumerate(blocks):  # the blocks as the pruner's instances
                trial.report(v, i)
                if trial.should_prune():
                    blocks_run[tid] = i + 1
                    raise optuna.TrialPruned()
            return mean

        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=seed),
                                    pruner=optuna.pruners.WilcoxonPruner(p_threshold=0.1))
        while trial_time(db, ids, blocks_run) < budget if os.path.exists(db) else True:
            study.optimize(objective, n_trials=1)
        best = study.best_trial.params if study.best_trial else None
        pick = configs.index(best) if best else None
        record(ns, "optuna", seed, pick, trial_time(db, ids, blocks_run),
               f"({len(study.trials)} trials, "
               f"{sum(t.state == optuna.trial.TrialState.PRUNED for t in study.trials)} pruned)")


def step_deepspeed(ns):
    spec, grid = load_space(ns.space)
    configs = configs_of(grid)
    _, grid_s = truth_of(ns)
    budget = ns.share * grid_s
    for seed in range(1, ns.seeds + 1):
        db = os.path.join(ns.work, f"deepspeed_{seed}.db")
        order = list(range(len(configs)))
        random.Random(seed).shuffle(order)
        best, best_value, stale, n, ids = None, 0.0, 0, 0, set()
        for idx in order:
            if os.path.exists(db) and trial_time(db, ids) >= budget:
                break
            n += 1
            tid, _, mean = one_trial(ns, configs[idx], db, f"ds{seed}_{n}")
            if tid is not None:
                ids.add(tid)
            if mean is not None and mean > best_value * 1.05:
                best, best_value, stale = idx, mean, 0
            else:
                if mean is not None and mean > best_value:
                    best, best_value = idx, mean
                stale += 1
                if stale >= 5:
                    break
        record(ns, "deepspeed", seed, best, trial_time(db, ids), f"({n} experiments)")


def baseline_index(spec, grid, configs):
    base = {k: spec["baseline"][k] for k in grid if k in spec.get("baseline", {})}
    for i, c in enumerate(configs):
        if all(c[k] == v for k, v in base.items()):
            return i
    return None


def step_table(ns):
    rows = [json.loads(l) for l in open(os.path.join(ns.work, "results.jsonl"))]
    truth, grid_s = truth_of(ns)
    # Against the truth as it is now (more repeats may have been added since
    # a pick was recorded).
    for x in rows:
        x["of_best"] = truth.get(x["pick"], 0) / max(truth.values()) if x["pick"] is not None else 0
    spec, grid = load_space(ns.space)
    configs = configs_of(grid)
    best = max(truth, key=truth.get)
    print(f"space: {ns.space}, {len(configs)} configs; true best #{best} "
          f"({label(configs[best], grid)}); the grid at 3 repeats: {grid_s / 60:.1f} min of "
          f"trial time; budget {100 * ns.share:.0f}% of it\n")
    t = json.load(open(os.path.join(ns.work, "truth.json")))
    close = sorted((k for k in truth if truth[k] >= 0.97 * truth[best]), key=truth.get, reverse=True)
    print("The truth (each interleave cycle's drift removed, "
          f"{100 * t.get('drift_sd', 0):.1f}% sd): within 3% of the best are "
          + ", ".join(f"#{k} ({100 * truth[k] / truth[best]:.1f}% +- "
                      f"{100 * t['se'][str(k)]:.1f}%)" for k in close) + "\n")
    # The truth has its own standard error: a pick at 96.5% +-
    # 1.5% of the best is not known to be outside 3%, nor one at 97.5% +-
    # 1.5% inside. Each pick against the best, its log ratio's standard
    # error sqrt(se_pick^2 + se_best^2): "clearly within" when the 95%
    # interval lies above 97%, "clearly not" when below, else the truth
    # cannot tell.
    se = {int(k): v for k, v in t["se"].items()}

    def judged(x):
        if x["pick"] is None or x["pick"] not in truth:
            return "not"
        if x["pick"] == best:
            return "within"
        d = math.log(truth[x["pick"]] / truth[best])
        half = 1.96 * math.hypot(se.get(x["pick"], 0), se.get(best, 0))
        return "within" if d - half >= math.log(0.97) else (
            "not" if d + half < math.log(0.97) else "unsure")

    print("| method | runs | pick within 3% of the best (point) | clearly within, the truth cannot "
          "tell, clearly not (95%) | pick's share of the best (median, worst) "
          "| trial time used (median, largest) |")
    print("|---|---|---|---|---|---|")
    for method in ("tune", "optuna", "deepspeed"):
        r = [x for x in rows if x["method"] == method]
        if not r:
            continue
        of = sorted(x["of_best"] for x in r)
        used = sorted(x["used_share"] for x in r)
        within = sum(x >= 0.97 for x in of)
        j = [judged(x) for x in r]
        print(f"| {method} | {len(r)} | {within} of {len(r)} | {j.count('within')}, "
              f"{j.count('unsure')}, {j.count('not')} | {100 * of[len(of) // 2]:.1f}%, "
              f"{100 * of[0]:.1f}% | {100 * used[len(used) // 2]:.0f}%, {100 * used[-1]:.0f}% |")
    # tune's confirmation against the truth: does its interval for the pick
    # over the baseline cover the truth's ratio of the two? (A ratio, so the
    # drift between the truth's run and tune's cancels.)
    base = baseline_index(spec, grid, configs)
    confirmed = [x for x in rows if x["method"] == "tune" and x.get("vs_baseline")]
    if confirmed and base in truth:
        covers = sum(x["vs_baseline"][1] <= truth[x["pick"]] / truth[base] <= x["vs_baseline"][2]
                     for x in confirmed)
        widths = sorted((x["vs_baseline"][2] - x["vs_baseline"][1]) / 2 / x["vs_baseline"][0]
                        for x in confirmed)
        # The truth's ratio has its own error: agreement is a z test of
        # the two log ratios with both standard errors (tune's from its
        # interval, at the sequential level 98.5%, read as normal).
        z_tune = statistics.NormalDist().inv_cdf(0.5 + 0.985 / 2)
        agree = 0
        for x in confirmed:
            r, lo, hi = x["vs_baseline"]
            se_tune = math.log(hi / lo) / 2 / z_tune
            se_truth = math.hypot(se.get(x["pick"], 0), se.get(base, 0))
            z = (math.log(r) - math.log(truth[x["pick"]] / truth[base])) / math.hypot(
                se_tune, se_truth)
            agree += abs(z) <= 1.96
        print(f"\ntune's confirmed ratio to the baseline (#{base}): its interval covers the "
              f"truth's point in {covers} of {len(confirmed)} runs (median half-width "
              f"{100 * widths[len(widths) // 2]:.1f}%); counting the truth's own standard "
              f"error, the two agree (|z| <= 1.96) in {agree} of {len(confirmed)}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=["truth", "tune", "optuna", "deepspeed", "table"])
    p.add_argument("--build", default="build")
    p.add_argument("--work", required=True)
    p.add_argument("--space", default="bench/tune/space_timeseries.json")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--share", type=float, default=0.3)
    p.add_argument("--truth-repeats", type=int, default=5)
    p.add_argument("--add-truth-repeats", type=int, default=0,
                   help="truth: run the grid again with this many repeats into the same "
                        "truth (a new run, its own shuffle), for a more precise truth")
    ns = p.parse_args()
    ns.build = os.path.abspath(ns.build)
    os.makedirs(ns.work, exist_ok=True)
    globals()["step_" + ns.step](ns)


if __name__ == "__main__":
    main()
