#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the launch tests and
# for trying `gpusweep launch --slurm` by hand: munged, slurmctld and slurmd
# from Debian's packages (slurmctld slurmd slurm-client munge), started by
# hand (no systemd) with their own configuration, sockets and state under
# $GPUSWEEP_SLURM_STATE (default /var/spool/gpusweep-slurm: batch scripts
# cannot run from a noexec /tmp), and ended by the pids they wrote.
#
# Usage: tests/slurm/local_cluster.sh start|stop|env
#   start  starts the daemons and waits for the node to be idle; prints the
#          `export SLURM_CONF=...` the Slurm commands need. Exits 77 (and says
#          why) where Slurm cannot start here: not root, packages missing,
#          a daemon that dies at start.
#   stop   cancels the cluster's jobs and ends the daemons this script started.
#   env    prints the export line only.
set -euo pipefail

state=${GPUSWEEP_SLURM_STATE:-/var/spool/gpusweep-slurm}
conf=$state/slurm.conf
daemons=(slurmd slurmctld munged)  # stop order

pidfile() { echo "$state/$1.pid"; }

# True while pid runs; a zombie (a daemon that exited but that nobody has
# reaped yet, common in containers) counts as gone.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2> /dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

pid_of() {
  local f
  f=$(pidfile "$1")
  [ -s "$f" ] && tr -dc 0-9 < "$f"
}

stop_daemon() {
  local name=$1 pid
  pid=$(pid_of "$name") || return 0
  [ -n "$pid" ] || return 0
  # The pidfile is ours; the process must still be the daemon that wrote it.
  if alive "$pid" && [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$name" ]; then
    kill -TERM "$pid" 2> /dev/null || true
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -KILL "$pid" 2> /dev/null || true; fi
  fi
  rm -f "$(pidfile "$name")"
}

stop() {
  if [ -f "$conf" ] && pid=$(pid_of slurmctld) && alive "$pid"; then
    # Jobs first, so that no slurmstepd or batch script outlives the cluster.
    export SLURM_CONF=$conf
    jobs=$(squeue -h -o %A 2> /dev/null | sort -u || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2> /dev/null || true
      for _ in $(seq 100); do
        [ -z "$(squeue -h -o %A 2> /dev/null || true)" ] && break
        sleep 0.1
      done
    fi
  fi
  for d in "${daemons[@]}"; do stop_daemon "$d"; done
  echo "local_cluster: stopped"
}

skip() {
  echo "SKIPPED: Slurm cannot start here: $*"
  exit 77
}

wait_pidfile() {
  local name=$1 log=$2
  for _ in $(seq 100); do
    if pid=$(pid_of "$name") && [ -n "$pid" ] && alive "$pid"; then return 0; fi
    sleep 0.1
  done
  echo "local_cluster: $name did not start; the end of $log:" >&2
  tail -n 20 "$log" >&2 2> /dev/null || true
  return 1
}

write_conf() {
  mkdir -p "$state/ctld" "$state/d"
  cat > "$conf" << EOF
# Written by gpusweep's tests/slurm/local_cluster.sh: one node, no accounting.
ClusterName=gpusweep
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$(pidfile slurmctld)
SlurmdPidFile=$(pidfile slurmd)
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] || skip "local_cluster.sh start needs root (daemons, /var/spool)"
  for cmd in munged slurmctld slurmd sbatch squeue scontrol; do
    command -v "$cmd" > /dev/null ||
      skip "'$cmd' is not installed (apt-get install --no-install-recommends slurmctld slurmd slurm-client munge, or ./scripts/install-deps.sh --test)"
  done
  [ -r /etc/munge/munge.key ] || skip "no /etc/munge/munge.key (reinstall the munge package)"
  stop > /dev/null  # whatever an earlier start left behind
  mkdir -p "$state"
  write_conf

  # munged checks that its socket folder belongs to it and is not writable by others.
  install -d -o munge -g munge -m 0755 "$state/munge"
  runuser -u munge -- munged --force --socket="$state/munge/munge.socket.2" \
    --pid-file="$state/munge/munged.pid" --log-file="$state/munge/munged.log" \
    --seed-file="$state/munge/munged.seed" ||
    { stop > /dev/null; skip "munged failed to start (see $state/munge/munged.log)"; }
  ln -sf "$state/munge/munged.pid" "$(pidfile munged)"
  wait_pidfile munged "$state/munge/munged.log" || { stop > /dev/null; skip "munged did not start"; }

  export SLURM_CONF=$conf
  : > "$state/slurmctld.log"
  : > "$state/slurmd.log"
  # -c: a clean controller state each start (no jobs left from an earlier one).
  slurmctld -c -f "$conf" || { stop > /dev/null; skip "slurmctld failed to start"; }
  wait_pidfile slurmctld "$state/slurmctld.log" || { stop > /dev/null; skip "slurmctld did not start"; }
  slurmd -N localhost -f "$conf" || { stop > /dev/null; skip "slurmd failed to start"; }
  wait_pidfile slurmd "$state/slurmd.log" || { stop > /dev/null; skip "slurmd did not start"; }

  for _ in $(seq 300); do
    node=$(sinfo -h -n localhost -o %T 2> /dev/null || true)
    if [ "$node" = idle ]; then
      echo "local_cluster: up (slurmctld $(pid_of slurmctld), slurmd $(pid_of slurmd), munged $(pid_of munged))"
      echo "export SLURM_CONF=$conf"
      return 0
    fi
    sleep 0.1
  done
  echo "local_cluster: the node is '${node:-unknown}', not idle, after 30 s; the end of slurmctld.log:" >&2
  tail -n 20 "$state/slurmctld.log" >&2 || true
  stop > /dev/null
  skip "the node did not become idle"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
