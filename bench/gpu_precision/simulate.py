#!/usr/bin/env python3
"""Issue 44 item 4: how precisely can the quickstart's ratios be known on a GPU
within 120 s, with trials one after another (as shipped) or with every
config's processes alive together, taking turns block by block?

1. Calibrates a noise model on the per-block times of the first H100 run's
   quickstart (h100_quickstart.json: 24 trials, 12 sequential and 12
   interleaved, 5 blocks of 400 steps each), by REML, with parametric
   bootstrap intervals:
       log throughput of a block = mu[config] + p[process] + D(t) + e
   p: the process's own offset (sd sigma_p, fitted apart for sequential and
   interleaved trials); D(t): drift of the machine common to every process
   alive at wall time t (Ornstein-Uhlenbeck: sd sigma_D, correlation time
   tau); e: the block's own noise (sd sigma_e for a 1 s block, heavy tails
   checked apart). Also the block position trend, the warm-up, and the
   fixed costs of a process (start, warm-up, evaluation, a turn).
2. Simulates sweeps of the 4 quickstart configs under the stopping rule of
   host/src/analysis/precision.cpp and run/sweep_run.cpp (98.5% t interval
   over repeats, looks from the 3rd round on, stop when every ratio is within
   1% or the next round would overrun the budget):
   - old: trials one after another, 100 warm-up steps, 5 blocks of 400
     steps, per-repeat ratio of the trials' mean log block throughputs;
   - new: windows in which P processes per config are alive together and
     take turns block by block (B blocks of block_s seconds each), the
     turns granted by gpusweep's own TurnScheduler through scheduler_sim
     (scheduler_sim.cpp: who runs when, what runs beside what; this script
     times the turns and draws the noise); one ratio per window (blocks
     paired by cycle, the P processes averaged), a t interval over windows;
     process start serial (as gated today), parallel, or overlapped with
     the previous window's blocks.
3. Prints, per rule and noise scenario: the median (over sweeps) of the
   median (over the 3 configs) 98.5% half-width, its 10th/90th percentiles,
   the median wall time, and the intervals' coverage of the true ratios with
   a Wilson interval; searches (P, B, block_s, start) for the best design
   that reaches a median half-width <= 3% within 120 s.

    cmake --build build --target scheduler_sim        # once: the TurnScheduler's turns
    python3 bench/gpu_precision/simulate.py           # about 30 s on one core
    python3 bench/gpu_precision/simulate.py --quick   # under 20 s, fewer sweeps
"""
import os

# One core: BLAS threads fight each other on the small REML matrices.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import sys  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from wilson import wilson  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402

import numpy as np  # noqa: E402
from scipy import optimize, stats  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "h100_quickstart.json")
# The TurnScheduler's turns (scheduler_sim.cpp), as the build makes it.
SCHEDULER_SIM = os.path.join(HERE, "..", "..", "build", "bench", "scheduler_sim")

# ---------------------------------------------------------------------------
# The protocol's constants (host/src/analysis/precision.hpp, spec/sweep.hpp,
# experiments/quickstart.json)
# ---------------------------------------------------------------------------
SEQ_LEVEL = 0.985      # kSequentialLevel: every interval of a precision run
SEP_ALPHA = 0.01       # kSeparationAlpha
MAX_ROUNDS = 100       # kMaxRounds
TARGET = 0.01          # measure.precision
REPEATS = 3            # measure.repeats: the first look follows 3 rounds
WARMUP_STEPS = 100     # measure.warmup_steps
OLD_BLOCKS, OLD_STEPS = 5, 400   # measure.blocks, measure.steps_per_block
BUDGET = 120.0         # the goal's budget (the file says 60)
GOAL = 0.03            # median half-width the goal asks for
EXIT_S = 0.05          # a worker's exit after its evaluation (timestamps)


def separation_level(look):
    return 1 - SEP_ALPHA * 6 / (math.pi ** 2 * max(1, look) ** 2)


def half_width(log_half):
    """The relative half-width precision.cpp prints: (high - low) / 2 / ratio
    for an interval ratio * exp(+-log_half)."""
    return np.sinh(log_half)


# ---------------------------------------------------------------------------
# 1. The records
# ---------------------------------------------------------------------------
class Records:
    """The 120 blocks with what the model needs: log throughput, config, run
    (0 sequential, 1 interleaved), trial, position, wall time of the block's
    middle, and for interleaved blocks their cycle (the 4 blocks of a cycle
    ran back to back in a shuffled order the records do not keep)."""

    def __init__(self, path):
        doc = json.load(open(path))
        self.trials = []
        rows = []
        for run_index, run in enumerate(doc["runs"]):
            if run["name"] == "sequential":
                for t in run["trials"]:
                    secs = np.array(t["block_seconds"])
                    # Blocks end before the evaluation and the worker's exit.
                    end = t["finished_s"] - t["evaluate_s"] - EXIT_S
                    start = end - secs.sum() + np.concatenate([[0], np.cumsum(secs)[:-1]])
                    for i, s in enumerate(secs):
                        rows.append((math.log(t["block_steps"][i] / s), run_index, len(self.trials),
                                     t["config"], i, start[i] + s / 2, -1, s))
                    self.trials.append(dict(t, run=run_index))
            else:
                # A window: the trials that share cycles. A cycle lasts its 4
                # blocks (the last also the 4 evaluations); the window ends at
                # its last trial's end.
                windows = {}
                for t in run["trials"]:
                    windows.setdefault(min(t["block_cycles"]), []).append(t)
                for ts in windows.values():
                    cycles = sorted({c for t in ts for c in t["block_cycles"]})
                    length = dict.fromkeys(cycles, 0.0)
                    for t in ts:
                        for c, s in zip(t["block_cycles"], t["block_seconds"]):
                            length[c] += s
                    length[cycles[-1]] += sum(t["evaluate_s"] for t in ts)
                    end = max(t["finished_s"] for t in ts) - EXIT_S
                    middle = {}
                    for c in reversed(cycles):
                        middle[c] = end - length[c] / 2
                        end -= length[c]
                    for t in ts:
                        for i, (c, s) in enumerate(zip(t["block_cycles"], t["block_seconds"])):
                            rows.append((math.log(t["block_steps"][i] / s), run_index,
                                         len(self.trials), t["config"], i, middle[c], c, s))
                        self.trials.append(dict(t, run=run_index))
        cols = list(zip(*rows))
        self.y = np.array(cols[0])
        self.run = np.array(cols[1])
        self.trial = np.array(cols[2])
        self.config = np.array(cols[3])
        self.idx = np.array(cols[4])
        self.time = np.array(cols[5])
        self.cycle = np.array(cols[6])
        self.seconds = np.array(cols[7])
        self.n = len(self.y)


