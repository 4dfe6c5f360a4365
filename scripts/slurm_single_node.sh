#!/usr/bin/env bash
# A single-node Slurm cluster for tests and trials: Debian's slurm-wlm and munge, run as plain daemons (no
# systemd, no cgroups: proctrack/linuxproc, task/none), everything they write in one folder, a munge key of
# its own. Needs root.
#
#   scripts/slurm_single_node.sh start [DIR]   install slurm-wlm and munge if missing, start munged, slurmctld
#                                              and slurmd, wait until the node is idle; prints the PIDs and the
#                                              line that points Slurm's commands at this cluster:
#                                                export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm_single_node.sh stop [DIR]    cancel this cluster's jobs, then end the PIDs that `start` recorded
#                                              in DIR/pids (and nothing else)
#
# DIR defaults to $GRADER_SLURM_DIR, else /tmp/grader-slurm. Ports: $GRADER_SLURM_PORT (slurmctld, default 6817)
# and the next one (slurmd). $GRADER_SLURM_WAIT_S bounds the wait for the node (default 60 s). The node's GPUs are a
# generic resource (gres/gpu, so that `sbatch --gpus-per-task=1` gets one and Slurm sets CUDA_VISIBLE_DEVICES):
# $GRADER_SLURM_GPUS of them (default: as many as there are /dev/nvidiaN files), their device files
# $GRADER_SLURM_GPU_FILES (default: /dev/nvidia0 …).
set -euo pipefail

mode=${1:-}
dir=${2:-${GRADER_SLURM_DIR:-/tmp/grader-slurm}}
port=${GRADER_SLURM_PORT:-6817}
wait_s=${GRADER_SLURM_WAIT_S:-60}
gpus=${GRADER_SLURM_GPUS:-$(find /dev -maxdepth 1 -regex '/dev/nvidia[0-9]+' 2>/dev/null | wc -l)}

die() { echo "slurm_single_node: $*" >&2; exit 1; }
fail() { echo "slurm_single_node: $*" >&2; stop >&2 || true; exit 1; }  # start went wrong: end what it started

# The command a recorded PID must still be running, so that a PID reused by another process is never signalled.
alive_as() {  # PID NAME
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}

# slurmd 22.05 loads its cgroup plugin whatever the config says. On a host of cgroup v2 alone without systemd
# (a GPU machine's container) the v2 plugin cannot make its cgroup for the step daemons, and slurmd exits. There
# slurmd runs in a mount namespace of its own whose /sys/fs/cgroup is a tmpfs holding one named v1 hierarchy
# (`systemd`, no controllers): the v1 plugin needs only that with proctrack/linuxproc and task/none, and the host's
# cgroups are left as they are. Jobs inherit the view; CUDA does not read cgroups.
in_view() {  # DAEMON ARGS...
  if [ "$1" = slurmd ] && [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    unshare -m --propagation private sh -c 'mount -t tmpfs grader-slurm /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd \
      && mount -t cgroup -o none,name=systemd grader-slurm /sys/fs/cgroup/systemd && exec "$@"' sh "$@"
  else
    "$@"
  fi
}

stop() {
  [ -f "$dir/pids" ] || { echo "no $dir/pids: nothing of ours to stop"; return 0; }
  if [ -f "$dir/slurm.conf" ] && command -v scancel >/dev/null; then
    # Every job of this cluster (SLURM_CONF names it), whoever submitted it; their steps end with them.
    local jobs
    jobs=$(SLURM_CONF="$dir/slurm.conf" timeout 10 squeue -h -o %A 2>/dev/null || true)
    # shellcheck disable=SC2086  # one job id per word
    [ -z "$jobs" ] || SLURM_CONF="$dir/slurm.conf" timeout 10 scancel --full $jobs 2>/dev/null || true
  fi
  local name pid left
  # slurmd first, munged last: the Slurm daemons talk through munge while they shut down.
  for name in slurmd slurmctld munged; do
    pid=$(awk -v n="$name" '$1 == n {print $2}' "$dir/pids")
    [ -n "$pid" ] || continue
    if alive_as "$pid" "$name"; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do alive_as "$pid" "$name" || break; sleep 0.2; done
      if alive_as "$pid" "$name"; then kill -KILL "$pid" 2>/dev/null || true; fi
      echo "stopped $name (pid $pid)"
    else
      echo "$name (pid $pid) was no longer running"
    fi
  done
  left=$(awk '{print $2}' "$dir/pids" | while read -r p; do [ -d "/proc/$p" ] && echo "$p"; done || true)
  rm -f "$dir/pids"
  [ -z "$left" ] || die "still running after stop: $left"
  if [ -f "$dir/munge.path" ]; then
    case $(cat "$dir/munge.path") in /tmp/grader-munge.*) rm -rf "$(cat "$dir/munge.path")" ;; esac
    rm -f "$dir/munge.path"
  fi
}

install() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return 0
  echo "installing slurm-wlm and munge (about a minute)…"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  }
}

# Its PID file's content once the daemon has written it (they fork before writing).
pid_from() {  # FILE
  for _ in $(seq 100); do
    [ -s "$1" ] && { cat "$1"; return 0; }
    sleep 0.1
  done
  return 1
}

start() {
  [ "$(id -u)" = 0 ] || die "needs root (the daemons run as root and munge)"
  if [ -f "$dir/pids" ]; then
    die "$dir/pids exists: a cluster started from $dir may still run (stop it first: $0 stop $dir)"
  fi
  install
  id munge >/dev/null 2>&1 || die "no user 'munge' (the munge package creates it)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  rm -rf "$dir/ctld" "$dir/spool"
  mkdir -p "$dir/ctld" "$dir/spool"
  : > "$dir/pids"
  # munged runs as munge and refuses a key or socket folder others can write to, and DIR may sit below folders munge
  # cannot enter (pytest's): its own folder under /tmp, its own 1 KiB key; `stop` removes it.
  munge_dir=$(mktemp -d /tmp/grader-munge.XXXXXX)
  echo "$munge_dir" > "$dir/munge.path"
  head -c 1024 /dev/urandom > "$munge_dir/munge.key"
  chown -R munge:munge "$munge_dir"
  chmod 755 "$munge_dir"  # the socket lives here: others must reach it, none may write
  chmod 400 "$munge_dir/munge.key"

  local host cpus mem_mb
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
  local gres_types="" node_gres=""
  rm -f "$dir/gres.conf"
  if [ "$gpus" -gt 0 ]; then  # slurmd reads gres.conf from the folder of slurm.conf
    local files=${GRADER_SLURM_GPU_FILES:-}
    [ -n "$files" ] || files=$([ "$gpus" = 1 ] && echo /dev/nvidia0 || echo "/dev/nvidia[0-$((gpus - 1))]")
    echo "Name=gpu File=$files" > "$dir/gres.conf"
    gres_types="GresTypes=gpu" node_gres=" Gres=gpu:$gpus"
  fi
  cat > "$dir/slurm.conf" <<EOF
ClusterName=grader
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_dir/munge.socket.2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
$gres_types
AccountingStorageType=accounting_storage/none
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb$node_gres State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"
  rm -f "$dir/munged.pid" "$dir/slurmctld.pid" "$dir/slurmd.pid"

  local pid
  runuser -u munge -- munged --socket="$munge_dir/munge.socket.2" --key-file="$munge_dir/munge.key" \
    --pid-file="$munge_dir/munged.pid" --log-file="$munge_dir/munged.log" --seed-file="$munge_dir/munged.seed" \
    || fail "munged did not start: $(tail -3 "$munge_dir/munged.log" 2>/dev/null)"
  pid=$(pid_from "$munge_dir/munged.pid") || fail "munged wrote no pid file"
  echo "munged $pid" >> "$dir/pids"
  echo "started munged (pid $pid)"
  for daemon in slurmctld slurmd; do
    in_view "$daemon" -f "$SLURM_CONF" || fail "$daemon did not start: $(tail -5 "$dir/$daemon.log" 2>/dev/null)"
    pid=$(pid_from "$dir/$daemon.pid") || fail "$daemon wrote no pid file: $(tail -5 "$dir/$daemon.log" 2>/dev/null)"
    echo "$daemon $pid" >> "$dir/pids"
    echo "started $daemon (pid $pid)"
  done

  local state=""
  for _ in $(seq $((wait_s * 2))); do
    state=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -1 || true)
    [ "$state" = idle ] && break
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    fail "the node is '${state:-not answering}' after ${wait_s} s; slurmd's log ends: $(tail -5 "$dir/slurmd.log")"
  fi
  echo "node $host idle ($cpus CPUs, ${mem_mb} MB, $gpus GPU(s)); pids in $dir/pids"
  echo "export SLURM_CONF=$SLURM_CONF"
}

case "$mode" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop [DIR]" >&2; exit 2 ;;
esac
