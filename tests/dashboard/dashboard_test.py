#!/usr/bin/env python3
"""The dashboard in a real browser.

Proves, against the real daemon (`toposched serve`, a real SQLite file, the demo cluster
data/clusters/h100-2rack.yaml and the demo jobs data/jobs/example-jobs.yaml plus one job that
must wait) and Debian's headless Chromium driven over WebDriver (chromedriver):
  - every view (cluster, node, queue, job, simulator report) renders from the binary's own assets;
  - the values it shows equal the API's: free GPUs per node and in total, each job's predicted
    and best-possible milliseconds, each pending job's explanation, a job's ranks;
  - a cancel from the page without the token is refused (401) and changes nothing; with the token
    typed into the page it cancels;
  - the browser's console has no error over the whole run;
  - no URL outside the fixed asset paths is served (path traversal), and assets carry the CSP.
Prints one fact per line; exits 1 on the first failed fact. Screenshots of each view go to
$TS_SCREENSHOT_DIR (default: build/dashboard-screenshots); TS_UPDATE_SCREENSHOTS=1 also copies
them to docs/dashboard/. Usage: dashboard_test.py BUILD_DIR/toposched
"""
import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "data/clusters/h100-2rack.yaml")
JOBS = os.path.join(ROOT, "data/jobs/example-jobs.yaml")
TRACE = os.path.join(ROOT, "data/traces/tiresias-60_job.csv")
SIM_CLUSTER = os.path.join(ROOT, "data/clusters/slurm-8node.yaml")


def fact(ok, text):
    print(("ok   " if ok else "FAIL ") + text, flush=True)
    if not ok:
        raise SystemExit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, binary, tmp):
        self.db = os.path.join(tmp, "toposched.db")
        port_file = os.path.join(tmp, "port")
        self.log = open(os.path.join(tmp, "serve.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--cluster", CLUSTER, "--db", self.db, "--listen", "127.0.0.1:0",
             "--port-file", port_file, "--pass-interval-ms", "200", "--quiet"],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            if self.proc.poll() is not None:
                raise SystemExit("the daemon exited: " + open(self.log.name).read())
            time.sleep(0.05)
        self.port = int(open(port_file).read())
        self.url = "http://127.0.0.1:%d" % self.port
        self.token = open(self.db + ".token").read().strip()

    def call(self, method, path, body=None, token=True):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, self._body(r), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, self._body(e), dict(e.headers)

    @staticmethod
    def _body(r):
        raw = r.read()
        if "json" not in r.headers.get("Content-Type", ""):
            return raw
        return json.loads(raw or b"null")

    def raw_get(self, path):
        """GET with the path sent byte for byte (no client-side normalisation)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.putrequest("GET", path, skip_accept_encoding=True)
        c.endheaders()
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


class Browser:
    """Chromium over WebDriver (W3C), with the browser's console log kept."""

    def __init__(self, tmp):
        port = free_port()
        self.log = open(os.path.join(tmp, "chromedriver.log"), "w")
        self.proc = subprocess.Popen(["chromedriver", "--port=%d" % port],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % port
        for _ in range(200):
            try:
                if self._req("GET", "/status")["value"]["ready"]:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        opts = {"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                         "--disable-background-networking", "--disable-component-update",
                         "--disable-sync", "--window-size=1400,1000",
                         "--user-data-dir=" + os.path.join(tmp, "chromium-profile")]}
        if os.path.exists("/usr/lib/chromium/chromium"):
            opts["binary"] = "/usr/lib/chromium/chromium"
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": opts,
            "goog:loggingPrefs": {"browser": "ALL"}}}}
        self.sid = self._req("POST", "/session", caps)["value"]["sessionId"]
        self.console = []

    def _req(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise SystemExit("WebDriver %s %s: %s" % (method, path, e.read().decode()[:500]))

    def cmd(self, method, path, body=None):
        return self._req(method, "/session/%s%s" % (self.sid, path), body)["value"]

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def go(self, url):
        self.cmd("POST", "/url", {"url": url})

    def wait_view(self, view, after=0, timeout=20):
        """Waits until the view has rendered more than `after` times; returns the render count."""
        end = time.time() + timeout
        while time.time() < end:
            v = self.js("const m = document.getElementById('view');"
                        "return m ? [m.dataset.view || '', Number(m.dataset.ready || 0),"
                        " m.dataset.error || ''] : ['', 0, ''];")
            if v[0] == view and v[1] > after:
                return v[1]
            time.sleep(0.1)
        raise SystemExit("view %s did not render (last: %r); console: %s" % (view, v, self.logs()))

    def text(self, css):
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return e ? e.textContent : null;", css)

    def find(self, css):
        r = self.cmd("POST", "/element", {"using": "css selector", "value": css})
        return list(r.values())[0]

    def click(self, css):
        self.cmd("POST", "/element/%s/click" % self.find(css), {})

    def type(self, css, text):
        e = self.find(css)
        self.cmd("POST", "/element/%s/clear" % e, {})
        self.cmd("POST", "/element/%s/value" % e, {"text": text})

    def logs(self):
        got = self.cmd("POST", "/se/log", {"type": "browser"})
        self.console.extend(got)
        return got

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.cmd("GET", "/screenshot")))

    def quit(self):
        try:
            self._req("DELETE", "/session/" + self.sid)
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=20)


