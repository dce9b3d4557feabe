# Sourced by the benchmark scripts: a work folder ($work) removed on exit,
# and start_neighbour ARGS, a noisy neighbour (neighbour.sh ARGS) in its own
# process group that is killed on exit too.
work=$(mktemp -d)
neighbour_pid=
cleanup() {
  [ -n "$neighbour_pid" ] && kill -- -"$neighbour_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
start_neighbour() {
  set -m
  "$(dirname "${BASH_SOURCE[0]}")/neighbour.sh" "$@" &
  neighbour_pid=$!
  set +m
}
