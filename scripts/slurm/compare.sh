#!/usr/bin/env bash
# The same queue on the same partly occupied loopback Slurm (data/clusters/slurm-8node.yaml),
# placed once by Slurm alone (topology/tree, its own GPU choice, ranks in index order) and once
# by toposched (`toposched slurm place` chooses the nodes, `toposched exec` puts the ranks in
# ring order). Prints one markdown table row per job with both placements and the predicted
# communication time of each, from `toposched slurm cost` on the GPUs Slurm actually gave.
# Needs root and Slurm (scripts/install-deps.sh). Usage: compare.sh [path/to/toposched]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TS="$(realpath "${1:-$ROOT/build/toposched}")"
HARNESS="$ROOT/scripts/slurm/harness.sh"
CLUSTER="$ROOT/data/clusters/slurm-8node.yaml"
WORK="$(mktemp -d /tmp/toposched-compare-XXXXXX)"
chmod 755 "$WORK"
cd "$WORK"
trap 'cd /; [ -d "$WORK/slurm" ] && bash "$HARNESS" stop "$WORK/slurm"; rm -rf "$WORK"' EXIT

# The queue: name layout nodes gpus_per_node (submitted in this order).
QUEUE=("A tp=8,pp=2 2 8" "B tp=4 2 4" "C tp=2,pp=2 2 2" "D tp=4 1 4")

busy() {  # busy NODE GPUS → job id of an unmarked job pinned there, once it runs
  local id
  id=$(sbatch --parsable -J "busy-$1" -N1 -w "$1" --gpus-per-node="$2" -o /dev/null \
    --wrap 'sleep 600')
  for _ in $(seq 100); do
    [ "$(squeue -h -j "$id" -o %T)" = RUNNING ] && break
    sleep 0.1
  done
  echo "$id"
}

# The occupancy, left by earlier jobs: gpu03 and gpu07 full; on gpu01 and gpu05 three 2-GPU
# jobs took 0,3 then 1,2 then 4,7 and the first ended, leaving GPUs 0,3,5,6 free: four GPUs,
# but two NVLink pairs that reach each other only through the CPUs.
occupy() {
  busy gpu03 8 >/dev/null
  busy gpu07 8 >/dev/null
  local first
  for node in gpu01 gpu05; do
    first=$(busy "$node" 2)
    busy "$node" 2 >/dev/null
    busy "$node" 2 >/dev/null
    scancel "$first"
  done
  for _ in $(seq 100); do
    [ "$(squeue -h -t running | wc -l)" -eq 6 ] && break
    sleep 0.1
  done
  scontrol -d -o show node | grep -o 'NodeName=[^ ]*\|GresUsed=[^ ]*' | paste -d' ' - - \
    >"$WORK/occupancy.txt"
}

run() {  # run MODE → writes $WORK/MODE.cost (toposched slurm cost output)
  local mode="$1" d="$WORK/slurm"
  TOPOSCHED="$TS" bash "$HARNESS" start "$CLUSTER" "$d" >/dev/null
  # shellcheck disable=SC1091
  . "$d/env"
  occupy
  local ids=()
  for q in "${QUEUE[@]}"; do
    read -r name layout nodes gpus <<<"$q"
    printf '#!/bin/bash\n#TOPOSCHED %s\nsleep 600\n' "$layout" >"$WORK/$name.sh"
    local hold=()
    [ "$mode" = toposched ] && hold=(-H)
    ids+=("$(sbatch --parsable "${hold[@]}" -J "$name" -N "$nodes" --gpus-per-node="$gpus" \
      -o /dev/null "$WORK/$name.sh")")
  done
  local ring=()
  if [ "$mode" = toposched ]; then
    "$TS" slurm place --cluster "$CLUSTER" >"$WORK/place.txt"
    ring=(--ring)
  fi
  for _ in $(seq 100); do
    [ "$(squeue -h -t running | wc -l)" -eq $((6 + ${#QUEUE[@]})) ] && break
    sleep 0.1
  done
  "$TS" slurm cost --cluster "$CLUSTER" "${ring[@]}" "${ids[@]}" >"$WORK/$mode.cost"
  bash "$HARNESS" stop "$d"
  rm -rf "$d"
}

run slurm
run toposched
echo "occupancy before the queue:"
cat "$WORK/occupancy.txt"
echo
python3 - "$WORK/slurm.cost" "$WORK/toposched.cost" <<'PY'
import sys
def rows(path):
    out = {}
    for line in open(path).read().splitlines()[1:]:
        f = line.split("\t")
        out[f[1]] = f
    return out
s, t = rows(sys.argv[1]), rows(sys.argv[2])
print("| job | layout | Slurm alone: GPUs (node:indices) | predicted ms | toposched: GPUs | predicted ms |")
print("| --- | --- | --- | ---: | --- | ---: |")
tot_s = tot_t = 0.0
for name in sorted(s):
    a, b = s[name], t.get(name)
    if b is None:
        print(f"| {name} | {a[3]} | {a[5]} | {a[6]} | (not running) | |")
        continue
    tot_s += float(a[6]); tot_t += float(b[6])
    print(f"| {name} | {a[3]} | {a[5]} | {a[6]} | {b[5]} | {b[6]} |")
print(f"| all | | | {tot_s:.3f} | | {tot_t:.3f} |")
PY
