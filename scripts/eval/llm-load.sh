#!/usr/bin/env bash
# The LLM-era evaluation of docs/evaluation.md: `trace generate --mix llm` with seeds 1..SEEDS,
# each simulated under every policy at 50/70/90% offered load on the 2:1 tapered 3-tier H100
# fabric (data/clusters/eval-h100-3tier-2to1.yaml), then one table per load with the mean and
# 95% half-width over the seeds (scripts/eval/aggregate.py), and the ablation: toposched with
# --no-wait-or-spread, one more table per load.
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
  for seed in $(seq 1 "$SEEDS"); do
    trace="$OUT/llm-$JOBS-s$seed.csv"
    [ -f "$trace" ] || "$BIN" trace generate --mix llm --jobs "$JOBS" --seed "$seed" --out "$trace" >/dev/null
    dir="$OUT/load$load-s$seed"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy all \
      --load "$load" --seed "$seed" --out "$dir" > "$dir.log"
    "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy toposched \
      --no-wait-or-spread --load "$load" --seed "$seed" --out "$dir-no-wait" > "$dir-no-wait.log"
    dirs+=("$dir")
    nowait+=("$dir-no-wait")
  done
  args+=("load $load=$(IFS=,; echo "${dirs[*]}")")
  ablation+=("load $load, toposched --no-wait-or-spread=$(IFS=,; echo "${nowait[*]}")")
done
python3 scripts/eval/aggregate.py "${args[@]}" "${ablation[@]}"
