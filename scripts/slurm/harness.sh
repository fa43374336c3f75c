#!/usr/bin/env bash
# A real Slurm cluster on loopback for tests: munged (own key), slurmctld and one slurmd per node
# of a toposched cluster file, each slurmd on its own port, with fake GPU character devices.
# gres.conf, topology.conf and the node lines come from `toposched export slurm`; this script
# writes slurm.conf around them. Everything lives in one directory; every daemon is stopped by
# the PID recorded at start (never by name).
#
#   harness.sh start CLUSTER.yaml DIR   start; DIR must not exist. Writes DIR/env (source it:
#                                       SLURM_CONF, PATH unchanged) and DIR/pids/*.pid
#   harness.sh stop DIR                 cancel all jobs, shut the daemons down, then TERM/KILL
#                                       every process started from DIR (recorded PIDs, processes
#                                       running in DIR, and their descendants: the job steps)
#   harness.sh leftovers DIR            print the PIDs still alive that belong to DIR (none: ok)
#
# Needs root (mknod, SlurmUser=root). TOPOSCHED: the binary (default build/toposched).
set -euo pipefail

die() { echo "slurm-harness: $*" >&2; exit 1; }

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TOPOSCHED="${TOPOSCHED:-$ROOT/build/toposched}"

# Free TCP ports on 127.0.0.1, picked by binding port 0 (n of them, distinct).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# Live processes (not zombies) that belong to DIR: the recorded daemon PIDs, processes whose
# working directory is inside DIR (every daemon runs in DIR/run; slurmstepd inherits slurmd's
# directory), and all their descendants (the jobs' processes under slurmstepd). The caller's own
# shells are never included. Optional second argument: a PID to leave out.
leftovers() {
  python3 - "$1" "${2:-}" <<'PY'
import os, sys
d = sys.argv[1]
skip = {int(x) for x in sys.argv[2:] if x.isdigit()}

def stat(p):
    fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])  # state, ppid

mine = set()
p = os.getpid()
while p > 1:
    mine.add(p)
    try:
        p = stat(p)[1]
    except (OSError, ValueError, IndexError):
        break
roots = set()
pid_dir = os.path.join(d, "pids")
if os.path.isdir(pid_dir):
    for f in os.listdir(pid_dir):
        try:
            roots.add(int(open(os.path.join(pid_dir, f)).read().strip()))
        except (OSError, ValueError):
            pass
parent, state = {}, {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        state[int(p)], parent[int(p)] = stat(p)
        cwd = os.readlink(f"/proc/{p}/cwd")
        if cwd == d or cwd.startswith(d + "/"):
            roots.add(int(p))
    except (OSError, ValueError, IndexError):
        pass
ours = set()
for p in parent:
    q, chain = p, []
    while q > 1 and q not in ours and q not in roots:
        chain.append(q)
        q = parent.get(q, 0)
    if q in ours or q in roots:
        ours.update(chain)
        ours.add(q)
verbose = os.environ.get("TS_HARNESS_VERBOSE")
for p in sorted(ours - mine - skip):
    if state.get(p, "Z") == "Z" or p not in parent:
        continue
    print(p)
    if verbose:
        cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        print(f"  {p}: {cmd}", file=sys.stderr)
PY
}

alive() { kill -0 "$1" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]; }

start() {
  local cluster="$1" dir="$2"
  [ "$(id -u)" -eq 0 ] || die "needs root (mknod, SlurmUser=root)"
  command -v slurmctld >/dev/null || die "slurmctld is not installed"
  [ -x "$TOPOSCHED" ] || die "no toposched binary at $TOPOSCHED (set TOPOSCHED)"
  [ -e "$dir" ] && die "$dir exists"
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  chmod 755 "$dir"
  mkdir -p "$dir"/{etc,dev,munge,state,spool,log,pids,run}
  chmod 755 "$dir/munge"

  "$TOPOSCHED" export slurm "$cluster" --dir "$dir/etc" >/dev/null
  # The exported gres.conf names /dev/nvidia<N>; the fake devices live in DIR/dev.
  sed -i "s#File=/dev/nvidia#File=$dir/dev/nvidia#" "$dir/etc/gres.conf"
  local gpus
  gpus=$(grep -o "File=$dir/dev/nvidia[0-9]*" "$dir/etc/gres.conf" | sed 's#.*nvidia##' | sort -un)
  for g in $gpus; do mknod "$dir/dev/nvidia$g" c 195 "$g"; done

  mapfile -t nodes < <(sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$dir/etc/nodes.conf")
  [ "${#nodes[@]}" -gt 0 ] || die "no nodes in the exported nodes.conf"
  read -r -a ports <<<"$(free_ports $((${#nodes[@]} + 1)))"

  mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
  chmod 600 "$dir/munge/munge.key"

  local host
  host="$(hostname -s)"
  {
    echo "# Written by scripts/slurm/harness.sh for a loopback test cluster."
    echo "ClusterName=toposched"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=${ports[0]}"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$dir/munge/munged.sock"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
    echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "MpiDefault=none"
    echo "SchedulerType=sched/backfill"
    echo "SchedulerParameters=sched_interval=1"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=gpu"
    if grep -q "^BlockName=" "$dir/etc/topology.conf"; then
      echo "TopologyPlugin=topology/block"
    else
      echo "TopologyPlugin=topology/tree"
    fi
    echo "SlurmdParameters=config_overrides"
    echo "ReturnToService=2"
    echo "MailProg=/bin/true"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "InactiveLimit=0"
    echo "KillWait=2"
    echo "MinJobAge=300"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    local i=1
    while IFS= read -r line; do
      case "$line" in
        NodeName=*)
          echo "$line NodeHostname=localhost NodeAddr=127.0.0.1 Port=${ports[$i]} State=UNKNOWN"
          i=$((i + 1))
          ;;
        *) echo "$line" ;;
      esac
    done <"$dir/etc/nodes.conf"
    echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    echo "PartitionName=toposched Nodes=ALL MaxTime=INFINITE State=UP"
  } >"$dir/etc/slurm.conf"

  cat >"$dir/env" <<EOF