# ---------------------------------------------------------------------------
# 2. The noise model, fitted by REML
# ---------------------------------------------------------------------------
PARAMS = ("sigma_e", "sigma_D", "tau", "sigma_p_seq", "sigma_p_int")
LOWER = np.log([1e-3, 1e-4, 0.3, 1e-4, 1e-4])
UPPER = np.log([0.5, 0.5, 600.0, 0.5, 0.5])


class Model:
    """V(theta) = sigma_e^2 I + sigma_D^2 K(tau) + sigma_p^2 Z Z' (per mode),
    fixed effects: a mean per config and an offset of the interleaved run."""

    def __init__(self, rec, extra_columns=()):
        self.rec = rec
        n = rec.n
        self.X = np.column_stack([(rec.config == c).astype(float) for c in range(4)]
                                 + [(rec.run == 1).astype(float)] + list(extra_columns))
        same_run = rec.run[:, None] == rec.run[None, :]
        self.dt = np.abs(rec.time[:, None] - rec.time[None, :])
        self.same_run = same_run
        same_cycle = ((rec.cycle[:, None] == rec.cycle[None, :]) & (rec.cycle[:, None] >= 0)
                      & same_run & ~np.eye(n, dtype=bool))
        self.same_cycle = same_cycle
        # Within a cycle the order of the 4 turns is unknown (shuffled): two
        # blocks are 1, 2 or 3 turns apart with chances 3/6, 2/6, 1/6, so
        # their drift covariance is that mixture's.
        self.turn = (rec.seconds[:, None] + rec.seconds[None, :]) / 2
        same_trial = (rec.trial[:, None] == rec.trial[None, :]).astype(float)
        inter = np.array([rec.trials[t]["interleaved"] for t in rec.trial])
        self.Z_seq = same_trial * np.outer(~inter, ~inter)
        self.Z_int = same_trial * np.outer(inter, inter)
        self.I = np.eye(n)

    def kernel(self, tau):
        K = np.exp(-self.dt / tau)
        dK = self.dt / tau * K
        Kc = sum(w * np.exp(-m * self.turn / tau) for m, w in ((1, 3 / 6), (2, 2 / 6), (3, 1 / 6)))
        dKc = sum(w * m * self.turn / tau * np.exp(-m * self.turn / tau)
                  for m, w in ((1, 3 / 6), (2, 2 / 6), (3, 1 / 6)))
        K = np.where(self.same_cycle, Kc, K) * self.same_run
        dK = np.where(self.same_cycle, dKc, dK) * self.same_run
        return K, dK

    def covariance(self, theta):
        se, sd, tau, sps, spi = np.exp(theta)
        K, dK = self.kernel(tau)
        V = se ** 2 * self.I + sd ** 2 * K + sps ** 2 * self.Z_seq + spi ** 2 * self.Z_int
        return V, K, dK

    def reml(self, theta, Y, grad=True):
        """Restricted log likelihood of the columns of Y (and its gradient in
        log parameters)."""
        se, sd, tau, sps, spi = np.exp(theta)
        V, K, dK = self.covariance(theta)
        L = np.linalg.cholesky(V)
        Vi = np.linalg.inv(V)
        XtVi = self.X.T @ Vi
        A = XtVi @ self.X
        P = Vi - XtVi.T @ np.linalg.solve(A, XtVi)
        PY = P @ Y
        ll = -0.5 * (2 * np.log(np.diag(L)).sum() + np.linalg.slogdet(A)[1] + (Y * PY).sum(0))
        if not grad:
            return ll
        dV = (2 * se ** 2 * self.I, 2 * sd ** 2 * K, sd ** 2 * dK,
              2 * sps ** 2 * self.Z_seq, 2 * spi ** 2 * self.Z_int)
        g = np.array([-0.5 * (P * d).sum() + 0.5 * (PY * (d @ PY)).sum(0) for d in dV])
        return ll, g

    def fit(self, Y, start=None, fixed=None, restart=True):
        """REML estimate (log parameters); fixed: {index: log value} held.
        A standard deviation at its lower bound has no gradient in its log, so
        the starts keep every one of them away from it."""
        fixed = fixed or {}
        free = [i for i in range(5) if i not in fixed]
        x0 = np.log([0.04, 0.05, 5.0, 0.02, 0.02]) if start is None else np.array(start)

        def full(x):
            th = np.array(x0, dtype=float)
            th[free] = x
            for i, v in fixed.items():
                th[i] = v
            return th

        def f(x):
            ll, g = self.reml(full(x), Y)
            return -ll, -g[free]

        best = None
        # Two starts: one with drift, one with process offsets; the likelihood
        # can have a ridge between them.
        starts = [np.maximum(x0, math.log(0.01))[free]]
        if restart:
            starts.append(np.log([0.05, 1e-3, 5.0, 0.05, 0.02])[free])
        for s in starts:
            r = optimize.minimize(f, s, jac=True, method="L-BFGS-B",
                                  bounds=list(zip(LOWER[free], UPPER[free])))
            if best is None or r.fun < best.fun:
                best = r
        return full(best.x), -best.fun

    def gls(self, theta, y):
        V, _, _ = self.covariance(theta)
        Vi = np.linalg.inv(V)
        cov = np.linalg.inv(self.X.T @ Vi @ self.X)
        return cov @ self.X.T @ Vi @ y, cov

    def simulate(self, theta, beta, reps, rng, nu=math.inf):
        """reps data sets from the fitted model (columns); block noise t(nu)."""
        se = math.exp(theta[0])
        V, _, _ = self.covariance(theta)
        L = np.linalg.cholesky(V - se ** 2 * self.I)
        e = rng.standard_normal((self.rec.n, reps)) if math.isinf(nu) else \
            rng.standard_t(nu, (self.rec.n, reps)) * math.sqrt((nu - 2) / nu)
        return (self.X @ beta)[:, None] + L @ rng.standard_normal((self.rec.n, reps)) + se * e


