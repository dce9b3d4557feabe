#!/usr/bin/env python3
"""Approval tests of gpusweep's outputs: each case runs one read-only command
on a fixture database and compares what it printed, byte for byte, with the
approved text in baselines/ (as Catch2's Baselines/*.approved.txt do).

    approve.py GPUSWEEP [--update] [--only SUBSTRING]

The fixture databases are SQL dumps in tests/fixtures/records/, loaded into
a scratch file per case. A case's output has the scratch folder replaced by
"$DB_DIR". With --update the baselines are rewritten from what the commands
print now; review the diff before committing it.
"""
import argparse
import difflib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = os.path.join(HERE, "..", "fixtures", "records")
BASELINES = os.path.join(HERE, "baselines")


def load(sql_name, folder):
    path = os.path.join(folder, sql_name.replace(".sql", ".db"))
    if not os.path.exists(path):
        with open(os.path.join(RECORDS, sql_name)) as f:
            script = f.read()
        con = sqlite3.connect(path)
        con.executescript(script)
        con.close()
    return path


def run_case(gpusweep, case, folder):
    db = load(case["db"], folder)
    args = [a.replace("$DB_DIR", folder) for a in case["args"]]
    env = dict(os.environ, NO_COLOR="1", COLUMNS="120", TZ="UTC")
    p = subprocess.run([os.path.abspath(gpusweep)] + args + ["--db", db], capture_output=True, text=True,
                       env=env, cwd=folder, timeout=120)
    out = p.stdout
    for name in case.get("files", []):
        with open(os.path.join(folder, name)) as f:
            out += "--- " + name + "\n" + f.read()
    out += "--- exit %d\n" % p.returncode
    return out.replace(folder, "$DB_DIR")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gpusweep")
    ap.add_argument("--update", action="store_true", help="rewrite the baselines")
    ap.add_argument("--only", default="", help="the cases whose name contains this")
    a = ap.parse_args()
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = json.load(f)
    failed = []
    with tempfile.TemporaryDirectory(prefix="gpusweep-approve-") as folder:
        for case in cases:
            if a.only not in case["name"]:
                continue
            got = run_case(a.gpusweep, case, folder)
            path = os.path.join(BASELINES, case["name"] + ".approved.txt")
            if a.update:
                os.makedirs(BASELINES, exist_ok=True)
                with open(path, "w") as f:
                    f.write(got)
                continue
            want = open(path).read() if os.path.exists(path) else ""
            if got != want:
                failed.append(case["name"])
                sys.stdout.writelines(difflib.unified_diff(
                    want.splitlines(True), got.splitlines(True),
                    path, case["name"] + " (received)"))
    if failed:
        print("%d case(s) differ from their approved text: %s\n(approve.py --update rewrites "
              "them: review the diff first)" % (len(failed), ", ".join(failed)))
        return 1
    print("%d case(s) as approved" % len([c for c in cases if a.only in c["name"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
