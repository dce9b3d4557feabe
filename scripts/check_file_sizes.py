#!/usr/bin/env python3
"""Refuses source files longer than a reader can hold.

A non-test source (the host, the results store, the SDK, the plugins) over
600 lines must say why at its top: a comment line starting "Long by design:"
among its first 30 lines. Every file of the command line (host/src/cli/)
but cli.cpp, the shared option plumbing, stays under 150 lines, without
exception: what a command computes belongs to the layer below
(docs/architecture.md, "The host's layers").

Usage: check_file_sizes.py [ROOT]   (default: the folder above this script's)
"""
import os
import sys

FILE_LIMIT = 600
COMMAND_LIMIT = 150
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
folders = ["host/src", "db/src", "db/include", "sdk/include", "sdk/torchkit/src",
           "sdk/torchkit/include", "sdk/python", "plugins"]
problems = []
checked = 0
for folder in folders:
    for dirpath, _, names in os.walk(os.path.join(root, folder)):
        for name in sorted(names):
            if not name.endswith((".cpp", ".hpp", ".h", ".py")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, errors="replace") as f:
                lines = f.read().split("\n")
            n = len(lines) - (1 if lines and lines[-1] == "" else 0)
            checked += 1
            if (rel.startswith("host/src/cli/") and rel != "host/src/cli/cli.cpp"
                    and n >= COMMAND_LIMIT):
                problems.append(f"{rel}: {n} lines; a file of cli/ stays under {COMMAND_LIMIT}: "
                                "move what it computes to the layer it belongs to")
            elif n > FILE_LIMIT:
                top = [l.lstrip("/#\" ") for l in lines[:30]]
                if not any(t.startswith("Long by design:") for t in top):
                    problems.append(f"{rel}: {n} lines, over {FILE_LIMIT}: split it by concern, "
                                    "or say why it is one file in a \"Long by design:\" line "
                                    "at its top")
for p in problems:
    print(p)
print(f"{checked} files checked, {len(problems)} problems")
sys.exit(1 if problems else 0)
