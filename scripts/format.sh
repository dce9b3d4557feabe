#!/usr/bin/env bash
# Formats the project's C and C++ sources with .clang-format (Google style at
# 100 columns), or with --check lists the files that differ and fails.
# The frozen copy of ABI 1.0 (tests/fixtures/abi_v1_0) and vendored headers
# (third_party/) stay as they shipped.
# Usage: scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format > /dev/null; then
  echo "format: clang-format is not installed (apt-get install clang-format)" >&2
  exit 77
fi
# Tracked files and new ones not yet added (but not ignored ones).
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.h' '*.c' |
                     grep -v -e '^tests/fixtures/abi_v1_0/' -e '/third_party/')
if [ "${1:-}" = --check ]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: ${#files[@]} files formatted as .clang-format says"
else
  clang-format -i "${files[@]}"
fi