def submit_jobs(d):
    import yaml  # python3-yaml (scripts/install-deps.sh); imported after the skip check
    ids = []
    for spec in yaml.safe_load(open(JOBS))["jobs"]:
        status, body, _ = d.call("POST", "/api/v1/jobs", spec)
        fact(status == 201, "submit %s: HTTP %d" % (spec["name"], status))
        ids.append(body["id"])
    # More than what is left once the 128-GPU job runs: it waits, with a reason.
    waiting = {"name": "waits-for-room", "user": "erin", "queue": "research", "replicas": 24,
               "gpus_per_replica": 8, "layout": {"tp": 8, "dp": 24}, "model_params": "13B"}
    status, body, _ = d.call("POST", "/api/v1/jobs", waiting)
    fact(status == 201, "submit waits-for-room: HTTP %d" % status)
    ids.append(body["id"])
    return ids


def check_cluster(d, b, shots):
    b.go(d.url + "/#/cluster")
    b.wait_view("cluster")
    nodes = d.call("GET", "/api/v1/nodes")[1]["nodes"]
    free = sum(n["free"] for n in nodes)
    fact(b.text("#cluster-free") == str(free), "cluster view: free GPUs %s = API %d"
         % (b.text("#cluster-free"), free))
    shown = b.js("return Array.from(document.querySelectorAll('[data-node]'))"
                 ".map(e => [e.dataset.node, Number(e.dataset.free), e.querySelectorAll('.gpu').length]);")
    fact(len(shown) == len(nodes), "cluster view: %d nodes drawn = API %d" % (len(shown), len(nodes)))
    by = {n["name"]: n for n in nodes}
    bad = [s for s in shown if by[s[0]]["free"] != s[1] or by[s[0]]["gpus"] != s[2]]
    fact(not bad, "cluster view: every node's free GPUs and GPU count equal the API's (%s)" % bad[:3])
    busy = b.js("return document.querySelectorAll('.gpu.st-job').length;")
    held = sum(1 for n in nodes for g in n["gpu_states"] if g["state"] == "job")
    fact(busy == held, "cluster view: %d GPUs coloured as running a job = API %d" % (busy, held))
    fact(b.text("#tree") is not None and "leaf0" in b.text("#tree"), "cluster view: the leaf domains are drawn")
    b.screenshot(os.path.join(shots, "cluster.png"))
    return nodes


