#!/usr/bin/env python3
"""Paired ratios of `toposched simulate` reports: per LABEL=DIR[,DIR...] argument (one DIR per
trace seed or window, each holding report.json), toposched's figure over each other policy's,
computed seed by seed and then averaged, with a 95% half-width (Student t, n-1 degrees of
freedom). The seeds differ far more than the policies do, so pairs are the sharper comparison.
Ablation runs are picked up beside each DIR when present: DIR-no-wait (`--no-wait-or-spread`),
DIR-no-contention (`--no-contention`) and DIR-no-rails (`--no-rail-alignment`), each a row
"toposched --no-...".
Usage: paired.py "load 0.9=eval/llm/load0.9-s1,...,eval/llm/load0.9-s5" ...
Prints one Markdown table per argument; it only divides what the simulator wrote."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aggregate import mean_ci  # noqa: E402  (the same 95% half-width as the tables)

FIGURES = [("mean_jct_s", "mean JCT"), ("gpu_time_weighted_jct_s", "GPU-time-weighted JCT"),
           ("useful_utilization", "useful util.")]
ABLATIONS = [("-no-wait", "toposched --no-wait-or-spread"),
             ("-no-contention", "toposched --no-contention"),
             ("-no-rails", "toposched --no-rail-alignment")]


def rows_of(d):
    """Policy name -> figures of one run directory, ablations included."""
    rows = dict(json.load(open(os.path.join(d, "report.json")))["policies"])
    for suffix, name in ABLATIONS:
        path = os.path.join(d + suffix, "report.json")
        if os.path.exists(path):
            rows[name] = json.load(open(path))["policies"]["toposched"]
    return rows


def main(args):
    for arg in args:
        label, dirs = arg.split("=", 1)
        runs = [rows_of(d) for d in dirs.split(",")]
        others = [p for p in runs[0] if p != "toposched" and all(p in r for r in runs)]
        print(f"\n**{label}**: toposched / policy, paired over {len(runs)} runs\n")
        print("| policy | " + " | ".join(f[1] for f in FIGURES) + " |")
        print("| --- |" + " ---: |" * len(FIGURES))
        for p in others:
            cells = []
            for key, _ in FIGURES:
                ratios = [r["toposched"][key] / r[p][key] for r in runs if r[p][key] > 0]
                m, h = mean_ci(ratios) if ratios else (float("nan"), 0.0)
                cells.append(f"{m:.3f} ± {h:.3f}")
            print(f"| {p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