@dataclass
class Noise:
    """What the simulation draws: log throughput of a block of `L` seconds of
    config c in process p at wall time t = mu[c] + p + D(t) + e, with
    e = sigma_e / sqrt(L) * t(nu) scaled to unit variance (independent noise
    of the steps: a block's variance goes as 1 / its length)."""
    label: str
    mu: np.ndarray          # log throughput per config (updates/s)
    sigma_e: float          # a 1 s block's own noise
    nu: float               # its tails (t degrees of freedom)
    sigma_D: float          # common drift
    tau: float              # its correlation time, s
    sigma_p: float          # per-process offset


@dataclass
class Costs:
    """Per-process fixed costs, seconds (from the records)."""
    start: float    # spawn, plugin load, create (CUDA context), exit
    warmup: float   # measure.warmup_steps (the first step is most of it)
    evaluate: float
    turn: float     # host's hand-over between two turns
    gpu_share: float  # the GPU busy share of one dqn process (NVML)


def calibrate(rec, boot, rng, log):
    model = Model(rec)
    t0 = time.time()
    theta, ll = model.fit(rec.y)
    beta, beta_cov = model.gls(theta, rec.y)
    # The same data without common drift: offsets per process only.
    theta_nd, ll_nd = model.fit(rec.y, start=np.log([0.06, 1e-4, 5, 0.05, 0.01]),
                                fixed={1: LOWER[1], 2: math.log(5.0)})
    # One process spread for both modes (with drift).
    m_eq = Model(rec)
    m_eq.Z_seq = m_eq.Z_seq + m_eq.Z_int
    m_eq.Z_int = 0 * m_eq.Z_int
    theta_eq, ll_eq = m_eq.fit(rec.y, start=theta, fixed={4: LOWER[4]})

    # The drift private to each process (a slow wander of its own) instead of
    # common to the processes alive at the same time: the same parameters.
    m_private = Model(rec)
    m_private.same_run = rec.trial[:, None] == rec.trial[None, :]
    m_private.same_cycle = m_private.same_cycle & m_private.same_run
    theta_pv, ll_pv = m_private.fit(rec.y)

    # One-sided 95% upper bounds of the process sds by profile likelihood
    # (2 x the log likelihood's drop = 2.71): at a boundary estimate (0) the
    # bootstrap's percentiles say where estimates of 0 scatter, not how large
    # the sd could be.
    def profile_upper(i):
        def drop(v):
            return 2 * (ll - model.fit(rec.y, start=theta, fixed={i: math.log(v)})[1]) - 2.71
        return optimize.brentq(drop, max(math.exp(theta[i]), 1e-3), 0.3, xtol=1e-4)
    upper = {i: profile_upper(i) for i in (3, 4)}

    # Parametric bootstrap: data sets from the fit, refitted.
    Ys = model.simulate(theta, beta, boot, rng)
    est = np.array([model.fit(Ys[:, b], start=theta, restart=False)[0] for b in range(boot)])
    lo, hi = np.percentile(np.exp(est), [5, 95], axis=0)
    lo2, hi2 = np.percentile(np.exp(est), [2.5, 97.5], axis=0)

    log(f"REML fit of the 120 blocks ({time.time() - t0:.1f} s with {boot} bootstrap refits)")
    names = {"sigma_e": "block noise, a 1 s block's own (sd of log)",
             "sigma_D": "common drift (OU), sd of log",
             "tau": "drift correlation time, s",
             "sigma_p_seq": "process offset, sequential trials (sd)",
             "sigma_p_int": "process offset, interleaved trials (sd)"}
    log(f"  {'component':44s} {'estimate':>9s}   {'bootstrap 90%':>17s}   {'bootstrap 95%':>17s}"
        "   profile upper 95%")
    for i, p in enumerate(PARAMS):
        v = math.exp(theta[i])
        fmt = (lambda x: f"{x:.2f}") if p == "tau" else (lambda x: f"{100 * x:.2f}%")
        log(f"  {names[p]:44s} {fmt(v):>9s}   [{fmt(lo[i]):>7s}, {fmt(hi[i]):>7s}]"
            f"   [{fmt(lo2[i]):>7s}, {fmt(hi2[i]):>7s}]"
            + (f"   {fmt(upper[i]):>7s}" if i in upper else ""))
    ratios = np.exp(beta[:4] - beta[0])
    se_r = np.sqrt([beta_cov[c, c] + beta_cov[0, 0] - 2 * beta_cov[0, c] for c in range(4)])
    log("  true ratios for the simulation (GLS, +-1.96 se): " + ", ".join(
        f"#{c + 1} {ratios[c]:.4f}" + (f" +-{1.96 * se_r[c]:.3f}" if c else "") for c in range(4))
        + f"; baseline {math.exp(beta[0]):.0f} updates/s; interleaved run's offset "
        f"{100 * beta[4]:+.1f}%")
    log(f"  log likelihood {ll:.2f}; without drift (process offsets only) {ll_nd:.2f}: "
        f"LR {2 * (ll - ll_nd):.1f} on 2 df (chi2 p {stats.chi2.sf(2 * (ll - ll_nd), 2):.1e}, "
        f"approximate: a boundary); one process sd for both modes {ll_eq:.2f} "
        f"(LR {2 * (ll - ll_eq):.2f})")
    log(f"  the same drift private to each process instead of common: log likelihood {ll_pv:.2f} "
        f"(common drift {math.exp(ll - ll_pv):.0f} times as likely; its fit: block noise "
        f"{100 * math.exp(theta_pv[0]):.2f}%, wander {100 * math.exp(theta_pv[1]):.2f}% over "
        f"{math.exp(theta_pv[2]):.1f} s, process sd sequential {100 * math.exp(theta_pv[3]):.2f}%)")
    log("  without drift the fit reads: block noise "
        f"{100 * math.exp(theta_nd[0]):.2f}%, process sd sequential "
        f"{100 * math.exp(theta_nd[3]):.2f}%, interleaved {100 * math.exp(theta_nd[4]):.2f}%")
    return model, theta, beta, est, theta_nd, hi, upper


