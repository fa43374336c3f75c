#!/usr/bin/env python3
"""How long the dashboard's cluster view takes to render a 4,096-node cluster in headless Chromium.

Not a Google Benchmark (the work is the browser's): a script that generates the cluster
(`toposched cluster generate`, 4,096 nodes x 8 GPUs, 16 nodes per leaf, 16 leaves per spine),
starts the real daemon on it, fills it to about 70% through the REST API (jobs of 1 to 64 GPUs),
then loads the cluster view RUNS times in a fresh page and reads what the page records
(web/app.js): `firstRenderMs`, the time from navigation start to the view drawn (the page, its
script, the topology and node reads and the drawing), and `lastUpdateMs`, one live update (the
node read and the redraw). Prints each run, then the median and the worst.
Usage: bench/dashboard_render.py BUILD_DIR/toposched [RUNS]
"""
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "dashboard"))
import dashboard_test as dt  # noqa: E402  (the same daemon and browser drivers)


def main():
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tmp = tempfile.mkdtemp(prefix="ts-dash-bench-")
    gen = os.path.join(tmp, "gen")
    subprocess.run([binary, "cluster", "generate", "--nodes", "4096", "--gpus-per-node", "8",
                    "--nodes-per-leaf", "16", "--leaves-per-spine", "16", "--out", gen],
                   check=True, capture_output=True)
    dt.CLUSTER = os.path.join(gen, "cluster.yaml")
    d = dt.Daemon(binary, tmp)
    b = None
    try:
        rng = random.Random(1)
        target = int(4096 * 8 * 0.7)
        used = 0
        t0 = time.time()
        n = 0
        while used < target:
            gpus = rng.choice([1, 2, 4, 8, 8, 16, 32, 64])
            spec = {"name": "fill-%d" % n, "user": "u%d" % (n % 20), "replicas": max(1, gpus // 8),
                    "gpus_per_replica": min(gpus, 8)}
            status, _, _ = d.call("POST", "/api/v1/jobs", spec)
            assert status == 201, status
            used += gpus
            n += 1
        d.call("POST", "/api/v1/schedule", {})
        nodes = d.call("GET", "/api/v1/nodes")[1]["nodes"]
        busy = sum(x["allocated"] for x in nodes)
        print("cluster: %d nodes, %d GPUs, %d allocated (%.0f%%) by %d jobs submitted in %.1f s"
              % (len(nodes), sum(x["gpus"] for x in nodes), busy, 100.0 * busy / (4096 * 8), n,
                 time.time() - t0))
        b = dt.Browser(tmp)
        first, update = [], []
        for i in range(runs):
            b.go("about:blank")
            b.go(d.url + "/#/cluster")
            b.wait_view("cluster", 0, timeout=60)
            ms = float(b.js("return document.getElementById('view').dataset.firstRenderMs;"))
            bars = b.js("return document.querySelectorAll('.agg').length;")
            r = b.wait_view("cluster", b.js("return Number(document.getElementById('view').dataset.ready);"), timeout=60)
            up = float(b.js("return document.getElementById('view').dataset.lastUpdateMs;"))
            first.append(ms)
            update.append(up)
            print("run %d: first render %.0f ms (%d leaf bars), live update %.0f ms (render %d)" % (i + 1, ms, bars, up, r))
        print("first render: median %.0f ms, worst %.0f ms; live update: median %.0f ms, worst %.0f ms"
              % (statistics.median(first), max(first), statistics.median(update), max(update)))
    finally:
        if b:
            b.quit()
        d.stop()


if __name__ == "__main__":
    main()
