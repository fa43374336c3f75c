#!/usr/bin/env python3
"""Consolidation at checkpoints, paired: per LABEL=DIR[,DIR...] argument (one DIR per trace
seed), toposched with every job checkpointing (DIR-ckpt: `--checkpoint-interval`,
`--restart-cost`, consolidation on) over the same with `--no-consolidation`
(DIR-ckpt-no-consolidation), over toposched without checkpoints (DIR's toposched) and over
DIR's other policies; ratios seed by seed, then the mean and 95% half-width; and the moves made.
Usage: consolidation.py "load 0.9=eval/llm/load0.9-s1,...,eval/llm/load0.9-s5" ...
It only divides what the simulator wrote."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aggregate import mean_ci  # noqa: E402

FIGURES = [("mean_jct_s", "mean JCT"), ("gpu_time_weighted_jct_s", "GPU-time-weighted JCT"),
           ("useful_utilization", "useful util.")]


def load(path):
    return json.load(open(os.path.join(path, "report.json")))["policies"]


def main(args):
    for arg in args:
        label, dirs = arg.split("=", 1)
        runs = []
        for d in dirs.split(","):
            base = load(d)
            rows = {"toposched --no-consolidation":
                    load(d + "-ckpt-no-consolidation")["toposched"],
                    "toposched without checkpoints": base["toposched"]}
            for p, r in base.items():
                if p != "toposched":
                    rows[p] = r
            runs.append((load(d + "-ckpt")["toposched"], rows))
        moves = [c["consolidation_moves"] for c, _ in runs]
        m, h = mean_ci(moves)
        print(f"\n**{label}**: toposched with checkpoints and consolidation / policy, paired over "
              f"{len(runs)} runs; moves per run {m:.1f} ± {h:.1f}\n")
        print("| policy | " + " | ".join(f[1] for f in FIGURES) + " |")
        print("| --- |" + " ---: |" * len(FIGURES))
        for p in runs[0][1]:
            cells = []
            for key, _ in FIGURES:
                ratios = [c[key] / r[p][key] for c, r in runs if p in r and r[p][key] > 0]
                mm, hh = mean_ci(ratios) if ratios else (float("nan"), 0.0)
                cells.append(f"{mm:.3f} ± {hh:.3f}")
            print(f"| {p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