def describe_records(rec, model, theta, beta, rng, log, reps):
    """Model-free views, tails, position and warm-up, and the fixed costs."""
    # Do processes alive together agree more than ones run apart? The
    # per-repeat log ratio to the baseline (the observation of the t over
    # repeats) in each run, config means removed.
    log("model-free: per-repeat log ratios to the baseline (what the t over repeats sees)")
    sds = []
    for run, name in ((0, "sequential (qs)"), (1, "interleaved (qsi)")):
        d = []
        for c in (1, 2, 3):
            per = []
            for r in range(3):
                def mean_of(cfg):
                    sel = ((rec.run == run) & (rec.config == cfg)
                           & (np.array([rec.trials[t]["repeat"] for t in rec.trial]) == r))
                    return rec.y[sel].mean()
                per.append(mean_of(c) - mean_of(0))
            d.append(np.array(per) - np.mean(per))
        d = np.concatenate(d)
        sd = math.sqrt((d ** 2).sum() / 6)  # 9 values, 3 config means: 6 df
        sds.append(sd)
        lo, hi = sd * np.sqrt(6 / stats.chi2.ppf([0.95, 0.05], 6))
        log(f"  {name:18s} sd {100 * sd:5.2f}% (90% chi2 interval "
            f"[{100 * lo:.2f}%, {100 * hi:.2f}%])"
            f"; a 98.5% half-width over 3 repeats would be about "
            f"{100 * math.sinh(stats.t.ppf(0.9925, 2) * sd / math.sqrt(3)):.0f}%")
    F = (sds[0] / sds[1]) ** 2
    log(f"  ratio of variances {F:.1f}, F(6, 6) one-sided p {stats.f.sf(F, 6, 6):.3f}: the "
        "processes that took turns agreed far better than those run one after another")

    # Tails of the block noise: standardized conditional residuals, and the
    # t degrees of freedom whose simulated residuals have the same kurtosis.
    V, _, _ = model.covariance(theta)
    Vi = np.linalg.inv(V)
    XtVi = model.X.T @ Vi
    P = Vi - XtVi.T @ np.linalg.solve(XtVi @ model.X, XtVi)
    dP = np.sqrt(np.diag(P))

    def kurt(Y):
        r = (P @ Y) / dP[:, None]
        return stats.kurtosis(r, axis=0), stats.skew(r, axis=0)

    k_obs, s_obs = kurt(rec.y[:, None])
    k_obs, s_obs = float(k_obs[0]), float(s_obs[0])
    # The median (not the mean: with few df the kurtosis of 120 values is
    # ruled by its rare extremes) of the simulated kurtosis for each df.
    k_by_nu = {}
    for nu in (3, 3.5, 4, 5, 6, 8, 12, 30, math.inf):
        k_by_nu[nu] = float(np.median(kurt(model.simulate(theta, beta, reps, rng, nu))[0]))
    kg = kurt(model.simulate(theta, beta, reps, rng))[0]
    p_k = float(np.mean(kg >= k_obs))
    nus = sorted(k_by_nu)
    nu_fit = nus[0]  # observed beyond the heaviest: the heaviest
    for a, b in zip(nus, nus[1:]):
        if k_by_nu[b] <= k_obs <= k_by_nu[a]:
            share = (k_by_nu[a] - k_obs) / (k_by_nu[a] - k_by_nu[b])
            nu_fit = b if math.isinf(b) else a + (b - a) * share
            break
    log(f"tails: standardized block residuals' excess kurtosis {k_obs:.2f}, skew {s_obs:+.2f} "
        f"(the Gaussian model's: median {np.median(kg):.2f}, P(>= observed) {p_k:.3f}); median "
        "simulated kurtosis by t df "
        + ", ".join(f"{'inf' if math.isinf(k) else f'{k:g}'}: {v:.2f}" for k, v in k_by_nu.items())
        + f" -> heavy-tailed, t with about {nu_fit:.1f} df (the skew, fast blocks, is not "
        "modelled)")

    # Position in a trial: fixed effects of block index 1..4 against 0.
    pos = Model(rec, [(rec.idx == i).astype(float) for i in range(1, 5)])
    b_pos, c_pos = pos.gls(theta, rec.y)
    se_pos = np.sqrt(np.diag(c_pos))
    log("position in the trial (block i - block 0, GLS +-1.96 se): " + ", ".join(
        f"{i}: {100 * b_pos[4 + i]:+.1f}+-{196 * se_pos[4 + i]:.1f}%" for i in range(1, 5))
        + " -> no warm-up trend after 100 warm-up steps; equal in every process of a window, so "
        "it cancels in both designs")

    # Warm-up and fixed costs.
    seq = [t for t in rec.trials if not t["interleaved"]]
    inter = [t for t in rec.trials if t["interleaved"]]
    step = np.mean([sum(t["block_seconds"]) / sum(t["block_steps"]) for t in seq])
    first = np.mean([t["first_step_s"] for t in seq + inter])
    rest = np.mean([(t["warmup_s"] - t["first_step_s"]) / (WARMUP_STEPS - 1) for t in seq + inter])
    start = [t["wall_s"] - t["warmup_s"] - sum(t["block_seconds"]) - t["evaluate_s"] for t in seq]
    setup = [t["setup_s"] for t in seq]
    # Turn hand-over: the interleaved run's span less its trials' turns, per
    # turn (the first trial's 0.47 s fork-server start excluded).
    span = max(t["finished_s"] for t in inter) - min(t["started_s"] for t in inter)
    turns = sum(len(t["block_seconds"]) + 1 for t in inter)
    lag = sorted(t["started_s"] for t in inter)[1]
    turn = max(0.0, (span - sum(t["turn_s"] for t in inter) - lag) / turns)
    costs = Costs(start=float(np.mean(start)),
                  warmup=float(np.mean([t["warmup_s"] for t in seq + inter])),
                  evaluate=float(np.mean([t["evaluate_s"] for t in seq + inter])),
                  turn=max(turn, 0.005), gpu_share=0.19)
    log(f"warm-up: first step {first:.3f} s, steps 2-100 {1e3 * rest:.2f} ms each against "
        f"{1e3 * step:.2f} ms measured: warm-up is the first step's transient")
    log(f"per-process costs (sequential trials, mean [min, max]): start = wall - warm-up - "
        f"blocks - evaluation {costs.start:.2f} s [{min(start):.2f}, {max(start):.2f}] (of it "
        f"create() {np.mean(setup):.2f} s), warm-up {costs.warmup:.2f} s, evaluation "
        f"{costs.evaluate:.2f} s; a turn's hand-over {1e3 * turn:.1f} ms (simulated as "
        f"{1e3 * costs.turn:.0f} ms); GPU busy "
        f"{100 * costs.gpu_share:.0f}% per process (NVML, launch-bound)")
    seq_wall = sum(t["wall_s"] for t in seq)
    log(f"recorded sweeps: sequential {seq_wall:.0f} s for 12 trials "
        f"({seq_wall / 12:.2f} s a trial), "
        f"interleaved {span:.0f} s")
    return costs, nu_fit


