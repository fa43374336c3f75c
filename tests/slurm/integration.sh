#!/usr/bin/env bash
# The Slurm integration suite, against a real Slurm 22.05 (munged + slurmctld + 8 slurmd on
# loopback, started by scripts/slurm/harness.sh from `toposched export slurm` of
# data/clusters/slurm-8node.yaml: 8 nodes under 2 leaf switches).
#   1. the exported configuration loads: `scontrol show topology` is the cluster's tree, and
#      `toposched slurm import` reads the same tree back; `slurmd -G` shows per-GPU Links= equal
#      to the sample's NVLink counts and Cores= from its CPU affinity, and slurmd logs no GRES error;
#   2. on a partly occupied cluster, held multi-node jobs marked by a #TOPOSCHED directive and by
#      a comment are placed by `toposched slurm place` and run exactly on the chosen nodes (their
#      output lists hosts and CUDA_VISIBLE_DEVICES); an unmarked held job is left alone;
#   3. `toposched exec` inside the job prints what it set and the command sees it;
#   4. `toposched slurm watch` places a job submitted later and stops on SIGTERM;
#   5. `toposched slurm cost` prices the running jobs;
#   6. everything stops and no process is left behind (checked by PID), in under 2 minutes.
# Usage: integration.sh /path/to/toposched. Exit 77 (skip) when Slurm is not installed.
set -euo pipefail

TS="$(realpath "${1:?usage: integration.sh /path/to/toposched}")"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HARNESS="$ROOT/scripts/slurm/harness.sh"
CLUSTER="$ROOT/data/clusters/slurm-8node.yaml"
SAMPLE="$ROOT/data/samples/nvidia-smi/02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
  ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  echo "SKIP: Slurm is not installed (apt-get install slurmctld slurmd slurm-client munge)"
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the loopback Slurm needs root (mknod, SlurmUser=root)"
  exit 77
fi

START=$SECONDS
WORK="$(mktemp -d /tmp/toposched-slurm-XXXXXX)"
chmod 755 "$WORK"
D="$WORK/slurm"
OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"
WATCH_PID=""

step() { echo "== $* ($((SECONDS - START)) s)"; }
fail() {
  echo "FAIL: $*" >&2
  for f in "$D"/log/slurmctld.log "$OUT"/*; do
    [ -f "$f" ] && { echo "--- $f (tail)" >&2; tail -20 "$f" >&2; }
  done
  exit 1
}

cleanup() {
  local rc=$?
  trap - EXIT
  cd /
  if [ -n "$WATCH_PID" ] && kill -0 "$WATCH_PID" 2>/dev/null; then
    kill -TERM "$WATCH_PID" 2>/dev/null || true
    wait "$WATCH_PID" 2>/dev/null || true
  fi
  if [ -d "$D" ]; then
    bash "$HARNESS" stop "$D" || rc=1
    left="$(bash "$HARNESS" leftovers "$D")"
    if [ -n "$left" ]; then
      echo "FAIL: processes left behind: $left" >&2
      rc=1
    fi
  fi
  rm -rf "$WORK"
  if [ $rc -eq 0 ]; then
    echo "PASS: Slurm suite in $((SECONDS - START)) s, no process left behind"
  fi
  exit $rc
}
trap cleanup EXIT

job_field() {  # job_field ID KEY → value of KEY= in `scontrol -o show job ID`
  scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
wait_state() {  # wait_state ID STATE TIMEOUT_S
  local i
  for i in $(seq $(($3 * 10))); do
    [ "$(job_field "$1" JobState)" = "$2" ] && return 0
    sleep 0.1
  done
  fail "job $1 is $(job_field "$1" JobState) ($(job_field "$1" Reason)), not $2 after $3 s"
}

step "start Slurm from the exported configuration"
TOPOSCHED="$TS" bash "$HARNESS" start "$CLUSTER" "$D"
# shellcheck disable=SC1091
. "$D/env"

step "scontrol show topology is the cluster's tree"
got="$(scontrol show topology | sed 's/ Level=[0-9]*//; s/ LinkSpeed=[0-9]*//')"
want="SwitchName=leaf0 Nodes=gpu[01-04]
SwitchName=leaf1 Nodes=gpu[05-08]
SwitchName=spine0 Nodes=gpu[01-08] Switches=leaf[0-1]"
[ "$got" = "$want" ] || fail "scontrol show topology:
$got
expected:
$want"
"$TS" slurm import --topo "$SAMPLE" --gpu-model V100-SXM2-16GB --name slurm-8node \
  --out "$OUT/imported.json" 2>/dev/null
"$TS" cluster check --json "$CLUSTER" >"$OUT/original.json"
python3 - "$OUT/original.json" "$OUT/imported.json" <<'PY' || fail "imported tree differs"
import json, sys
def tree(path):
    c = json.load(open(path))
    nodes = [n["name"] for n in c["nodes"]]
    doms = c["domains"]
    out = set()
    for d in doms:
        parent = doms[d["parent"]]["name"] if d.get("parent", -1) >= 0 else None
        out.add((d["name"], parent, tuple(sorted(nodes[i] for i in d.get("nodes", [])))))
    gpus = sorted((n["name"], len(c["profiles"][n["profile"]]["topology"]["gpus"])) for n in c["nodes"])
    return out, gpus
a, b = tree(sys.argv[1]), tree(sys.argv[2])
if a != b:
    print("original:", a, "\nimported:", b, file=sys.stderr)
    sys.exit(1)
PY

step "slurmd -G: Links= = NVLink counts, Cores= from the NUMA affinity"
slurmd -G -N gpu01 -f "$SLURM_CONF" >"$OUT/slurmd-G.txt" 2>&1 || fail "slurmd -G failed"
python3 - "$SAMPLE" "$OUT/slurmd-G.txt" <<'PY' || fail "slurmd -G does not show the exported GRES"
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if re.match(r"GPU\d", l)]
n = len(rows)
links = []
for i, r in enumerate(rows):
    links.append(",".join("-1" if j == i else (r[1 + j][2:] if r[1 + j].startswith("NV") else "0")
                          for j in range(n)))