def check_node(d, b, nodes, shots):
    name = next(n for n in nodes if n["jobs"])["name"]
    # A NIC reported degraded: the page shows the reported health, not the topology's.
    status, _, _ = d.call("POST", "/api/v1/health", {"node": name, "component": "nic", "index": 2,
                                                     "health": "degraded", "reason": "test"})
    fact(status == 200, "health report: NIC 2 of %s degraded: HTTP %d" % (name, status))
    node = next(n for n in d.call("GET", "/api/v1/nodes")[1]["nodes"] if n["name"] == name)
    b.go(d.url + "/#/node/" + node["name"])
    b.wait_view("node")
    nic = next(x["name"] for x in node["nic_health"] if x["nic"] == 2)
    cell = b.text('#node-nics tr[data-nic-row="%s"] .c-health' % nic)
    fact(cell == "degraded", "node view: NIC %s shows health %s (reported degraded)" % (nic, cell))
    rail = b.text('#node-nics tr[data-nic-row="%s"] .c-rail' % nic)
    fact(rail.startswith("rail 2"), "node view: NIC %s is on %s (NIC i on rail i)" % (nic, rail))
    fact(b.text("#node-free") == str(node["free"]), "node view %s: free GPUs %s = API %d"
         % (node["name"], b.text("#node-free"), node["free"]))
    gpus = b.js("return document.querySelectorAll('#node-graph [data-gpu]').length;")
    fact(gpus == node["gpus"], "node view: %d GPUs in the topology graph = %d" % (gpus, node["gpus"]))
    nics = b.js("return document.querySelectorAll('#node-graph [data-nic]').length;")
    fact(nics == 8, "node view: %d NICs in the topology graph (8 ConnectX-7 per node)" % nics)
    fact("NVSwitch" in (b.text("#nvswitch") or ""), "node view: the NVSwitch is drawn")
    cell = b.js("const r = document.querySelectorAll('#path-matrix tr'); return r[1].children[2].textContent;")
    fact(cell == "NV18", "node view: path matrix GPU0-GPU1 is %s (NV18 on this profile)" % cell)
    holders = b.js("return Array.from(document.querySelectorAll('#node-gpus tr[data-gpu] a')).map(a => a.textContent);")
    fact(node["jobs"][0] in holders, "node view: the GPU table names %s as a holder" % node["jobs"][0])
    b.screenshot(os.path.join(shots, "node.png"))


def check_queue(d, b, shots):
    b.go(d.url + "/#/queue")
    b.wait_view("queue")
    jobs = d.call("GET", "/api/v1/jobs")[1]["jobs"]
    rows = b.js("return Array.from(document.querySelectorAll('#queue-table tr[data-job]'))"
                ".map(r => [Number(r.dataset.job), r.dataset.state, r.querySelector('.c-pred').textContent,"
                " r.querySelector('.c-best').textContent, r.querySelector('.c-why').textContent]);")
    fact(len(rows) == len(jobs), "queue view: %d rows = API %d jobs" % (len(rows), len(jobs)))
    by = {j["id"]: j for j in jobs}
    for jid, state, pred, best, why in rows:
        j = by[jid]
        fact(state == j["state"], "queue view: job-%d state %s = API %s" % (jid, state, j["state"]))
        if j["placement"]:
            want = "%.3f" % j["placement"]["predicted_ms"]
            fact(pred == want, "queue view: job-%d predicted %s ms = API %s" % (jid, pred, want))
            want = "%.3f" % j["placement"]["best_possible_ms"]
            fact(best == want, "queue view: job-%d best possible %s ms = API %s" % (jid, best, want))
        if j["state"] == "PENDING":
            ex = d.call("GET", "/api/v1/jobs/%d/explain" % jid)[1]["explanation"]
            fact(why == ex and ex, "queue view: job-%d shows the API's explanation (%s...)" % (jid, ex[:60]))
    b.screenshot(os.path.join(shots, "queue.png"))
    # Filtering by user keeps that user's jobs only.
    b.type("#queue-filter", "alice")
    want = sorted(j["id"] for j in jobs if "alice" in (j["job_id"] + j["name"] + j["user"] + j["queue"]).lower())
    end = time.time() + 10
    while time.time() < end:
        rows = b.js("return Array.from(document.querySelectorAll('#queue-table tr[data-job]'))"
                    ".map(r => Number(r.dataset.job));")
        if sorted(rows) == want:
            break
        time.sleep(0.1)
    users = b.js("return Array.from(document.querySelectorAll('#queue-table tr[data-job]')).map(r => r.children[2].textContent);")
    fact(sorted(rows) == want and users and all(u == "alice" for u in users),
         "queue view: filter 'alice' shows %d rows, all alice's" % len(users))
    b.type("#queue-filter", "")
    return jobs


