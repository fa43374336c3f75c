#!/usr/bin/env python3
"""Aggregates report.json files of `toposched simulate` (one per trace seed) into one Markdown
table per load: per policy the mean over the files and a 95% half-width (Student t, n-1 degrees
of freedom) of each figure. Usage: aggregate.py LABEL=DIR[,DIR...] ...  (DIR holds report.json; a single DIR run with
--seeds N gives its own half-widths).
Prints the tables; proves nothing by itself, it only averages what the simulator wrote."""
import json
import math
import sys

T975 = [0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
FIGURES = [("mean_jct_s", "mean JCT (s)", 0), ("gpu_time_weighted_jct_s", "GPU-time-weighted JCT (s)", 0),
           ("multi_node_mean_jct_s", "multi-node mean JCT (s)", 0), ("mean_queue_s", "mean queue (s)", 0),
           ("mean_comm_slowdown", "comm stretch", 3), ("contention_slowdown", "contention", 3),
           ("useful_utilization", "useful util.", 3), ("window_utilization", "window util.", 3),
           ("mean_fragmentation", "fragmentation", 4)]


def mean_ci(values):
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, 0.0
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    t = T975[n - 1] if n - 1 < len(T975) else 1.96
    return m, t * sd / math.sqrt(n)


def main(args):
    for arg in args:
        label, dirs = arg.split("=", 1)
        reports = [json.load(open(d + "/report.json")) for d in dirs.split(",")]
        policies = list(reports[0]["policies"].keys())
        # One report run with --seeds N carries its own half-widths (<figure>_ci95[_s]).
        seeds = reports[0]["policies"][policies[0]].get("seeds", 1) if len(reports) == 1 else 0
        print(f"\n**{label}** ({len(reports) if not seeds else seeds} seeds)\n")
        print("| policy | " + " | ".join(f[1] for f in FIGURES) + " |")
        print("| --- |" + " ---: |" * len(FIGURES))
        for p in policies:
            cells = []
            for key, _, digits in FIGURES:
                m, h = mean_ci([r["policies"][p][key] for r in reports])
                if seeds:
                    fig = key[:-2] if key.endswith("_s") else key
                    h = reports[0]["policies"][p].get(fig + "_ci95" + ("_s" if key.endswith("_s") else ""), 0.0)
                cells.append(f"{m:.{digits}f} ± {h:.{digits}f}")
            print(f"| {p} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
