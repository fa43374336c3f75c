#!/usr/bin/env python3
"""Paired ratios of `toposched simulate` reports: per LABEL=DIR[,DIR...] argument (one DIR per
trace seed or window, each holding report.json), toposched's figure over each other policy's,
computed seed by seed and then averaged, with a 95% half-width (Student t, n-1 degrees of
freedom). The seeds differ far more than the policies do, so pairs are the sharper comparison.
Ablation runs are picked up beside each DIR when present: DIR-no-wait (`--no-wait-or-spread`)
and DIR-no-contention (`--no-contention`), each a row "toposched --no-...".
Usage: paired.py "load 0.9=eval/llm/load0.9-s1,...,eval/llm/load0.9-s5" ...
Prints one Markdown table per argument; it only divides what the simulator wrote."""
import json
import math
import os
import sys

T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
FIGURES = [("mean_jct_s", "mean JCT"), ("gpu_time_weighted_jct_s", "GPU-time-weighted JCT"),
           ("useful_utilization", "useful util.")]
ABLATIONS = [("-no-wait", "toposched --no-wait-or-spread"),
             ("-no-contention", "toposched --no-contention")]


def mean_ci(values):
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, 0.0
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    t = T975[n - 1] if n - 1 < len(T975) else 1.96
    return m, t * sd / math.sqrt(n)


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