# ---------------------------------------------------------------------------
# 3. The sweeps
# ---------------------------------------------------------------------------
@dataclass
class Design:
    rule: str            # "old" or "new"
    P: int = 1           # processes per config per window
    B: int = 5           # blocks per process
    block_s: float = 1.0
    start: str = "serial"   # serial | parallel | overlapped
    separation: bool = False  # the shipped rule's stop for a clear difference
    budget: float = BUDGET

    def name(self):
        if self.rule == "old":
            return "old: sequential trials, 5 x 400 steps"
        return f"new: P={self.P} B={self.B} block_s={self.block_s:.3g} start={self.start}"


class Drift:
    """An OU process per sweep, advanced by per-sweep time steps (exact)."""

    def __init__(self, noise, n, rng):
        self.s, self.tau, self.rng = noise.sigma_D, noise.tau, rng
        self.d = self.s * rng.standard_normal(n)

    def advance(self, dt):
        if self.s == 0:
            return self.d
        a = np.exp(-dt / self.tau)
        self.d = self.d * a + self.s * np.sqrt(1 - a * a) * self.rng.standard_normal(self.d.shape)
        return self.d

    def advance_at(self, idx, dt):
        """Advances the sweeps idx only, by dt each; returns their drift."""
        if self.s == 0:
            return self.d[idx]
        a = math.exp(-dt / self.tau)
        self.d[idx] = self.d[idx] * a + self.s * math.sqrt(1 - a * a) * self.rng.standard_normal(
            len(idx))
        return self.d[idx]


def block_noise(noise, L, n, rng):
    scale = noise.sigma_e / math.sqrt(L)
    if math.isinf(noise.nu):
        return scale * rng.standard_normal(n)
    return scale * math.sqrt((noise.nu - 2) / noise.nu) * rng.standard_t(noise.nu, n)


class Looks:
    """The stopping rule of SweepRun::precision_rounds over per-round (or
    per-window) log ratios of the 3 configs to the baseline."""

    def __init__(self, n, separation):
        self.sum = np.zeros((n, 3))
        self.sum2 = np.zeros((n, 3))
        self.count = np.zeros((n, 3), dtype=int)
        self.open = np.ones((n, 3), dtype=bool)
        self.separation = separation

    # The 98.5% quantiles by degrees of freedom (index = df).
    TQ = stats.t.ppf(0.5 + SEQ_LEVEL / 2, np.maximum(np.arange(MAX_ROUNDS + 2), 1))

    def add(self, ratios, ran):
        r = np.where(ran, ratios, 0.0)
        self.sum += r
        self.sum2 += r * r
        self.count += ran

    def interval(self):
        n = np.maximum(self.count, 1)
        mean = self.sum / n
        var = np.maximum(self.sum2 - n * mean * mean, 0) / np.maximum(n - 1, 1)
        se = np.sqrt(var / n)
        return mean, se, self.TQ[np.maximum(n - 1, 1)] * se

    def look(self, k):
        """Look k (1-based): configs within the target, or (shipped rule) clearly
        apart, are done."""
        mean, se, half = self.interval()
        done = half_width(half) <= TARGET
        if self.separation:
            df = np.maximum(self.count - 1, 1)
            ts = stats.t.ppf(0.5 + separation_level(k) / 2, df)
            low, high = np.exp(mean - ts * se), np.exp(mean + ts * se)
            done |= (low > 1 + TARGET) | (high < 1 - TARGET)
        self.open &= ~done


def run_sweeps(design, noise, costs, n, rng):
    """n sweeps of the 4 quickstart configs; returns per sweep the final
    half-widths (n x 3), whether each interval covers the truth, wall time
    and rounds."""
    looks = Looks(n, design.separation)
    drift = Drift(noise, n, rng)
    clock = np.zeros(n)
    live = np.ones(n, dtype=bool)
    rounds = 0
    round_times = []
    ar = np.arange(n)
    thr = np.exp(noise.mu)
    while live.any() and rounds < MAX_ROUNDS:
        start_clock = clock.copy()
        # The round's configs: the baseline and those still open.
        in_round = np.concatenate([np.ones((n, 1), bool), looks.open], 1) & live[:, None]
        size = in_round.sum(1)
        if design.rule == "old":
            means = old_round(design, noise, costs, in_round, drift, clock, rng, ar, thr)
        else:
            means = new_window(design, noise, costs, in_round, drift, clock, rng, ar, rounds)
        looks.add(means[:, 1:] - means[:, :1], in_round[:, 1:])
        rounds += 1
        took = clock - start_clock
        round_times.append(took)
        if rounds < REPEATS:
            continue
        looks.look(rounds - REPEATS + 1)
        # The next round's share of the last round's time (the first look
        # uses the first batch's mean round).
        per_trial = (np.mean(round_times, 0) if rounds == REPEATS else took) / np.maximum(size, 1)
        next_size = 1 + looks.open.sum(1)
        over = clock + per_trial * next_size > design.budget
        live &= looks.open.any(1) & ~over
    mean, se, half = looks.interval()
    truth = noise.mu[1:] - noise.mu[0]
    covered = np.abs(mean - truth) <= half
    return half_width(half), covered, clock, looks.count[:, 0]


def old_round(design, noise, costs, in_round, drift, clock, rng, ar, thr):
    """One round as shipped on a GPU: the round's trials one after another in
    a shuffled order, each start, warm-up, 5 blocks of 400 steps, evaluation.
    Returns each config's mean log block throughput (n x 4)."""
    n = len(ar)
    order = np.argsort(rng.random((n, 4)), 1)
    means = np.zeros((n, 4))
    for q in range(4):
        c = order[:, q]
        runs = in_round[ar, c]
        dt = (costs.start + costs.warmup) * runs
        drift.advance(dt)
        clock += dt
        p = noise.sigma_p * rng.standard_normal(n)
        acc = np.zeros(n)
        L = OLD_STEPS / thr[c]  # a block's nominal length
        for _ in range(OLD_BLOCKS):
            d = drift.advance(L / 2 * runs)
            acc += noise.mu[c] + p + d + block_noise(noise, 1.0, n, rng) / np.sqrt(L)
            drift.advance(L / 2 * runs)
            clock += L * runs
        dt = costs.evaluate * runs
        drift.advance(dt)
        clock += dt
        means[ar, c] = acc / OLD_BLOCKS
    return means


