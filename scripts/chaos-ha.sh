#!/usr/bin/env bash
# Chaos rounds of the replicated daemon (docs/ha.md, "Chaos rounds"): a real three-member etcd on
# loopback ports in a temporary directory, three real `toposched serve --store etcd://` daemons on
# it, 8 clients submitting with idempotency keys, and rounds of kill -9 of the leader and SIGSTOP
# of the leader past its lease (scripts/chaos_ha.py). Prints one line per fact (`fact: value`);
# exit 1 when a fact is violated.
#
#   scripts/chaos-ha.sh                      short form (CI): 3 kill -9 rounds, 1 SIGSTOP round
#   scripts/chaos-ha.sh --rounds 20          long form: 20 kill -9 rounds, 4 SIGSTOP rounds
#   scripts/chaos-ha.sh --binary build-san/toposched --stop-rounds 2 --lease-ttl-s 3 --seed 7
#
# Every process it starts is listed in the work directory's `pids`; the trap below kills them
# (SIGCONT first, for a paused one) and removes the directory on every exit: success, failure,
# Ctrl-C, SIGTERM. A failed run keeps its directory (etcd's and the daemons' logs) and names it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v etcd >/dev/null || {
  echo "chaos-ha: etcd is not installed (Debian's etcd-server: scripts/install-deps.sh)" >&2
  exit 1
}
work=$(mktemp -d /tmp/toposched-chaos-ha-XXXXXX)
rc=1
cleanup() {
  if [ -f "$work/pids" ]; then
    while read -r pid; do
      kill -CONT "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    done <"$work/pids"
    # The children were the Python program's: wait until each is gone (bounded).
    for _ in $(seq 1 100); do
      alive=0
      while read -r pid; do
        if kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ]; then
          alive=1
        fi
      done <"$work/pids"
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
  fi
  if [ "$rc" = 0 ]; then
    rm -rf "$work"
  else
    echo "chaos-ha: logs kept in $work" >&2
  fi
}
py=
stop() {
  [ -n "$py" ] && kill -TERM "$py" 2>/dev/null
  wait "$py" 2>/dev/null
  exit "$1"
}
trap cleanup EXIT
trap 'stop 130' INT
trap 'stop 143' TERM
# In the background and waited for: a signal to this script is handled at once, not after it.
python3 scripts/chaos_ha.py --dir "$work" "$@" &
py=$!
set +e
wait "$py"
rc=$?
set -e
py=
exit "$rc"
