#!/usr/bin/env bash
# The LLM-era evaluation of docs/evaluation.md: `trace generate --mix llm` with seeds 1..SEEDS,
# each simulated under every policy at 50/70/90% offered load on the 2:1 tapered 3-tier H100
# fabric (data/clusters/eval-h100-3tier-2to1.yaml), then one table per load with the mean and
# 95% half-width over the seeds (scripts/eval/aggregate.py), the ablations: toposched with
# --no-wait-or-spread, with --no-contention and with --no-rail-alignment, one more table each per
# load, and the paired ratios (scripts/eval/paired.py).
# Usage: scripts/eval/llm-load.sh [JOBS] [SEEDS] [OUT]   (defaults 2000, 5, eval/llm)
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS="${1:-2000}"
SEEDS="${2:-5}"
OUT="${3:-eval/llm}"
BIN="${TOPOSCHED:-build/toposched}"
CLUSTER=data/clusters/eval-h100-3tier-2to1.yaml
mkdir -p "$OUT"
args=()
ablation=()
for load in 0.5 0.7 0.9; do
  dirs=()
  nowait=()
  nocont=()
  norails=()
  for seed in $(seq 1 "$SEEDS"); do
    trace="$OUT/llm-$JOBS-s$seed.csv"
    [ -f "$trace" ] || "$BIN" trace generate --mix llm --jobs "$JOBS" --seed "$seed" --out "$trace" >/dev/null
    dir="$OUT/load$load-s$seed"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy all \
      --load "$load" --seed "$seed" --out "$dir" > "$dir.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy toposched \
      --no-wait-or-spread --load "$load" --seed "$seed" --out "$dir-no-wait" > "$dir-no-wait.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy toposched \
      --no-contention --load "$load" --seed "$seed" --out "$dir-no-contention" \
      > "$dir-no-contention.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy toposched \
      --no-rail-alignment --load "$load" --seed "$seed" --out "$dir-no-rails" \
      > "$dir-no-rails.log"
    dirs+=("$dir")
    nowait+=("$dir-no-wait")
    nocont+=("$dir-no-contention")
    norails+=("$dir-no-rails")
  done
  args+=("load $load=$(IFS=,; echo "${dirs[*]}")")
  ablation+=("load $load, toposched --no-wait-or-spread=$(IFS=,; echo "${nowait[*]}")")
  ablation+=("load $load, toposched --no-contention=$(IFS=,; echo "${nocont[*]}")")
  ablation+=("load $load, toposched --no-rail-alignment=$(IFS=,; echo "${norails[*]}")")
done
python3 scripts/eval/aggregate.py "${args[@]}" "${ablation[@]}"
python3 scripts/eval/paired.py "${args[@]}"
