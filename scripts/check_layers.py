#!/usr/bin/env python3
"""Checks the host's #include edges against host/layers.txt.

Each folder of host/src is a layer that may include only its own headers and
those of the layers listed after its name in host/layers.txt; <gpusweep/db/...>
counts as layer `db`. Asio is the run and serve layers' alone (the worker process
and the analysis never see an event loop); <sqlite3.h> and SQL belong to db/ (no
host file calls Store::connection()). Prints
every violation as FILE:LINE and exits 1 when there is one.

Usage: check_layers.py [HOST_DIR]   (default: host/ beside this script's folder)
"""
import os
import re
import sys

host = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "host")
table = {}
with open(os.path.join(host, "layers.txt")) as f:
    for line in f:
        m = re.match(r"^([a-z_]+):(.*)$", line.strip())
        if m:
            table[m.group(1)] = set(m.group(2).split())
src = os.path.join(host, "src")
problems = []
for layer in sorted(os.listdir(src)):
    if not os.path.isdir(os.path.join(src, layer)):
        problems.append(f"{src}/{layer}: a file outside every layer folder")
        continue
    if layer not in table:
        problems.append(f"{src}/{layer}/: a folder that host/layers.txt does not list")
        continue
    allowed = table[layer] | {layer}
    for name in sorted(os.listdir(os.path.join(src, layer))):
        path = os.path.join(src, layer, name)
        with open(path, errors="replace") as f:
            for number, text in enumerate(f, 1):
                if re.search(r"\.connection\(\)", text):
                    problems.append(f"{path}:{number}: raw SQL outside db/ (Store::connection()); "
                                    f"add a Store method for what it reads")
                # The user's own query (`gpusweep sql`) is the one SQL text
                # the host hands the store.
                if re.search(r"\bread_query\(", text) and path != os.path.join(src, "cli",
                                                                              "cmd_sql.cpp"):
                    problems.append(f"{path}:{number}: SQL text outside db/ (Store::read_query is "
                                    f"for gpusweep sql's query); add a Store method for what it "
                                    f"reads")
                m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', text)
                if not m:
                    continue
                target = m.group(2)
                used = None
                if m.group(1) == '"' and "/" in target:
                    used = target.split("/")[0]
                elif target.startswith("gpusweep/db/"):
                    used = "db"
                where = f"{path}:{number}"
                if used is not None and used not in allowed:
                    problems.append(f"{where}: layer '{layer}' includes {target} from layer '{used}', "
                                    f"which host/layers.txt does not allow "
                                    f"(allowed: {' '.join(sorted(allowed))})")
                if target.startswith(("boost/asio", "boost/beast")) and layer not in ("run", "serve"):
                    problems.append(f"{where}: Asio in layer '{layer}'; only run/ and serve/ "
                                    f"drive an event loop")
                if target == "sqlite3.h":
                    problems.append(f"{where}: <sqlite3.h> outside db/; use the Store's API")
                if m.group(1) == '"' and "/" not in target:
                    problems.append(f'{where}: #include "{target}" without its layer folder '
                                    f'(write "{layer}/{target}")')
for p in problems:
    print(p)
if problems:
    print(f"check_layers: {len(problems)} include(s) cross host/layers.txt")
    sys.exit(1)
print(f"check_layers: {len(table)} layers, every #include within host/layers.txt")
