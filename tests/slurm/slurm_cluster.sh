#!/usr/bin/env bash
# tests/slurm/slurm_cluster.sh start|stop DIR [PROLOG]: a throwaway Slurm cluster of this one host for the Slurm
# test (tests/slurm/check_slurm.py). `start` makes everything in DIR: a munge key and munged on a socket of its own,
# a slurm.conf for this host (its node line from `slurmd -C`, free TCP ports, ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none, root as SlurmUser, MpiDefault pmix where Slurm has the plugin, else pmi2; PROLOG as its
# Prolog where given), then slurmctld -D and slurmd -D, and waits until the node is idle. Clients reach it with
# SLURM_CONF=DIR/slurm.conf. `stop` ends the three daemons it started (by the pids it kept) and removes DIR.
# Touches nothing outside DIR: no system munge key, no /etc/slurm, no systemd. Root only (slurmd runs jobs as their
# user). Exit codes: 0 done, 1 a daemon did not come up (its log printed), 2 usage, 77 Slurm or munge missing.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR [PROLOG]" >&2
  exit 2
}
(($# >= 2)) || usage
action="$1" dir="$2" prolog="${3:-}"
sbin=/usr/sbin

stop() {
  local name pid
  for name in slurmd slurmctld munged; do
    [[ -f "$dir/$name.pid" ]] || continue
    pid="$(cat "$dir/$name.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts "$@" in the background with its output in DIR/NAME.log and its pid in DIR/NAME.pid.
daemon() {
  local name="$1"
  shift
  setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo "$!" >"$dir/$name.pid"
}

start() {
  for tool in munged slurmctld slurmd; do
    [[ -x "$sbin/$tool" ]] || {
      echo "SKIPPED: no $sbin/$tool (Debian/Ubuntu: apt-get install slurm-wlm munge; CI installs them)"
      exit 77
    }
  done
  ((EUID == 0)) || {
    echo "SKIPPED: not root: slurmd must run as root to start jobs as their user"
    exit 77
  }
  stop # a cluster left by a run that was killed
  mkdir -p "$dir"/{munge,state,spool,dev}
  chmod 700 "$dir" "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  daemon munged "$sbin/munged" --foreground --force --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  for _ in $(seq 100); do
    [[ -S "$dir/munge/munge.socket" ]] && break
    sleep 0.05
  done

  local host mpi node ctld_port slurmd_port
  host="$(hostname -s)"
  node="$("$sbin/slurmd" -C | head -n 1 | sed 's/ UpTime=.*//')" # NodeName=HOST CPUs=... RealMemory=...
  mpi=pmi2
  if compgen -G "/usr/lib/*/slurm-wlm/mpi_pmix.so" >/dev/null || compgen -G "/usr/lib*/slurm/mpi_pmix.so" >/dev/null; then
    mpi=pmix
  fi
  # Two GPUs as Slurm's gres/gpu sees them: device files (of /dev/null's numbers) it binds and hands out by index.
  for i in 0 1; do
    mknod "$dir/dev/nvidia$i" c 1 3
    echo "NodeName=$host Name=gpu File=$dir/dev/nvidia$i" >>"$dir/gres.conf"
  done
  ctld_port="$(free_port)"
  slurmd_port="$(free_port)"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=memstress
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pidfile
SlurmdPidFile=$dir/slurmd.pidfile
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=$mpi
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
${prolog:+Prolog=$prolog}
$node Gres=gpu:2 NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  daemon slurmctld "$sbin/slurmctld" -D -i -f "$dir/slurm.conf"
  daemon slurmd "$sbin/slurmd" -D -N "$host" -f "$dir/slurm.conf"
  export SLURM_CONF="$dir/slurm.conf"
  for _ in $(seq 150); do
    if [[ "$(sinfo -h -N -n "$host" -o %T 2>/dev/null)" == idle ]]; then
      echo "Slurm $(sinfo --version | awk '{print $2}') on node $host (MpiDefault=$mpi), SLURM_CONF=$dir/slurm.conf"
      return 0
    fi
    sleep 0.2
  done
  echo "$0: the node did not become idle within 30 s: $(sinfo -h -N -o '%N %T %E' 2>&1 || true)" >&2
  tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log "$dir"/munged.log >&2 || true
  exit 1
}

case "$action" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