class Schedules:
    """The turns of a window as gpusweep's own TurnScheduler grants them
    (host/src/run/turn_scheduler.hpp, through scheduler_sim: see
    scheduler_sim.cpp for its output): which process takes each turn, and
    which turns run at once. A pool of windows per (processes, blocks,
    starts), read once; each simulated window draws one of them."""

    POOL = 2000

    def __init__(self, program, seed):
        self.program, self.seed, self.pools = program, seed, {}

    def get(self, procs, blocks, starts):
        """(steps, ids): steps, a list of (kind, turns granted at once);
        ids, POOL x len(steps), the process of each one-turn step (-1 for
        steps of several turns: the whole window at once)."""
        key = (procs, blocks, starts)
        if key not in self.pools:
            seed = self.seed * 1000003 + procs * 10007 + blocks * 101 + len(starts)
            out = subprocess.run([self.program, "--procs", str(procs), "--blocks", str(blocks),
                                  "--starts", starts, "--windows", str(self.POOL),
                                  "--seed", str(seed)],
                                 capture_output=True, text=True, check=True).stdout
            self.pools[key] = self.parse(out.split("\n")[:self.POOL], procs)
        return self.pools[key]

    @staticmethod
    def parse(lines, procs):
        steps, ids = None, []
        for line in lines:
            batches = [b.split(",") for b in line.split(" ")]
            shape = [(b[0][0], len(b)) for b in batches]
            if steps is None:
                steps = shape
            if shape != steps or any(w not in (1, procs) or any(t[0] != kind for t in b)
                                     for (kind, w), b in zip(shape, batches)):
                raise SystemExit(f"scheduler_sim: windows of another shape: {line}")
            ids.append([int(b[0][1:]) if len(b) == 1 else -1 for b in batches])
        return steps, np.array(ids)


SCHEDULES = None  # Schedules, set by main


def new_window(design, noise, costs, in_round, drift, clock, rng, ar, index):
    """One window of the new design: P processes per config of the round
    alive together, taking the turns gpusweep's TurnScheduler grants them
    (SCHEDULES) with B blocks of block_s each. Unmeasured phases: serial
    (each process's start and warm-up in its own first turn, its
    evaluation after its last block in the same turn, as the gate does);
    parallel (the window's processes start and warm up at once before the
    first cycle, evaluate at once after the last: no block is measured
    meanwhile; warm-up and evaluation stretched when the processes together
    would keep the GPU busier than 100%); built (as parallel, then each
    process sizes its blocks by time in a turn of its own, doubling runs to
    a tenth of a block and one more: about 0.45 of a block); overlapped (as
    parallel, but the processes are started while the previous window's
    blocks run, assuming that does not disturb them: only the first window
    pays the start)."""
    n = len(ar)
    P, L = design.P, design.block_s
    procs = 4 * P
    config_of = np.repeat(np.arange(4), P)
    alive = in_round[:, config_of]                   # n x procs
    k = alive.sum(1)
    starts = "parallel" if design.start == "overlapped" else design.start
    start_s = 0.0 if design.start == "overlapped" and index > 0 else costs.start
    p = noise.sigma_p * rng.standard_normal((n, procs))
    sums = np.zeros((n, procs))
    mu = noise.mu[config_of]
    for size in np.unique(k[k > 0]):
        g = np.nonzero(k == size)[0]
        # The window's processes in the order started (the scheduler's ids).
        cols = np.nonzero(alive[g])[1].reshape(len(g), size)
        steps, ids = SCHEDULES.get(int(size), design.B, starts)
        pick = ids[rng.integers(0, len(ids), len(g))]
        rows = np.arange(len(g))
        for t, (kind, width) in enumerate(steps):
            stretch = max(1.0, width * costs.gpu_share)
            if kind in "SEZ":
                dt = {"S": start_s + stretch * costs.warmup, "E": stretch * costs.evaluate,
                      "Z": 0.45 * L + costs.turn}[kind]
                drift.advance_at(g, dt)
                clock[g] += dt
                continue
            i = cols[rows, pick[:, t]]
            d = drift.advance_at(g, costs.turn + L / 2)
            sums[g, i] += mu[i] + p[g, i] + d + block_noise(noise, L, len(g), rng)
            drift.advance_at(g, L / 2)
            clock[g] += costs.turn + L
            if kind == "L":
                drift.advance_at(g, costs.evaluate)
                clock[g] += costs.evaluate
    # Each config's mean over its processes' blocks (paired by cycle: every
    # process has one block a cycle, so the mean of the cycles' differences
    # is the difference of the means).
    per_proc = sums / design.B
    return per_proc.reshape(n, 4, P).mean(2)


@dataclass
class Result:
    design: Design
    noise: str
    hw_med: float
    hw_p10: float
    hw_p90: float
    wall: float
    rounds: float
    cover: float
    cover_lo: float
    cover_hi: float
    medians: np.ndarray   # per sweep, the median half-width over configs

    def percentile_of(self, value):
        """Where a recorded median half-width falls among the simulated ones."""
        return 100 * float(np.mean(self.medians <= value))

    def mc_se(self):
        """Monte Carlo standard error of hw_med (bootstrap over the sweeps)."""
        rng = np.random.default_rng(0)
        idx = rng.integers(0, len(self.medians), (200, len(self.medians)))
        return float(np.std(np.median(self.medians[idx], 1)))

    def verdict(self):
        """Does it meet the goal: median half-width <= 3% in 120 s with
        coverage >= 95%? 'edge' when the median is within 2 Monte Carlo
        standard errors of 3%."""
        if self.wall > BUDGET or self.cover < 0.95:
            return "no"
        se = self.mc_se()
        if self.hw_med + 2 * se <= GOAL:
            return "yes"
        return "no" if self.hw_med - 2 * se > GOAL else "edge"


