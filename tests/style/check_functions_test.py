#!/usr/bin/env python3
"""check_functions.py measures every function: one after a body that opens
and closes on one line included (it once scanned on from such a body for a
closing brace and skipped every function in between) and one whose default
argument is "{}", it accepts a long one that says why, and it reports a
"Long by design:" line on a function within the limit.

Usage: check_functions_test.py CHECKER"""
import os
import subprocess
import sys
import tempfile

checker = sys.argv[1]


def run(source):
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "host", "src"))
        with open(os.path.join(root, "host", "src", "x.cpp"), "w") as f:
            f.write(source)
        return subprocess.run([sys.executable, checker, root], capture_output=True, text=True)


long_body = "".join("  x += %d;\n" % i for i in range(85))
source = ("int one_liner() { return 1; }\n\n"
          "int long_one(int x) {\n" + long_body + "  return x;\n}\n")
r = run(source)
if r.returncode != 1 or "long_one" not in r.stdout:
    sys.exit("FAIL: the long function after a one-line body was not measured:\n" + r.stdout)
r = run(source.replace("int long_one", "// Long by design: a test of the checker.\nint long_one"))
if r.returncode != 0:
    sys.exit("FAIL: a long function that says why was refused:\n" + r.stdout)
short = "// Long by design: it was, once.\nint short_one(int x) {\n  return x;\n}\n"
r = run(short)
if r.returncode != 1 or "short_one" not in r.stdout or "drop its" not in r.stdout:
    sys.exit("FAIL: an exemption on a short function was not reported:\n" + r.stdout)
# A default argument's {} opens no body: the function is measured whole.
r = run("int defaults(int x,\n             const int& y = {}) {\n" + long_body + "  return x;\n}\n")
if r.returncode != 1 or "defaults" not in r.stdout:
    sys.exit("FAIL: a long function with a {} default argument was not measured:\n" + r.stdout)
print("ok: a function after a one-line body is measured; stale exemptions and {} defaults too")