# CPU affinity "0-11,24-35" on a 2x12-core, 2-thread machine (48 CPUs): logical cores 0-11.
cores = ["0-11" if r[-1].startswith("0-") else "12-23" for r in rows]
got = {}
for l in open(sys.argv[2]):
    m = re.search(r"Index=(\d+) .*Cores=(\S+) .*Links=(\S+)", l)
    if m:
        got[int(m.group(1))] = (m.group(2), m.group(3))
want = {i: (cores[i], links[i]) for i in range(n)}
if got != want:
    print("got ", got, "\nwant", want, file=sys.stderr)
    sys.exit(1)
PY
if grep -q "Invalid GRES" "$D"/log/slurmd-*.log; then fail "slurmd rejected gres.conf"; fi
[ "$(sinfo -h -n gpu01 -o %G)" = "gpu:v100:8(S:0-1)" ] || fail "GPU socket affinity lost: $(sinfo -h -n gpu01 -o %G)"

step "partly occupy the cluster (unmarked jobs, placed by Slurm)"
f1=$(sbatch --parsable -N1 -w gpu01 --gpus-per-node=8 -o /dev/null --wrap 'sleep 300')
f2=$(sbatch --parsable -N1 -w gpu05 --gpus-per-node=4 -o /dev/null --wrap 'sleep 300')
wait_state "$f1" RUNNING 10
wait_state "$f2" RUNNING 10

step "held jobs: directive tp=8,pp=2 (2x8 GPUs), comment tp=4 (2x4 GPUs), one unmarked"
cat >"$OUT/train.sh" <<EOF
#!/bin/bash
#TOPOSCHED tp=8,pp=2
srun "$TS" exec --print --topo "$SAMPLE" -- \\
  bash -c 'echo "host=\$SLURMD_NODENAME rank=\$SLURM_PROCID CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES NCCL_IB_HCA=\$NCCL_IB_HCA"'
EOF
cat >"$OUT/small.sh" <<EOF
#!/bin/bash
srun "$TS" exec --print --topo "$SAMPLE" -- \\
  bash -c 'echo "host=\$SLURMD_NODENAME rank=\$SLURM_PROCID CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES JOB_GPUS=\$SLURM_JOB_GPUS"'
EOF
j1=$(sbatch --parsable -H -J train -N2 --ntasks-per-node=8 --gpus-per-node=8 -o "$OUT/train.out" "$OUT/train.sh")
j2=$(sbatch --parsable -H -J small -N2 --ntasks-per-node=4 --gpus-per-node=4 \
  --comment "toposched tp=4" -o "$OUT/small.out" "$OUT/small.sh")
j3=$(sbatch --parsable -H -J other -N1 --gpus-per-node=8 -o /dev/null --wrap 'sleep 1')

step "toposched slurm place"
"$TS" slurm place --cluster "$CLUSTER" | tee "$OUT/place.txt"
placed_nodes() {  # placed_nodes ID → "gpu02 gpu03"
  sed -n "s/^job $1 ([^)]*): placed on \([^ ]*\) .*/\1/p" "$OUT/place.txt" | tr ',' ' '
}
n1="$(placed_nodes "$j1")"
n2="$(placed_nodes "$j2")"
[ "$(echo "$n1" | wc -w)" -eq 2 ] || fail "job $j1 not placed on 2 nodes: '$n1'"
[ "$(echo "$n2" | wc -w)" -eq 2 ] || fail "job $j2 not placed on 2 nodes: '$n2'"
leaf() { case "$1" in gpu0[1-4]) echo leaf0 ;; *) echo leaf1 ;; esac; }
for n in $n1; do
  [ "$n" != gpu01 ] || fail "job $j1 placed on the full node gpu01"
  [ "$(leaf "$n")" = "$(leaf "${n1%% *}")" ] || fail "job $j1 spans leaves: $n1"
