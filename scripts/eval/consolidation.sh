#!/usr/bin/env bash
# Consolidation at checkpoints on the LLM-era mix of docs/evaluation.md: the traces and the
# all-policy runs of llm-load.sh (run it first: eval/llm), then toposched again with every job
# checkpointing every INTERVAL and restarting in RESTART, with consolidation (DIR-ckpt) and
# without (DIR-ckpt-no-consolidation), at 70% and 90% offered load; then the paired ratios
# (scripts/eval/consolidation.py). INTERVAL and RESTART are what-if inputs of the run: traces
# carry no checkpoint data.
# Usage: scripts/eval/consolidation.sh [INTERVAL] [RESTART] [JOBS] [SEEDS] [OUT]
#        (defaults 30m, 5m, 2000, 5, eval/llm)
set -euo pipefail
cd "$(dirname "$0")/../.."
INTERVAL="${1:-30m}"
RESTART="${2:-5m}"
JOBS="${3:-2000}"
SEEDS="${4:-5}"
OUT="${5:-eval/llm}"
BIN="${TOPOSCHED:-build/toposched}"
CLUSTER=data/clusters/eval-h100-3tier-2to1.yaml
args=()
for load in 0.7 0.9; do
  dirs=()
  for seed in $(seq 1 "$SEEDS"); do
    trace="$OUT/llm-$JOBS-s$seed.csv"
    dir="$OUT/load$load-s$seed"
    [ -f "$dir/report.json" ] || { echo "missing $dir: run scripts/eval/llm-load.sh" >&2; exit 1; }
    for mode in "" "-no-consolidation"; do
      flag=()
      [ -n "$mode" ] && flag=(--no-consolidation)
      "$BIN" simulate --cluster "$CLUSTER" --trace "$trace" --trace-format csv --policy toposched \
        --checkpoint-interval "$INTERVAL" --restart-cost "$RESTART" "${flag[@]}" \
        --load "$load" --seed "$seed" --out "$dir-ckpt$mode" > "$dir-ckpt$mode.log" &
    done
    wait
    dirs+=("$dir")
  done
  args+=("load $load=$(IFS=,; echo "${dirs[*]}")")
done
python3 scripts/eval/consolidation.py "${args[@]}"
