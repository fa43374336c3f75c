#!/usr/bin/env python3
"""Checks the simulator's run-time rule against measured step times by placement.

The simulator stretches a job's ideal run time by its communication share f:
    step(actual) = step(ideal) * ((1 - f) + f * comm(actual) / comm(ideal)),  f = comm(ideal)/step(ideal)
The Pollux throughput profiles (philly-pollux-derived/throughput-profiles/<app>/placements.csv)
give, for each placement (a digit string of GPUs per node on 4-GPU T4 nodes) and local batch
size, the measured step_time and sync_time (s). For every placement with >= 2 GPUs that has an
ideal (fewest nodes) counterpart at the same batch size, this prints how well the rule predicts
the measured step time from the measured sync time, and f on the ideal placement.

Usage: scripts/check-comm-split.py [PROFILES_DIR]
"""
import csv
import glob
import os
import statistics
import sys


def ideal_of(n, per_node=4):
    s = ""
    while n > 0:
        s += str(min(per_node, n))
        n -= min(per_node, n)
    return s


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "traces",
        "philly-pollux-derived", "throughput-profiles")
    all_err, all_f = [], []
    print(f"{'app':12} {'compared':>8} {'median err':>10} {'p90 err':>8} {'max err':>8} "
          f"{'f median':>8} {'f range':>11}")
    for app_dir in sorted(glob.glob(os.path.join(root, "*"))):
        rows = list(csv.DictReader(open(os.path.join(app_dir, "placements.csv"))))
        by = {(r["placement"], int(r["local_bsz"])): (float(r["step_time"]), float(r["sync_time"]))
              for r in rows}
        errs, fs = [], []
        for (pl, bsz), (step, sync) in by.items():
            n = sum(map(int, pl))
            if n < 2:
                continue
            if len(pl) == 1:
                fs.append(sync / step)
            ideal = ideal_of(n)
            if ideal == pl or (ideal, bsz) not in by:
                continue
            s0, y0 = by[(ideal, bsz)]
            if y0 <= 0:
                continue
            f = y0 / s0
            pred = s0 * ((1 - f) + f * sync / y0)
            errs.append(abs(pred - step) / step)
        errs.sort()
        print(f"{os.path.basename(app_dir):12} {len(errs):8d} {statistics.median(errs):10.3f} "
              f"{errs[int(0.9 * len(errs))]:8.3f} {max(errs):8.3f} {statistics.median(fs):8.2f} "
              f"{min(fs):5.2f}-{max(fs):.2f}")
        all_err += errs
        all_f += fs
    all_err.sort()
    print(f"{'all':12} {len(all_err):8d} {statistics.median(all_err):10.3f} "
          f"{all_err[int(0.9 * len(all_err))]:8.3f} {max(all_err):8.3f} "
          f"{statistics.median(all_f):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
