#!/bin/sh
# A placeholder for a test the build leaves out: says why, and exits 77
# (CTest: skipped). Usage: skip.sh REASON
echo "SKIPPED: $1"
exit 77
