#!/usr/bin/env python3
"""Refuses functions longer than 80 lines that do not say why.

A function defined at the start of a line or as a member in a class body (the
code's style: its closing brace alone at the indentation of its first line)
and longer than 80 lines must have, in the comment
right above it, a line starting "Long by design:" that says why it is one
function; a function within the limit must not have one (a stale
exemption would excuse it growing again). Checks the host, the results
store, the SDK and the plugins.

Usage: check_functions.py [ROOT]   (default: the folder above this script's)
"""
import os
import re
import sys

LIMIT = 80
root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
folders = ["host/src", "db/src", "sdk/torchkit/src", "sdk/include", "plugins"]
start = re.compile(r"^( {2})?[A-Za-z_][\w:<>,*& ]*[\w>*&]\s*[\w:~]+\(.*")  # a definition's first line
skip = re.compile(r"^\s*(namespace|class|struct|enum|union|using|template|typedef|static_assert|extern|return|else|if|for|while|switch|case|throw)\b")
problems = []
checked = 0
for folder in folders:
    for dirpath, _, names in os.walk(os.path.join(root, folder)):
        for name in sorted(names):
            if not name.endswith((".cpp", ".hpp", ".h")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as f:
                lines = f.read().split("\n")
            i = 0
            while i < len(lines):
                line = lines[i]
                if not start.match(line) or skip.match(line) or line.rstrip().endswith(";"):
                    i += 1
                    continue
                # The body opens on this line or on one of the next few (long signatures).
                # A default argument's "{}" opens no body.
                def opens(k):
                    return "{" in lines[k].replace("{}", "")
                j = i
                while j < len(lines) and j < i + 6 and not opens(j):
                    if lines[j].rstrip().endswith(";"):
                        break
                    j += 1
                if j >= len(lines) or not opens(j) or lines[j].rstrip().endswith("};"):
                    i += 1
                    continue
                indent = line[: len(line) - len(line.lstrip())]
                end = j
                # A body that opens and closes on one line ends there: scanning
                # on for a closing brace would swallow the functions after it.
                body = lines[j].replace("{}", "")
                balanced = body.count("{") == body.count("}")
                while not balanced and end < len(lines) and lines[end] != indent + "}":
                    end += 1
                length = end - i + 1
                checked += 1
                k = i - 1
                comment = []
                while k >= 0 and lines[k].lstrip().startswith("//"):
                    comment.append(lines[k])
                    k -= 1
                exempt = any(c.lstrip("/ ").startswith("Long by design:") for c in comment)
                rel = os.path.relpath(path, root)
                if length > LIMIT and not exempt:
                    problems.append(f"{rel}:{i + 1}: {line.strip()[:60]}... is {length} lines; "
                                    f"split it, or say why above it (// Long by design: ...)")
                elif exempt and length <= LIMIT:
                    # An exemption outlives the length it excused: it would
                    # excuse the function growing again unseen.
                    problems.append(f"{rel}:{i + 1}: {line.strip()[:60]}... is {length} lines, "
                                    f"within {LIMIT}: drop its \"Long by design:\" line")
                i = end + 1
for p in problems:
    print(p)
print(f"check_functions: {checked} functions, {len(problems)} over {LIMIT} lines without a reason "
      f"or with a stale one")
sys.exit(1 if problems else 0)
