#!/usr/bin/env python3
"""Writes h100_quickstart.json, simulate.py's calibration data, from the two
databases of the first H100 run (2026-11-26): `gpusweep run
experiments/quickstart.json` (sequential trials) and the same with
`--set measure.interleave=4`. Run once, by hand, on copies of the databases
(they sit beside WAL files):

    python3 extract.py qs.db qsi.db > h100_quickstart.json

Only the standard library; nothing else in the repository reads the records.
"""
import json
import sqlite3
import sys
from datetime import datetime


def seconds(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def trials_of(path, name):
    db = sqlite3.connect(path)
    spec = json.loads(db.execute("SELECT spec_json FROM sweeps").fetchone()[0])
    rows = db.execute(
        "SELECT t.id, t.ordinal, t.config_index, t.repeat, t.config_json, t.started_at,"
        " t.finished_at, t.wall_s, t.interleave_group, m.setup_s, m.evaluate_s"
        " FROM trials t JOIN trial_summary m ON m.trial_id = t.id"
        " WHERE t.status = 'ok' ORDER BY t.ordinal").fetchall()
    t0 = min(seconds(r[5]) for r in rows)
    out = []
    for (tid, ordinal, config, repeat, config_json, started, finished, wall, group, setup,
         evaluate) in rows:
        stat = dict(db.execute(
            "SELECT name, value FROM metrics WHERE trial_id = ? AND kind = 'stat' AND name IN"
            " ('warmup_s', 'first_step_s', 'turn_s')", (tid,)).fetchall())
        blocks = db.execute("SELECT steps, seconds, cycle FROM blocks WHERE trial_id = ?"
                            " ORDER BY idx", (tid,)).fetchall()
        cfg = json.loads(config_json)
        out.append({
            "trial": tid, "ordinal": ordinal, "config": config, "repeat": repeat,
            "config_json": {k: cfg[k] for k in ("replay_on_device", "target_sync")},
            "started_s": round(seconds(started) - t0, 3),
            "finished_s": round(seconds(finished) - t0, 3),
            "wall_s": round(wall, 4), "setup_s": round(setup, 4),
            "warmup_s": round(stat["warmup_s"], 4),
            "first_step_s": round(stat["first_step_s"], 4),
            "evaluate_s": round(evaluate, 4),
            "turn_s": round(stat["turn_s"], 4) if "turn_s" in stat else None,
            "interleaved": group is not None,
            "block_steps": [b[0] for b in blocks],
            "block_seconds": [round(b[1], 6) for b in blocks],
            "block_cycles": [b[2] for b in blocks],
        })
    return {"name": name, "measure": spec["measure"], "trials": out}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: extract.py QS_DB QSI_DB > h100_quickstart.json")
    doc = {
        "source": "first H100 run, 2026-11-26 (main ae984a4, H100 80GB HBM3): "
                  "`gpusweep run experiments/quickstart.json` (qs) and the same with "
                  "--set measure.interleave=4 (qsi); times in seconds from each run's first "
                  "trial start",
        "baseline_config": 0,
        "runs": [trials_of(sys.argv[1], "sequential"), trials_of(sys.argv[2], "interleaved")],
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
