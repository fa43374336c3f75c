#!/usr/bin/env python3
"""How far below a policy any placement could go: per LABEL=DIR[,DIR...] argument (one run
directory per trace seed, each with report.json), the figures every job would give if it started
at submission and ran at ideal step time throughout (its trace duration: docs/simulator.md,
"Step time"), over the policy's own, seed by seed, then the mean and 95% half-width. No policy's
mean JCT or GPU-time-weighted JCT can fall below these ratios (queueing and a slower step only
add to a job's time).
Usage: ideal-bound.py POLICY "load 0.7=eval/llm2/load0.7-s1,..." ...
It reads the traces the reports name and divides; it simulates nothing."""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aggregate import mean_ci  # noqa: E402


def ideal(trace):
    """Mean duration and GPU-time-weighted duration of a generic CSV trace."""
    with open(trace) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    d = [float(r["duration_s"]) for r in rows]
    w = [int(r["gpus"]) * x for r, x in zip(rows, d)]
    return sum(d) / len(d), sum(wi * x for wi, x in zip(w, d)) / sum(w)


def main(policy, args):
    for arg in args:
        label, dirs = arg.split("=", 1)
        mean_r, weighted_r = [], []
        for d in dirs.split(","):
            rep = json.load(open(os.path.join(d, "report.json")))
            p = rep["policies"][policy]
            m, w = ideal(rep["trace"]["file"])
            mean_r.append(m / p["mean_jct_s"])
            weighted_r.append(w / p["gpu_time_weighted_jct_s"])
        (mm, mh), (wm, wh) = mean_ci(mean_r), mean_ci(weighted_r)
        print(f"{label}: ideal / {policy} over {len(mean_r)} runs: mean JCT {mm:.3f} ± {mh:.3f} "
              f"(seeds {', '.join(f'{x:.3f}' for x in mean_r)}); GPU-time-weighted JCT "
              f"{wm:.3f} ± {wh:.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