def evaluate(design, noise, costs, n, seed):
    rng = np.random.default_rng(seed)
    hw, covered, wall, rounds = run_sweeps(design, noise, costs, n, rng)
    med = np.median(hw, 1)  # the median over configs, as the run's note prints it
    k = int(covered.sum())
    _, lo, hi = wilson(k, covered.size)
    return Result(design, noise.label, float(np.median(med)), float(np.percentile(med, 10)),
                  float(np.percentile(med, 90)), float(np.median(wall)), float(np.median(rounds)),
                  k / covered.size, lo, hi, med)


def row(r):
    return (f"  {r.design.name():52s} {100 * r.hw_med:6.1f}% "
            f"[{100 * r.hw_p10:5.1f}, {100 * r.hw_p90:5.1f}]"
            f" {r.wall:6.0f} s {r.rounds:5.0f}   {100 * r.cover:5.1f}% [{100 * r.cover_lo:.1f}, "
            f"{100 * r.cover_hi:.1f}]"
            + {"yes": "  <= 3%", "edge": "  ~3% (edge)", "no": ""}[r.verdict()])


HEADER = (f"  {'rule':52s} {'median half-width [p10, p90]':>28s} {'wall':>7s} {'rounds':>6s}"
          f"   coverage [Wilson 95%]")