done
for n in $n2; do [ "$(leaf "$n")" = "$(leaf "${n2%% *}")" ] || fail "job $j2 spans leaves: $n2"; done
grep -q "1 held job(s) not marked for toposched" "$OUT/place.txt" || fail "unmarked job not reported"

step "the placed jobs run exactly there; the unmarked one stays held"
wait_state "$j1" COMPLETED 30
wait_state "$j2" COMPLETED 30
[ "$(job_field "$j3" Reason)" = "JobHeldUser" ] || fail "unmarked job $j3 was touched: $(job_field "$j3" Reason)"
check_hosts() {  # check_hosts OUTFILE "nodes" RANKS
  local hosts
  hosts="$(sed -n 's/^host=\([^ ]*\) .*/\1/p' "$1" | sort -u | paste -sd' ')"
  [ "$hosts" = "$(echo "$2" | tr ' ' '\n' | sort | paste -sd' ')" ] ||
    fail "$1: ran on '$hosts', placed on '$2'"
  [ "$(grep -c '^host=' "$1")" -eq "$3" ] || fail "$1: expected $3 ranks"
  [ "$(grep -c '^toposched exec: rank ' "$1")" -eq "$3" ] || fail "$1: exec printed no plan"
}
check_hosts "$OUT/train.out" "$n1" 16
check_hosts "$OUT/small.out" "$n2" 8
# Slurm gave job 2 four GPUs on each chosen node. Which four is Slurm's choice (toposched's
# SlurmGpuPick approximates it; Slurm also weighs the socket of the job's CPUs): printed, not
# asserted.
python3 - "$OUT/place.txt" "$OUT/small.out" "$j2" <<'PY' || fail "job $j2 did not get 4 GPUs per chosen node"
import re, sys
want = {}
for line in open(sys.argv[1]):
    m = re.match(r"job %s \(.*\): placed on \S+ GPUs (.*?), tp=" % sys.argv[3], line)
    if m:
        for part in m.group(1).split():
            node, idx = part.split(":")
            ids = []
            for r in idx.split(","):
                a, _, b = r.partition("-")
                ids += range(int(a), int(b or a) + 1)
            want[node] = ids
got = {}
for line in open(sys.argv[2]):
    m = re.match(r"host=(\S+) .* JOB_GPUS=(\S+)$", line)
    if m:
        got[m.group(1)] = sorted(int(x) for x in m.group(2).split(","))
print("GPUs predicted", want, "given by Slurm", got)
if not want or sorted(got) != sorted(want) or any(len(v) != 4 for v in got.values()):
    sys.exit(1)
PY
# The command saw exactly what exec set: the ring order of the node's GPUs and the nearest NIC.
ring="$(sed -n 's/^toposched exec: rank 0 .*, ring \([0-9,]*\),.*/\1/p' "$OUT/train.out")"
[ -n "$ring" ] || fail "no ring in the exec plan"
[ "$ring" != "0,1,2,3,4,5,6,7" ] || fail "exec kept index order on the cube-mesh"
grep -q "^host=[^ ]* rank=0 CUDA_VISIBLE_DEVICES=$ring NCCL_IB_HCA==mlx5_0$" "$OUT/train.out" ||
  fail "rank 0 did not see CUDA_VISIBLE_DEVICES=$ring and NCCL_IB_HCA==mlx5_0"
grep -q "^toposched exec: rank 0 .*CPUs 0-11,24-35" "$OUT/train.out" || fail "rank 0 not on NUMA 0's CPUs"

step "toposched slurm cost prices the running jobs"
"$TS" slurm cost --cluster "$CLUSTER" "$f1" "$f2" | tee "$OUT/cost.txt"
[ "$(grep -cE "^($f1|$f2)	" "$OUT/cost.txt")" -eq 2 ] || fail "slurm cost missed a running job"

step "toposched slurm watch places a job submitted later and stops on SIGTERM"
"$TS" slurm watch --cluster "$CLUSTER" --interval 0.2 >"$OUT/watch.txt" 2>&1 &
WATCH_PID=$!
j4=$(sbatch --parsable -H -J late -N1 --gpus-per-node=2 --comment toposched -o /dev/null --wrap 'true')
wait_state "$j4" COMPLETED 20
kill -TERM "$WATCH_PID"
wait "$WATCH_PID" || fail "watch exited with $?"
WATCH_PID=""
grep -q "^job $j4 (late): placed on " "$OUT/watch.txt" || fail "watch did not place job $j4"
grep -q "stopped after" "$OUT/watch.txt" || fail "watch did not stop cleanly"

[ $((SECONDS - START)) -lt 120 ] || fail "suite took $((SECONDS - START)) s (limit 120)"
step "stop"
