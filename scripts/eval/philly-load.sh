#!/usr/bin/env bash
# The Philly evaluation of docs/evaluation.md: WINDOWS windows of JOBS consecutive jobs of the
# Pollux-derived Philly trace (../shared/traces/philly-pollux-derived/philly.csv, or PHILLY=FILE),
# taken at 1/(WINDOWS+1), 2/(WINDOWS+1), ... of the trace (after sorting by submission), stand in
# for seeds; each is simulated under every policy at 50/70/90% offered load on the 2:1 tapered
# 3-tier fabric of 512 GPUs (data/clusters/eval-h100-3tier-2to1-512.yaml), with the ablations
# (--no-wait-or-spread, --no-contention) beside; then the tables (aggregate.py) and the paired
# ratios (paired.py).
# Usage: scripts/eval/philly-load.sh [JOBS] [WINDOWS] [OUT]   (defaults 8000, 5, eval/philly)
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS="${1:-8000}"
WINDOWS="${2:-5}"
OUT="${3:-eval/philly}"
BIN="${TOPOSCHED:-build/toposched}"
PHILLY="${PHILLY:-../shared/traces/philly-pollux-derived/philly.csv}"
CLUSTER=data/clusters/eval-h100-3tier-2to1-512.yaml
mkdir -p "$OUT"
sorted="$OUT/philly-sorted.csv"
[ -f "$sorted" ] || { sed -n 1p "$PHILLY"; sed 1d "$PHILLY" | sort -t, -k1,1; } >"$sorted"
rows=$(($(wc -l <"$sorted") - 1))
tables=()
paired=()
for load in 0.5 0.7 0.9; do
  dirs=()
  for w in $(seq 1 "$WINDOWS"); do
    trace="$OUT/philly-$JOBS-w$w.csv"
    start=$((rows * w / (WINDOWS + 1)))
    [ -f "$trace" ] || sed -n "1p;$((start + 2)),$((start + JOBS + 1))p" "$sorted" >"$trace"
    dir="$OUT/load$load-w$w"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format philly --policy all \
      --load "$load" --out "$dir" >"$dir.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format philly \
      --policy toposched --no-wait-or-spread --load "$load" --out "$dir-no-wait" >"$dir-no-wait.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format philly \
      --policy toposched --no-contention --load "$load" --out "$dir-no-contention" \
      >"$dir-no-contention.log"
    dirs+=("$dir")
  done
  tables+=("load $load=$(IFS=,; echo "${dirs[*]}")")
done
python3 scripts/eval/aggregate.py "${tables[@]}"
python3 scripts/eval/paired.py "${tables[@]}"
