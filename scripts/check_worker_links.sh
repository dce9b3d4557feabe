#!/usr/bin/env bash
# The process a plugin runs in holds no database and no Asio: the worker
# program's symbols and shared libraries name neither, while the host
# program's do (so that this check can tell the two apart).
# usage: scripts/check_worker_links.sh WORKER_PROGRAM HOST_PROGRAM
set -euo pipefail
worker=$1
host=$2
# What a program pulls in of a part: its symbols (defined or needed) and its
# shared libraries.
uses() {
  local program=$1 pattern=$2
  { nm -C "$program" 2>/dev/null; ldd "$program" 2>/dev/null; } | grep -cE "$pattern" || true
}
status=0
for part in "sqlite3_|libsqlite3@SQLite" "boost::asio@Asio"; do
  pattern=${part%@*}
  name=${part#*@}
  in_host=$(uses "$host" "$pattern")
  in_worker=$(uses "$worker" "$pattern")
  if [ "$in_host" -eq 0 ]; then
    echo "check_worker_links: the host program shows no $name ($pattern): this check sees nothing" >&2
    status=1
  fi
  if [ "$in_worker" -ne 0 ]; then
    echo "check_worker_links: $worker uses $name ($in_worker symbols or libraries matching $pattern):" >&2
    { nm -C "$worker"; ldd "$worker"; } | grep -E "$pattern" | head -5 >&2
    status=1
  else
    echo "$name: host $in_host, worker 0"
  fi
done
exit $status
