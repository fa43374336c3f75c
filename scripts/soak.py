#!/usr/bin/env python3
"""Soak test of a real `toposched serve`: concurrent REST and extender clients, random kill -9.

What it proves, after every restart (each cycle):
  - no acknowledged job is lost: every submit answered 200/201 is there, with the id it was given;
  - none is duplicated: at most one job per idempotency key, though unanswered submits are
    retried with the same key after the restart, and no pod group twice for one pod;
  - no GPU is in two allocations: each GPU has at most one holder, and the running jobs'
    placements are disjoint;
  - GPU states add up: free + allocated + unhealthy + drained = total (/metrics), and per node
    free + allocated + unavailable = its GPUs (/api/v1/nodes);
  - replay = live: on quiescent cycles (clients paused, their calls in flight answered, and the
    state held still for 0.5 s: the pass a submit wakes has run) the jobs and nodes served after
    the kill and replay are byte-for-byte those served just before it.
REST clients submit, complete, cancel and run passes over the main listener with the bearer
token; extender clients filter and bind GPU pods as kube-scheduler does, over the extender's
HTTPS listener with a client certificate (tests/api/testdata/tls), and delete some.

Bounded: --seconds of load in all (60 by default; CI runs it so), at least --cycles kill -9
cycles. Exit 0 when every invariant held on every cycle; the figures go to stdout and --out.
Standard library only.
"""
import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TLS = os.path.join(ROOT, "tests", "api", "testdata", "tls")
TOKEN = "soak-token-0123456789abcdef"


class Daemon:
    """One `toposched serve` on loopback, restarted on the same database."""

    def __init__(self, binary, cluster, workdir):
        self.binary, self.cluster, self.dir = binary, cluster, workdir
        self.proc = None
        self.port = self.ext_port = None
        self.starts = 0
        with open(os.path.join(workdir, "token"), "w") as f:
            f.write(TOKEN + "\n")

    def start(self):
        for f in ("port", "ext_port"):
            try:
                os.remove(os.path.join(self.dir, f))
            except FileNotFoundError:
                pass
        log = open(os.path.join(self.dir, "serve-%d.log" % self.starts), "w")
        self.starts += 1
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--cluster", self.cluster,
             "--db", os.path.join(self.dir, "state.db"),
             "--token-file", os.path.join(self.dir, "token"),
             "--listen", "127.0.0.1:0", "--port-file", os.path.join(self.dir, "port"),
             "--extender-listen", "127.0.0.1:0",
             "--extender-port-file", os.path.join(self.dir, "ext_port"),
             "--extender-tls-cert", os.path.join(TLS, "server.crt"),
             "--extender-tls-key", os.path.join(TLS, "server.key"),
             "--extender-client-ca", os.path.join(TLS, "ca.crt"),
             "--kube-api-server", "none",
             "--pass-interval-ms", "3600000", "--quiet"],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("serve exited with %d (log: %s)" % (self.proc.returncode, log.name))
            try:
                with open(os.path.join(self.dir, "port")) as f:
                    port = int(f.read().strip() or 0)
                with open(os.path.join(self.dir, "ext_port")) as f:
                    ext = int(f.read().strip() or 0)
                if port > 0 and ext > 0:
                    self.port, self.ext_port = port, ext
                    return
            except (FileNotFoundError, ValueError):
                pass
            time.sleep(0.02)
        raise RuntimeError("serve did not start within 60 s")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


def call(port, method, path, body=None, headers=None, tls=None, timeout=10):
    """(status, parsed JSON or text); raises OSError/HTTPException when the daemon is away."""
    if tls is not None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=timeout)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = {"Content-Type": "application/json"}
        if tls is None:
            h["Authorization"] = "Bearer " + TOKEN
        h.update(headers or {})
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
        r = conn.getresponse()
        data = r.read().decode("utf-8", "replace")
        try:
            return r.status, json.loads(data)
        except ValueError:
            return r.status, data
    finally:
        conn.close()


