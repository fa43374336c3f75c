#!/usr/bin/env bash
# Soak test of the daemon (scripts/soak.py): concurrent REST and extender clients, kill -9 and
# restart cycles, every invariant checked after each restart. Bounded: 45 s of load and at least
# 10 cycles by default (CI); --long: 600 s and at least 100 cycles. Other flags go to soak.py.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--seconds 45 --cycles 10)
if [ "${1:-}" = "--long" ]; then
  shift
  args=(--seconds 600 --cycles 100)
fi
exec python3 scripts/soak.py "${args[@]}" "$@"