def check_job(d, b, jobs, shots):
    j = next(x for x in jobs if x["placement"] and x["gpus"] >= 16)
    full = d.call("GET", "/api/v1/jobs/%d" % j["id"])[1]
    b.go(d.url + "/#/job/%d" % j["id"])
    b.wait_view("job")
    want = "%.3f" % full["placement"]["predicted_ms"]
    fact(b.text("#job-predicted") == want, "job view job-%d: predicted %s ms = API %s"
         % (j["id"], b.text("#job-predicted"), want))
    ranks = b.js("return document.querySelectorAll('#job-ranks tr').length - 1;")
    fact(ranks == j["gpus"] == len(full["placement"]["ranks"]),
         "job view: %d ranks listed = %d GPUs" % (ranks, j["gpus"]))
    nic = b.js("return document.querySelector('#job-ranks tr:nth-child(2)').children[3].textContent;")
    want_nic = full["placement"]["ranks"][0]["nic"]
    fact(nic == (want_nic or "—"), "job view: rank 0's NIC %s = API %s" % (nic, want_nic))
    dims = b.js("return Array.from(document.querySelectorAll('#job-dims tr[data-dim]')).map(r => r.children[1].textContent);")
    want = ["%.3f" % full["placement"][k] for k in ("tp_ms", "pp_ms", "dp_ms")]
    fact(dims == want, "job view: TP/PP/DP ms %s = API %s" % (dims, want))
    worst = max(("TP", full["placement"]["tp_ms"]), ("PP", full["placement"]["pp_ms"]),
                ("DP", full["placement"]["dp_ms"]), key=lambda x: x[1])
    bottleneck = b.text("#job-bottleneck") or ""
    fact(bottleneck.startswith("Bottleneck: " + worst[0]), "job view: %s" % bottleneck)
    drawn = b.js("return Array.from(document.querySelectorAll('[data-rank-node]')).map(e =>"
                 " [e.dataset.rankNode, e.querySelectorAll('[data-rank]').length,"
                 " e.querySelectorAll('[data-nic][data-used]').length]);")
    per_node = {}
    for r in full["placement"]["ranks"]:
        per_node.setdefault(r["node"], [0, set()])
        per_node[r["node"]][0] += 1
        if r["nic"]:
            per_node[r["node"]][1].add(r["nic"])
    fact(len(drawn) == min(4, len(per_node)), "job view: %d nodes drawn with their ranks" % len(drawn))
    for name, ranks, nics in drawn:
        fact(ranks == per_node[name][0] and nics == len(per_node[name][1]),
             "job view: %s shows %d ranks and %d NICs in use = API %d, %d"
             % (name, ranks, nics, per_node[name][0], len(per_node[name][1])))
    ex = d.call("GET", "/api/v1/jobs/%d/explain" % j["id"])[1]
    shown = b.js("return Array.from(document.querySelectorAll('#job-transports tr[data-dim]'))"
                 ".map(r => [r.dataset.dim, r.querySelector('.c-transport').textContent]);")
    want = [[h["dimension"], h["transport"]] for h in ex["transports"]]
    fact(shown == want and want, "job view: predicted transports %s = API %s" % (shown, want))
    env = b.text("#job-nccl-env") or ""
    fact(ex["nccl_env"]["NCCL_IB_HCA"] in env, "job view: %s" % env)
    hl = b.js("return document.querySelectorAll('#tree .gpu.st-hl').length;")
    fact(hl == j["gpus"], "job view: %d GPUs highlighted on the tree = %d" % (hl, j["gpus"]))
    events = b.js("return document.querySelectorAll('#job-events tr').length - 1;")
    fact(events == len(full["events"]) and events > 0, "job view: %d events = API %d" % (events, len(full["events"])))
    b.screenshot(os.path.join(shots, "job.png"))

    # Cancel without the token: refused, nothing changes.
    b.click("#job-cancel")
    end = time.time() + 10
    while time.time() < end and "refused" not in (b.text("#job-action") or ""):
        time.sleep(0.1)
    msg = b.text("#job-action") or ""
    fact("HTTP 401" in msg, "job view: cancel without the token is refused: %s" % msg)
    st = d.call("GET", "/api/v1/jobs/%d" % j["id"])[1]["state"]
    fact(st == j["state"], "job view: after the refused cancel job-%d is still %s" % (j["id"], st))
    # With the token typed into the page: cancelled.
    b.type("#token", d.token + "\n")
    b.js("document.getElementById('token').dispatchEvent(new Event('change'));")
    b.click("#job-cancel")
    end = time.time() + 10
    st = ""
    while time.time() < end:
        st = d.call("GET", "/api/v1/jobs/%d" % j["id"])[1]["state"]
        if st in ("CANCELLED", "COMPLETING"):
            break
        time.sleep(0.1)
    fact(st in ("CANCELLED", "COMPLETING"), "job view: cancel with the token cancels job-%d (%s)" % (j["id"], st))
    end = time.time() + 10
    while time.time() < end and "CANCELLED" not in (b.text("#job-interruption") or ""):
        time.sleep(0.2)
    fact("→ CANCELLED" in (b.text("#job-interruption") or ""),
         "job view: the interruption is shown live: %s" % b.text("#job-interruption"))


