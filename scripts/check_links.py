#!/usr/bin/env python3
"""Refuses a relative Markdown link that leads nowhere: every link in the
README, the docs, db/README.md and bench's pages must name a file that
exists and, with #anchor, a heading of it (GitHub's rule: lowercase,
punctuation dropped, spaces to hyphens, -1, -2 for repeats). The README is a
front door to docs/: a page moved or renamed must not strand its links.

Usage: check_links.py [ROOT]   (default: the folder above this script's)
"""
import pathlib
import re
import sys
import urllib.parse

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "..").resolve()
files = ([root / "README.md", root / "bench/README.md", root / "db/README.md"]
         + sorted((root / "docs").glob("*.md")) + sorted((root / "bench/results").glob("*.md")))


def anchors(path):
    out, seen, fence = set(), {}, False
    for line in path.read_text().split("\n"):
        if line.startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))
        a = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


bad = count = 0
for f in files:
    if not f.exists():
        continue
    text = re.sub(r"```.*?```", "", f.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", lambda m: "" if "](" not in m.group(0) else m.group(0), text)
    for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", text):
        url = m.group(1)
        if re.match(r"^[a-z]+:", url):
            continue
        count += 1
        path, _, frag = url.partition("#")
        target = (f.parent / urllib.parse.unquote(path)).resolve() if path else f
        if not target.exists():
            print("%s: missing %s" % (f.relative_to(root), url))
            bad += 1
        elif frag and target.is_file() and target.suffix == ".md" and frag not in anchors(target):
            print("%s: no heading #%s in %s" % (f.relative_to(root), frag, target.relative_to(root)))
            bad += 1
print("check_links: %d relative links in %d files, %d broken" % (count, len(files), bad))
sys.exit(1 if bad else 0)
