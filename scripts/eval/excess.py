#!/usr/bin/env python3
"""Where each policy's mean JCT goes beyond the ideal: from the jobs.csv files of `toposched
simulate` runs (one DIR per run; several DIRs, e.g. one per trace seed, are pooled as one mean
over the runs), per policy and job-size bucket, the mean JCT split into
  ideal     the trace duration (the job's run time at ideal step time from submission),
  queue     first start - submission,
  stretch   JCT - queue - ideal (a slower placement, contention, restarts after preemption),
each as its contribution to the policy's mean JCT in seconds (summed over the buckets it is the
policy's mean), then the share of jobs of 2-8 GPUs whose last run spanned nodes.
Usage: excess.py DIR [DIR ...]
It reads jobs.csv and divides; it simulates nothing. Jobs that did not finish are left out and
counted."""
import csv
import os
import sys
from collections import defaultdict

BUCKETS = ["1", "2-8", "9-64", "65-256", "257+"]


def bucket(gpus):
    return "1" if gpus <= 1 else "2-8" if gpus <= 8 else "9-64" if gpus <= 64 else \
        "65-256" if gpus <= 256 else "257+"


def main(dirs):
    # (policy) -> bucket -> [jobs, ideal, queue, stretch]; plus totals and spread small jobs
    acc = defaultdict(lambda: defaultdict(lambda: [0, 0.0, 0.0, 0.0]))
    jobs = defaultdict(int)
    unfinished = defaultdict(int)
    small = defaultdict(lambda: [0, 0])  # policy -> [2-8 GPU jobs, of them on > 1 node]
    runs = defaultdict(set)  # policy -> {(dir, seed)}
    for d in dirs:
        with open(os.path.join(d, "jobs.csv")) as f:
            for r in csv.DictReader(f):
                p = r["policy"]
                runs[p].add((d, r["seed"]))
                if not r["jct_s"]:
                    unfinished[p] += 1
                    continue
                g = int(r["gpus"])
                ideal, queue, jct = float(r["ideal_s"]), float(r["queue_s"]), float(r["jct_s"])
                a = acc[p][bucket(g)]
                a[0] += 1
                a[1] += ideal
                a[2] += queue
                a[3] += jct - queue - ideal
                jobs[p] += 1
                if 2 <= g <= 8:
                    small[p][0] += 1
                    small[p][1] += int(r["nodes"]) > 1
    for p in acc:
        n = jobs[p]
        print(f"## {p}: {n} finished jobs over {len(runs[p])} run(s)"
              + (f", {unfinished[p]} unfinished (left out)" if unfinished[p] else ""))
        print("| bucket | jobs | ideal (s) | queue (s) | stretch (s) | mean JCT (s) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        tot = [0.0, 0.0, 0.0]
        for b in BUCKETS:
            if b not in acc[p]:
                continue
            j, ideal, queue, stretch = acc[p][b]
            parts = [ideal / n, queue / n, stretch / n]
            tot = [t + x for t, x in zip(tot, parts)]
            print(f"| {b} | {j} | " + " | ".join(f"{x:.1f}" for x in parts)
                  + f" | {sum(parts):.1f} |")
        print(f"| all | {n} | " + " | ".join(f"{x:.1f}" for x in tot) + f" | {sum(tot):.1f} |")
        s = small[p]
        if s[0]:
            print(f"2-8 GPU jobs on more than one node: {s[1]} of {s[0]} ({100 * s[1] / s[0]:.1f}%)")
        print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
