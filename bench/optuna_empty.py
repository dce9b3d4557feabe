"""Optuna's cost per empty trial, for bench/host_overhead's side-by-side figure.

Runs N trials of an objective that returns at once, in one process (Optuna's
default: trials are function calls, not processes), with the study stored in
SQLite as Optuna's RDB storage does for a persistent, resumable study: the
closest counterpart to a gpusweep run into its SQLite file. Prints one JSON
line: {"trials": N, "seconds": S, "per_trial_ms": ..., "optuna": VERSION}.

Usage: python3 bench/optuna_empty.py N DIR
"""
import json
import os
import sys
import time

import optuna


def main() -> None:
    n, folder = int(sys.argv[1]), sys.argv[2]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = "sqlite:///" + os.path.join(folder, "optuna.db")
    t0 = time.perf_counter()
    study = optuna.create_study(study_name="empty", storage=storage)
    # One categorical parameter, like the noop sweep's seed axis.
    study.optimize(lambda trial: float(trial.suggest_int("seed", 0, n)), n_trials=n)
    seconds = time.perf_counter() - t0
    print(json.dumps({"trials": n, "seconds": seconds, "per_trial_ms": 1e3 * seconds / n,
                      "optuna": optuna.__version__}))


if __name__ == "__main__":
    main()
