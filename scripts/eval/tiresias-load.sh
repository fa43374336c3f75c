#!/usr/bin/env bash
# The Tiresias evaluation of docs/evaluation.md: data/traces/tiresias-60_job.csv (60 jobs of 1-8
# GPUs with model names) on 4 x 8 V100 (tests/sched/testdata/v100-4node.yaml) under every policy
# at 50/70/90% offered load, SEEDS seeds (--seeds: only `random` draws, so only it varies), with
# the ablations (--no-wait-or-spread, --no-contention) beside; then the tables (aggregate.py)
# and the paired ratios (paired.py).
# Usage: scripts/eval/tiresias-load.sh [SEEDS] [OUT]   (defaults 5, eval/tiresias)
set -euo pipefail
cd "$(dirname "$0")/../.."
SEEDS="${1:-5}"
OUT="${2:-eval/tiresias}"
BIN="${TOPOSCHED:-build/toposched}"
TRACE=data/traces/tiresias-60_job.csv
CLUSTER=tests/sched/testdata/v100-4node.yaml
mkdir -p "$OUT"
tables=()
for load in 0.5 0.7 0.9; do
  dirs=()
  for seed in $(seq 1 "$SEEDS"); do
    dir="$OUT/load$load-s$seed"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$TRACE" --trace-format tiresias --policy all \
      --load "$load" --seed "$seed" --out "$dir" >"$dir.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$TRACE" --trace-format tiresias \
      --policy toposched --no-wait-or-spread --load "$load" --seed "$seed" \
      --out "$dir-no-wait" >"$dir-no-wait.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$TRACE" --trace-format tiresias \
      --policy toposched --no-contention --load "$load" --seed "$seed" \
      --out "$dir-no-contention" >"$dir-no-contention.log"
    dirs+=("$dir")
  done
  tables+=("load $load=$(IFS=,; echo "${dirs[*]}")")
done
python3 scripts/eval/aggregate.py "${tables[@]}"
python3 scripts/eval/paired.py "${tables[@]}"