class Soak:
    def __init__(self, args, daemon):
        self.args, self.d = args, daemon
        self.lock = threading.Lock()
        self.acked = {}       # idempotency key -> job id
        self.unanswered = set()  # keys whose submit got no answer (retried later)
        self.pods = {}        # pod name -> node bound ("" while filtered only)
        self.deleted = set()
        self.counts = {"submits_acked": 0, "submit_retries": 0, "completes": 0, "cancels": 0,
                       "passes": 0, "filters": 0, "binds": 0, "pod_deletes": 0,
                       "errors_while_down": 0, "invariant_checks": 0}
        self.running = threading.Event()  # clients work while set
        # Client iterations under way (a submit, a filter and its bind...): pause() waits for
        # them, so that a snapshot taken after it sees every call the daemon will ever answer.
        self.inflight = 0
        self.idle = threading.Condition()
        self.quit = False
        self.tls = ssl.create_default_context(cafile=os.path.join(TLS, "ca.crt"))
        self.tls.load_cert_chain(os.path.join(TLS, "client.crt"), os.path.join(TLS, "client.key"))
        self.node_names = []  # the extender's candidate nodes, from the daemon once started

    def bump(self, k, n=1):
        with self.lock:
            self.counts[k] += n

    @contextlib.contextmanager
    def step(self):
        """One client iteration; yields False (do nothing) once pause() has begun."""
        with self.idle:
            ok = self.running.is_set()
            if ok:
                self.inflight += 1
        try:
            yield ok
        finally:
            if ok:
                with self.idle:
                    self.inflight -= 1
                    self.idle.notify_all()

    def pause(self, timeout=30.0):
        """Stops the clients and waits for their iterations under way (each call times out in
        10 s; an iteration makes at most two). False if some were still running at timeout."""
        self.running.clear()
        deadline = time.time() + timeout
        with self.idle:
            while self.inflight > 0 and time.time() < deadline:
                self.idle.wait(max(deadline - time.time(), 0.01))
            return self.inflight == 0

    # --- clients -------------------------------------------------------------------------------
    def rest_client(self, cid):
        rng = random.Random(self.args.seed * 1000 + cid)
        i = 0
        while not self.quit:
            self.running.wait()
            if self.quit:
                return
            with self.step() as ok:
                if not ok:
                    continue
                try:
                    with self.lock:
                        retry = self.unanswered.pop() if self.unanswered and rng.random() < 0.5 else None
                    key = retry or "c%d-%d" % (cid, i)
                    if retry is None:
                        i += 1
                    else:
                        self.bump("submit_retries")
                    roll = rng.random()
                    if retry or roll < 0.45:
                        gpus = rng.choice([1, 2, 4, 8, 8, 16])
                        with self.lock:
                            self.unanswered.add(key)
                        st, body = call(self.d.port, "POST", "/api/v1/jobs",
                                        {"name": key, "total_gpus": gpus},
                                        {"Idempotency-Key": key})
                        if st in (200, 201):
                            with self.lock:
                                self.unanswered.discard(key)
                                if key in self.acked and self.acked[key] != body["id"]:
                                    raise AssertionError("key %s acknowledged as %s and then %s" %
                                                         (key, self.acked[key], body["id"]))
                                self.acked[key] = body["id"]
                            self.bump("submits_acked")
                    elif roll < 0.9:
                        # Complete a running job (frees its GPUs), or cancel any acknowledged one.
                        verb = "complete" if rng.random() < 0.8 else "cancel"
                        ids = []
                        if verb == "complete":
                            st, body = call(self.d.port, "GET", "/api/v1/jobs?state=RUNNING&limit=50")
                            if st == 200:
                                ids = [j["id"] for j in body["jobs"] if j.get("source") == "rest"]
                        else:
                            with self.lock:
                                ids = list(self.acked.values())
                        if ids:
                            jid = rng.choice(ids)
                            st, _ = call(self.d.port, "POST", "/api/v1/jobs/%d/%s" % (jid, verb), {})
                            if st == 200:
                                self.bump("completes" if verb == "complete" else "cancels")
                    else:
                        st, _ = call(self.d.port, "POST", "/api/v1/schedule", {})
                        if st == 200:
                            self.bump("passes")
                except (OSError, http.client.HTTPException):
                    self.bump("errors_while_down")
                    time.sleep(0.05)

    def extender_client(self, cid):
        rng = random.Random(self.args.seed * 7919 + cid)
        i = 0
        while not self.quit:
            self.running.wait()
            if self.quit:
                return
            with self.step() as ok:
                if not ok:
                    continue
                try:
                    with self.lock:
                        bound = [p for p, n in self.pods.items() if n and p not in self.deleted]
                    if bound and rng.random() < 0.3:
                        pod = rng.choice(bound)
                        st, _ = call(self.d.port, "POST", "/extender/pod-deleted",
                                     {"PodUID": "uid-" + pod})
                        if st == 200:
                            with self.lock:
                                self.deleted.add(pod)
                            self.bump("pod_deletes")
                        continue
                    pod = "x%d-%d" % (cid, i)
                    i += 1
                    meta = {"name": pod, "namespace": "soak", "uid": "uid-" + pod}
                    spec = {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
                    args = {"Pod": {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec},
                            "NodeNames": self.node_names}
                    st, body = call(self.d.ext_port, "POST", "/extender/filter", args, tls=self.tls)
                    if st != 200:
                        continue
                    self.bump("filters")
                    with self.lock:
                        self.pods.setdefault(pod, "")
                    nodes = body.get("NodeNames") or []
                    if not nodes:
                        continue
                    st, body = call(self.d.ext_port, "POST", "/extender/bind",
                                    {"PodName": pod, "PodNamespace": "soak", "PodUID": "uid-" + pod,
                                     "Node": nodes[0]}, tls=self.tls)
                    if st == 200 and not (isinstance(body, dict) and body.get("Error")):
                        with self.lock:
                            self.pods[pod] = nodes[0]
                        self.bump("binds")
                except (OSError, http.client.HTTPException):
                    self.bump("errors_while_down")
                    time.sleep(0.05)

    # --- invariants ----------------------------------------------------------------------------
    def snapshot(self):
        _, jobs = call(self.d.port, "GET", "/api/v1/jobs?limit=100000")
        _, nodes = call(self.d.port, "GET", "/api/v1/nodes")
        return jobs, nodes

    def settled(self, gap=0.5, tries=40):
        """The state once it holds still: a submit also wakes the daemon's pass loop, so a pass
        may still start queued jobs after the clients' last answer. Two snapshots `gap` apart
        that are equal (the pass the last input woke has run; nothing else wakes one)."""
        last = self.snapshot()
        for _ in range(tries):
            time.sleep(gap)
            now = self.snapshot()
            if json.dumps(now, sort_keys=True) == json.dumps(last, sort_keys=True):
                return now
            last = now
        return last

    def check(self, cycle):
        failures = []
        jobs, nodes = self.snapshot()
        by_key = {}
        for j in jobs["jobs"]:
            k = j.get("idempotency_key") or ""
            if k:
                by_key.setdefault(k, []).append(j["id"])
        with self.lock:
            acked = dict(self.acked)
        lost = [k for k, jid in acked.items() if jid not in by_key.get(k, [])]
        dup = {k: v for k, v in by_key.items() if len(v) > 1}
        if lost:
            failures.append("lost acknowledged jobs: %s" % lost[:10])
        if dup:
            failures.append("duplicated keys: %s" % list(dup.items())[:10])
        groups = {}
        for j in jobs["jobs"]:
            if j.get("pod_group"):
                groups.setdefault(j["pod_group"], []).append(j["id"])
        # A pod group is one job while it lives; a deleted group's pods may come back as a new
        # group, so only live (non-terminal) duplicates count.
        live_groups = {}
        for j in jobs["jobs"]:
            if j.get("pod_group") and j["state"] in ("PENDING", "RUNNING"):
                live_groups.setdefault(j["pod_group"], []).append(j["id"])
        dup_groups = {g: v for g, v in live_groups.items() if len(v) > 1}
        if dup_groups:
            failures.append("a pod group queued twice: %s" % list(dup_groups.items())[:5])
        held = {}
        for j in jobs["jobs"]:
            if j["state"] != "RUNNING" or "placement" not in j:
                continue
            for n in j["placement"]["nodes"]:
                for g in n["gpus"]:
                    held.setdefault((n["node"], g), []).append(j["id"])
        double = {k: v for k, v in held.items() if len(v) > 1}
        if double:
            failures.append("GPUs in two running jobs' placements: %s" % list(double.items())[:5])
        for n in nodes["nodes"]:
            for g in n.get("gpu_states", []):
                if len(g.get("holders", [])) > 1:
                    failures.append("%s GPU %d has holders %s" % (n["name"], g["gpu"], g["holders"]))
            if n["free"] + n["allocated"] + n["unavailable"] != n["gpus"]:
                failures.append("%s: free %d + allocated %d + unavailable %d != %d" %
                                (n["name"], n["free"], n["allocated"], n["unavailable"], n["gpus"]))
        _, metrics = call(self.d.port, "GET", "/metrics")
        gpus = {}
        for line in metrics.splitlines():
            if line.startswith("toposched_gpus{state="):
                state = line.split('"')[1]
                gpus[state] = int(float(line.rsplit(" ", 1)[1]))
        parts = sum(gpus.get(s, 0) for s in ("free", "allocated", "unhealthy", "drained"))
        if parts != gpus.get("total", -1):
            failures.append("toposched_gpus: parts %d != total %s" % (parts, gpus.get("total")))
        self.bump("invariant_checks")
        return failures, len(jobs["jobs"])

    def run(self):
        a = self.args
        rng = random.Random(a.seed)
        threads = [threading.Thread(target=self.rest_client, args=(c,), daemon=True)
                   for c in range(a.rest_clients)]
        threads += [threading.Thread(target=self.extender_client, args=(c,), daemon=True)
                    for c in range(a.extender_clients)]
        for t in threads:
            t.start()
        self.d.start()
        self.node_names = [n["name"] for n in self.snapshot()[1]["nodes"]]
        t_end = time.time() + a.seconds
        cycles, quiescent, replay_equal, all_failures = 0, 0, 0, []
        per_cycle = a.seconds / max(a.cycles, 1)
        while cycles < a.cycles or time.time() < t_end:
            self.running.set()
            time.sleep(rng.uniform(0.3, 1.0) * per_cycle * 0.8)
            quiet = cycles % 2 == 1
            before = None
            idle = True
            if quiet:
                idle = self.pause()  # every call in flight answered
                before = self.settled()
                quiescent += 1
            self.d.kill9()
            self.d.start()
            cycles += 1
            if not quiet:
                idle = self.pause()
            failures, njobs = self.check(cycles)
            if not idle:
                failures.append("clients' calls still unanswered 30 s after the pause")
            if quiet:
                after = self.snapshot()
                if json.dumps(after, sort_keys=True) == json.dumps(before, sort_keys=True):
                    replay_equal += 1
                else:
                    failures.append("replay differs from the live state before the kill")
            status = "ok" if not failures else "FAILED: " + "; ".join(failures)
            print("soak: cycle %d (%s) jobs=%d acked=%d %s" %
                  (cycles, "quiescent" if quiet else "under load", njobs, len(self.acked), status),
                  flush=True)
            all_failures += ["cycle %d: %s" % (cycles, f) for f in failures]
            if time.time() > t_end + 120:
                break
        self.quit = True
        self.running.set()
        # Last round: retry every unanswered key once more; each must then be there exactly once.
        with self.lock:
            left = sorted(self.unanswered)
        for key in left:
            st, body = call(self.d.port, "POST", "/api/v1/jobs", {"name": key, "total_gpus": 1},
                            {"Idempotency-Key": key})
            if st in (200, 201):
                self.acked[key] = body["id"]
            elif st == 409:
                pass  # stored before the kill with other GPUs: same key, different spec
        failures, njobs = self.check(cycles + 1)
        all_failures += ["final: %s" % f for f in failures]
        self.d.stop()
        report = dict(self.counts)
        report.update({"cycles": cycles, "quiescent_cycles": quiescent,
                       "replay_equal": replay_equal, "jobs": njobs,
                       "acknowledged_keys": len(self.acked), "pods_bound": sum(1 for v in self.pods.values() if v),
                       "failures": all_failures, "seconds": a.seconds, "seed": a.seed})
        return report


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "toposched"))
    p.add_argument("--cluster", default=os.path.join(ROOT, "data", "clusters", "h100-2rack.yaml"))
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--cycles", type=int, default=10)
    p.add_argument("--rest-clients", type=int, default=6)
    p.add_argument("--extender-clients", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="")
    a = p.parse_args()
    if a.seconds <= 0 or a.seconds > 24 * 3600 or a.cycles < 1:
        p.error("--seconds in (0, 86400], --cycles >= 1")
    work = tempfile.mkdtemp(prefix="toposched-soak-")
    # A copy of the binary: a rebuild while the soak runs must not change what it restarts.
    binary = os.path.join(work, "toposched")
    shutil.copy2(a.binary, binary)
    a.binary = binary
    d = Daemon(a.binary, a.cluster, work)
    t0 = time.time()
    try:
        report = Soak(a, d).run()
    finally:
        d.stop()
    report["wall_s"] = round(time.time() - t0, 1)
    report["workdir"] = work
    print(json.dumps(report, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)
    if report["failures"]:
        print("soak: FAILED (%d invariant failures)" % len(report["failures"]), file=sys.stderr)
        return 1
    print("soak: ok: %d kill -9 cycles, %d invariant checks, 0 failures" %
          (report["cycles"], report["invariant_checks"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
