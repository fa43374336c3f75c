#!/usr/bin/env python3
"""Durable submits on the etcd store against the SQLite store, in one run on this machine.

Starts a three-member etcd cluster on loopback (/usr/bin/etcd, temporary data directories) and
two `toposched serve` daemons on the h100-2rack cluster: one on `--store etcd://...` (the only
daemon, so the leader), one on `--db` (`--sync full`, an fsync per commit). N client threads
(one keep-alive connection each) POST 1-GPU job specs with idempotency keys for a fixed time; a
submit counts when its 201 arrives, i.e. after its append committed. Prints, per store, the
submits/s and the latency p50/p99 of one submit (ms), and the daemon's own commit count
(toposched_commit_seconds_count: how many appends the submits took, group commit).

Usage: bench/ha_submit_bench.py BUILD/toposched [--threads 1,8,16] [--seconds 3]
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "ha-bench-token-0123456789"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_etcd(tmp):
    client = [free_port() for _ in range(3)]
    peer = [free_port() for _ in range(3)]
    initial = ",".join(f"m{i}=http://127.0.0.1:{peer[i]}" for i in range(3))
    procs = []
    for i in range(3):
        c, p = f"http://127.0.0.1:{client[i]}", f"http://127.0.0.1:{peer[i]}"
        procs.append(subprocess.Popen(
            ["/usr/bin/etcd", "--name", f"m{i}", "--data-dir", f"{tmp}/m{i}",
             "--listen-client-urls", c, "--advertise-client-urls", c,
             "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
             "--initial-cluster", initial, "--initial-cluster-state", "new",
             "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return procs, "etcd://" + ",".join(f"127.0.0.1:{p}" for p in client)


def start_serve(cli, tmp, name, store_args):
    port = free_port()
    log = open(f"{tmp}/{name}.log", "w")
    args = [cli, "serve", "--cluster", f"{ROOT}/data/clusters/h100-2rack.yaml",
            "--listen", f"127.0.0.1:{port}", "--token-file", f"{tmp}/token", "--quiet"]
    proc = subprocess.Popen(args + store_args(port), stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{name} did not become ready (log {tmp}/{name}.log)")


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def run(port, threads, seconds, tag):
    lat, lock, stop = [], threading.Lock(), time.time() + seconds
    failed = [0]

    def client(t):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = 0
        while time.time() < stop:
            body = json.dumps({"name": f"{tag}-{t}-{i}", "user": "bench", "queue": "default",
                               "replicas": 1, "gpus_per_replica": 1, "layout": {"tp": 1},
                               "model_params": "8B"})
            t0 = time.perf_counter()
            try:
                c.request("POST", "/api/v1/jobs", body,
                          {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                           "Idempotency-Key": f"{tag}-{t}-{i}"})
                ok = c.getresponse()
                ok.read()
                good = ok.status == 201
            except OSError:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                good = False
            dt = time.perf_counter() - t0
            with lock:
                if good:
                    lat.append(dt)
                else:
                    failed[0] += 1
            i += 1

    ts = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    begin = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.time() - begin
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")
    return len(lat) / took, pct(0.5), pct(0.99), failed[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--threads", default="1,8,16")
    ap.add_argument("--seconds", type=float, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="toposched-ha-bench-")
    with open(f"{tmp}/token", "w") as f:
        f.write(TOKEN + "\n")
    procs = []
    try:
        etcd, url = start_etcd(tmp)
        procs += etcd
        time.sleep(2)
        e, eport = start_serve(a.cli, tmp, "etcd", lambda p: [
            "--store", url, "--advertise-url", f"http://127.0.0.1:{p}"])
        s, sport = start_serve(a.cli, tmp, "sqlite", lambda p: [
            "--db", f"{tmp}/state.db", "--sync", "full"])
        procs += [e, s]
        print("store threads submits/s p50_ms p99_ms failed commits")
        for n in [int(x) for x in a.threads.split(",")]:
            for name, port in (("etcd", eport), ("sqlite-full", sport)):
                before = metric(port, "toposched_commit_seconds_count")
                rate, p50, p99, failed = run(port, n, a.seconds, f"{name}-{n}")
                commits = metric(port, "toposched_commit_seconds_count") - before
                print(f"{name} {n} {rate:.0f} {p50:.2f} {p99:.2f} {failed} {commits:.0f}",
                      flush=True)
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