export SLURM_CONF=$dir/etc/slurm.conf
EOF
  export SLURM_CONF="$dir/etc/slurm.conf"

  cd "$dir/run"
  munged -F --socket="$dir/munge/munged.sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --seed-file="$dir/munge/seed" \
    --log-file="$dir/log/munged.log" --num-threads=2 </dev/null >"$dir/log/munged.out" 2>&1 &
  echo $! >"$dir/pids/munged.pid"
  for _ in $(seq 100); do [ -S "$dir/munge/munged.sock" ] && break; sleep 0.05; done
  [ -S "$dir/munge/munged.sock" ] || die "munged did not start (see $dir/log/munged.log)"

  slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/pids/slurmctld.pid"
  for n in "${nodes[@]}"; do
    mkdir -p "$dir/spool/$n"
    slurmd -D -N "$n" -f "$SLURM_CONF" </dev/null >"$dir/log/slurmd-$n.out" 2>&1 &
    echo $! >"$dir/pids/slurmd-$n.pid"
  done

  # Up when every node is idle.
  local idle=0
  for _ in $(seq 300); do
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l) || idle=0
    [ "$idle" -eq "${#nodes[@]}" ] && break
    for f in "$dir"/pids/*.pid; do
      alive "$(cat "$f")" || die "$(basename "$f" .pid) exited (see $dir/log)"
    done
    sleep 0.1
  done
  [ "$idle" -eq "${#nodes[@]}" ] || die "only $idle of ${#nodes[@]} nodes idle (see $dir/log)"
  echo "slurm-harness: ${#nodes[@]} nodes idle; source $dir/env"
}

stop() {
  local dir="$1"
  [ -d "$dir" ] || die "$dir: no such directory"
  dir="$(cd "$dir" && pwd)"
  if [ -f "$dir/env" ]; then
    # shellcheck disable=SC1091
    . "$dir/env"
    if [ -f "$dir/pids/slurmctld.pid" ] && alive "$(cat "$dir/pids/slurmctld.pid")"; then
      timeout 5 scancel --quiet --user=root 2>/dev/null || true
      # Let the job steps report their end before the daemons go, or slurmstepd waits on them.
      for _ in $(seq 50); do
        [ -z "$(timeout 5 squeue -h -t all -o %i 2>/dev/null | head -1)" ] && break
        [ -z "$(timeout 5 squeue -h -t running,completing,configuring -o %i 2>/dev/null)" ] && break
        sleep 0.1
      done
      timeout 5 scontrol shutdown 2>/dev/null || true
    fi
  fi
  # Wait for the recorded daemons (and the job steps they started) to exit, then TERM, KILL.
  local left munged_pid
  munged_pid=$(cat "$dir/pids/munged.pid" 2>/dev/null || echo none)
  for _ in $(seq 50); do
    left=$(leftovers "$dir" "$munged_pid")
    [ -z "$left" ] && break
    sleep 0.1
  done
  for sig in TERM KILL; do
    left=$(leftovers "$dir")
    [ -z "$left" ] && break
    # shellcheck disable=SC2086
    kill -s "$sig" $left 2>/dev/null || true
    for _ in $(seq 30); do
      [ -z "$(leftovers "$dir")" ] && break
      sleep 0.1
    done
  done
  wait 2>/dev/null || true
  left=$(leftovers "$dir")
  [ -z "$left" ] || die "processes left behind: $left"
}

case "${1:-}" in
  start) [ $# -eq 3 ] || die "usage: $0 start CLUSTER.yaml DIR"; start "$2" "$3" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  leftovers) [ $# -eq 2 ] || die "usage: $0 leftovers DIR"; leftovers "$2" ;;
  *) die "usage: $0 start CLUSTER.yaml DIR | stop DIR | leftovers DIR" ;;
esac