def check_report(binary, d, b, tmp, shots):
    out = os.path.join(tmp, "sim")
    r = subprocess.run([binary, "simulate", "--cluster", SIM_CLUSTER, "--trace", TRACE,
                        "--trace-format", "tiresias", "--policy", "toposched,first-fit,spread",
                        "--out", out],
                       capture_output=True, text=True)
    fact(r.returncode == 0, "simulate for the report view: exit %d %s" % (r.returncode, r.stderr[-300:]))
    report = json.load(open(os.path.join(out, "report.json")))
    b.go(d.url + "/#/report")
    n = b.wait_view("report")
    b.cmd("POST", "/element/%s/value" % b.find("#report-file"),
          {"text": os.path.join(out, "report.json")})
    end = time.time() + 10
    while time.time() < end and not b.js("return !!document.getElementById('report-policies');"):
        time.sleep(0.1)
    rows = b.js("return Array.from(document.querySelectorAll('#report-policies tr[data-policy]'))"
                ".map(r => [r.dataset.policy, r.querySelector('[data-figure=jobs]').textContent]);")
    want = sorted([p, str(v["jobs"])] for p, v in report["policies"].items())
    fact(sorted(rows) == want, "report view: policies and completed jobs %s = report.json %s" % (sorted(rows), want))
    has_cdf = any("jct_cdf" in v for v in report["policies"].values())
    if has_cdf:
        lines = b.js("return document.querySelectorAll('#report-cdf polyline').length;")
        fact(lines == len(report["policies"]), "report view: %d JCT CDF lines, one per policy" % lines)
    else:
        print("note report.json has no jct_cdf: the CDF plot is not checked")
    b.screenshot(os.path.join(shots, "report.png"))


def check_assets(d):
    for path in ("/../../../etc/passwd", "/ui/../../etc/passwd", "/ui/%2e%2e/%2e%2e/etc/passwd",
                 "/ui/app.js/../../CMakeLists.txt", "/ui/", "/ui/app.jsx", "/index.html"):
        status, body = d.raw_get(path)
        fact(status in (400, 404) and b"root:" not in body, "GET %s: HTTP %d, no file served" % (path, status))
    status, _, headers = d.call("GET", "/ui/app.js", token=False)
    csp = headers.get("Content-Security-Policy", "")
    fact(status == 200 and "script-src 'self'" in csp, "GET /ui/app.js: 200 with CSP %s" % csp)


def main():
    binary = os.path.abspath(sys.argv[1])
    for tool in ("chromedriver", "chromium"):
        if shutil.which(tool) is None:
            print("skip: %s is not installed (scripts/install-deps.sh installs it)" % tool)
            return 77
    shots = os.environ.get("TS_SCREENSHOT_DIR") or os.path.join(os.path.dirname(binary), "dashboard-screenshots")
    os.makedirs(shots, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="ts-dashboard-")
    d = Daemon(binary, tmp)
    b = None
    try:
        check_assets(d)
        ids = submit_jobs(d)
        d.call("POST", "/api/v1/schedule", {})
        b = Browser(tmp)
        nodes = check_cluster(d, b, shots)
        check_node(d, b, nodes, shots)
        jobs = check_queue(d, b, shots)
        fact(len(jobs) == len(ids), "the API lists the %d submitted jobs" % len(ids))
        check_job(d, b, jobs, shots)
        check_report(binary, d, b, tmp, shots)
        # The one expected entry: the browser logs the refused cancel's 401 response.
        severe = [e for e in b.logs() + b.console if e.get("level") == "SEVERE"
                  and not ("/cancel" in e.get("message", "") and " 401 " in e.get("message", ""))]
        fact(not severe, "browser console: no errors (%s)" % [e.get("message") for e in severe][:3])
    finally:
        if b:
            b.quit()
        d.stop()
    if os.environ.get("TS_UPDATE_SCREENSHOTS") == "1":
        dst = os.path.join(ROOT, "docs/dashboard")
        os.makedirs(dst, exist_ok=True)
        for f in sorted(os.listdir(shots)):
            shutil.copy(os.path.join(shots, f), dst)
        print("screenshots copied to docs/dashboard/")
    shutil.rmtree(tmp, ignore_errors=True)
    print("dashboard: all facts hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