# ---------------------------------------------------------------------------
# 4. Main
# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sweeps and refits (under 20 s)")
    ap.add_argument("--sweeps", type=int, default=None, help="sweeps per rule (1000; --quick 200)")
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--built", action="store_true",
                    help="only the design as gpusweep builds it (parallel starts, each process "
                         "sizing its blocks in a turn of its own), at the quickstart's settings "
                         "and the best block length, calibrated and at the upper bound")
    ap.add_argument("--scheduler-sim", default=SCHEDULER_SIM, metavar="PATH",
                    help="gpusweep's TurnScheduler as a program (scheduler_sim.cpp), which grants "
                         "the new design's turns (build/bench/scheduler_sim; cmake --build build "
                         "--target scheduler_sim)")
    args = ap.parse_args()
    if not os.access(args.scheduler_sim, os.X_OK):
        raise SystemExit(f"{args.scheduler_sim}: not built; cmake --build build --target "
                         "scheduler_sim (or pass --scheduler-sim PATH)")
    global SCHEDULES
    SCHEDULES = Schedules(args.scheduler_sim, args.seed)
    n = args.sweeps or (200 if args.quick else 1000)
    n_search = min(n, 80 if args.quick else 300)
    boot = 30 if args.quick else 200
    t_start = time.time()
    rng = np.random.default_rng(args.seed)
    log = print

    rec = Records(DATA)
    log(f"== 1. calibration on {rec.n} blocks of {len(rec.trials)} H100 trials "
        "(h100_quickstart.json)")
    model, theta, beta, boot_est, theta_nd, hi, upper_sd = calibrate(rec, boot, rng, log)
    costs, nu = describe_records(rec, model, theta, beta, rng, log, 100 if args.quick else 400)
    mu = beta[:4] + beta[4] / 2   # the two runs' mean level
    lo5 = np.exp(np.percentile(boot_est, 5, axis=0))

    se, sD, tau, sps, spi = np.exp(theta)
    # Scenarios: (noise of the new design's processes, noise of the old rule's).
    calibrated = Noise("calibrated", mu, se, nu, sD, tau, spi)
    calibrated_old = replace(calibrated, sigma_p=sps)
    upper = replace(calibrated, label="calibrated, sigma_p at its upper 95% bound",
                    sigma_p=upper_sd[4])
    upper_old = replace(upper, sigma_p=upper_sd[3])
    nd_se, _, _, nd_sps, _ = np.exp(theta_nd)
    no_drift = Noise("no drift, every process with the sequential sd", mu, nd_se, nu, 0.0, tau,
                     nd_sps)
    pinned = replace(no_drift, label="no drift, pinning halves the process sd (HYPOTHETICAL)",
                     sigma_p=nd_sps / 2)
    scenarios = ((calibrated, calibrated_old), (upper, upper_old), (no_drift, no_drift),
                 (pinned, pinned))
    log(f"\nscenarios (block noise sigma_e for a 1 s block, t({nu:.1f}) tails; truth = the GLS "
        "ratios); sigma_p new design / old rule:")
    for s, o in scenarios:
        drift = (f"drift {100 * s.sigma_D:4.1f}% tau {s.tau:.1f} s" if s.sigma_D
                 else "no drift" + " " * 16)
        log(f"  {s.label:56s} sigma_p {100 * s.sigma_p:4.1f}% / {100 * o.sigma_p:4.1f}%  {drift}  "
            f"sigma_e {100 * s.sigma_e:4.1f}%")

    if args.built:
        log(f"\n== the design as built (measure.starts parallel, blocks sized per process); "
            f"{n} sweeps a line")
        log(HEADER)
        for s, o in scenarios[:2]:
            log(f"  [{s.label}]")
            log(row(evaluate(Design("old"), o, costs, n, 3)))
            for d in (Design("new", P=1, B=5, block_s=0.2, start="built", budget=60),
                      Design("new", P=1, B=5, block_s=0.2, start="built"),
                      Design("new", P=1, B=4, block_s=0.25, start="built"),
                      Design("new", P=1, B=6, block_s=0.25, start="built"),
                      Design("new", P=1, B=6, block_s=0.25, start="parallel"),
                      Design("new", P=1, B=6, block_s=0.25, start="built", budget=150)):
                log(row(evaluate(d, s, costs, n, 9)) + f"   budget {d.budget:.0f} s")
        log(f"done in {time.time() - t_start:.0f} s")
        return

    # Validation: the two recorded runs' rules at their 60 s budget (the
    # shipped rule, with its stop for a clear difference).
    log(f"\n== 2. validation: the recorded runs' rules at budget_s 60 ({n} sweeps a line)")
    log(HEADER)
    recorded = Design("new", P=1, B=5, block_s=OLD_STEPS / math.exp(mu[0]), start="serial",
                      budget=60, separation=True)
    for s, o in scenarios[:3]:
        log(f"  [{s.label}]")
        r = evaluate(Design("old", budget=60, separation=True), o, costs, n, 1)
        log(row(r) + f"   qs recorded 39.7%: percentile {r.percentile_of(0.397):.0f}")
        r = evaluate(recorded, s, costs, n, 2)
        log(row(r) + f"   qsi recorded 13.2%: percentile {r.percentile_of(0.132):.0f}")

    # The search: every design on n_search sweeps, the best ones again on n.
    blocks = (1, 2, 4, 6) if args.quick else (1, 2, 3, 4, 6, 8)
    lengths = (0.25, 0.5, 1.0) if args.quick else (0.1, 0.25, 0.5, 1.0)
    grid = [Design("new", P=P, B=B, block_s=L, start=st)
            for st in ("serial", "parallel", "overlapped")
            for P in (1, 2) for B in blocks for L in lengths]
    log(f"\n== 3. budget {BUDGET:.0f} s, target 1%, no stop for a clear difference (every config "
        f"runs to the target or the budget); {n} sweeps a line; the search: {len(grid)} designs on "
        f"{n_search} sweeps each, the best of each start mode and the 3 best again on {n}")
    summary = []
    for noise, old_noise in scenarios:
        log(f"\n-- noise: {noise.label}")
        log(HEADER)
        old = evaluate(Design("old"), old_noise, costs, n, 3)
        today = evaluate(Design("new", P=1, B=5, block_s=1.0, start="serial"), noise, costs, n, 4)
        coarse = [evaluate(d, noise, costs, n_search, 100 + i) for i, d in enumerate(grid)]
        ok = sorted((r for r in coarse if r.cover >= 0.95 and r.wall <= BUDGET),
                    key=lambda r: r.hw_med)
        picks = [next(r for r in ok if r.design.start == st)
                 for st in ("serial", "parallel", "overlapped")]
        finals = []
        for r in picks + ok[:3]:
            if all(r.design != f.design for f in finals):
                finals.append(evaluate(r.design, noise, costs, n, 7))
        finals.sort(key=lambda r: r.hw_med)
        for r in [old, today] + finals:
            log(row(r))
        best = finals[0]
        no_overlap = [r for r in finals if r.design.start != "overlapped"]
        summary.append((noise.label, old, best, min(no_overlap, key=lambda r: r.hw_med)))
        # The shipped rule (a config clearly apart stops) on the best design.
        log(row(evaluate(replace(best.design, separation=True), noise, costs, n, 8))
            + "   the best, with the shipped stop for a clear difference")
        # How it moves with what the records leave open, and what it would take.
        log(f"     the best design {best.design.name()[5:]}, median half-width when:")
        checks = [("as above", noise, costs),
                  ("Gaussian block noise", replace(noise, nu=math.inf), costs),
                  ("a turn's hand-over 20 ms", noise, replace(costs, turn=0.02)),
                  ("warm-up 10 steps (first step + 9)", noise,
                   replace(costs, warmup=costs.warmup - 90 * (costs.warmup - 0.29) / 99)),
                  ("warm-up 0.5 s longer (block sizing, min_warmup_s)", noise,
                   replace(costs, warmup=costs.warmup + 0.5))]
        if noise.sigma_D:
            checks += [("drift tau at its 5th percentile "
                        f"({np.exp(np.percentile(boot_est[:, 2], 5)):.1f} s)",
                        replace(noise, tau=float(lo5[2])), costs),
                       (f"sigma_e at its 95th percentile ({100 * hi[0]:.1f}%)",
                        replace(noise, sigma_e=float(hi[0])), costs)]
        checks += [("block noise and sigma_p x0.75", replace(noise, sigma_e=0.75 * noise.sigma_e,
                                                            sigma_p=0.75 * noise.sigma_p), costs),
                   ("block noise and sigma_p x0.5", replace(noise, sigma_e=0.5 * noise.sigma_e,
                                                           sigma_p=0.5 * noise.sigma_p), costs)]
        parts = []
        for label, q, c in checks:
            r = evaluate(best.design, q, c, n_search, 10)
            parts.append(f"{label}: {100 * r.hw_med:.1f}% (cov {100 * r.cover:.0f}%)")
        for budget in (150, 180, 240, 360):
            r = evaluate(replace(best.design, budget=budget), noise, costs, n_search, 9)
            parts.append(f"budget {budget} s: {100 * r.hw_med:.1f}%")
        for k in range(0, len(parts), 3):
            log("       " + "; ".join(parts[k:k + 3]))
        safe = min((r for r in finals if r.design.start != "overlapped"), key=lambda r: r.hw_med)
        parts = []
        for budget in (150, 180, 240):
            r = evaluate(replace(safe.design, budget=budget), noise, costs, n_search, 9)
            parts.append(f"budget {budget} s: {100 * r.hw_med:.1f}%")
        log(f"     the best without overlap, {safe.design.name()[5:]}: " + "; ".join(parts))
        if noise is calibrated:
            # Block length at the same 1 s measured per process and window:
            # short blocks keep a cycle short against the drift's tau.
            parts = []
            for q, label in ((noise, "with drift"), (replace(noise, sigma_D=0.0), "without")):
                cells = []
                for B, L in ((8, 0.125), (4, 0.25), (2, 0.5), (1, 1.0)):
                    r = evaluate(Design("new", P=1, B=B, block_s=L, start="overlapped"), q,
                                 costs, n_search, 11)
                    cells.append(f"{B}x{L:g} s {100 * r.hw_med:.1f}%")
                parts.append(f"{label}: " + ", ".join(cells))
            log("     1 s measured per process and window (P=1, overlapped), B x block_s: "
                + "; ".join(parts))

    log("\n== 4. summary: the old rule against the best new design; <= 3% in 120 s with coverage "
        ">= 95%? (edge: within 2 Monte Carlo se of 3%)")
    for label, old, best, safe in summary:
        log(f"  [{label}]\n    old {100 * old.hw_med:.2f}% in {old.wall:.0f} s; best "
            f"{best.design.name()[5:]}: {100 * best.hw_med:.2f}% (+-{100 * best.mc_se():.2f} Monte "
            f"Carlo) in {best.wall:.0f} s, coverage {100 * best.cover:.1f}% -> {best.verdict()}"
            f"\n    without overlap: {safe.design.name()[5:]}: {100 * safe.hw_med:.2f}% "
            f"(+-{100 * safe.mc_se():.2f}) -> {safe.verdict()}")
    log(f"\n({time.time() - t_start:.0f} s)")


if __name__ == "__main__":
    main()
