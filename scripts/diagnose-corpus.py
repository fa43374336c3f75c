#!/usr/bin/env python3
"""Measures `toposched diagnose` on the diagnosis corpus (data/diagnosis-corpus/INDEX.tsv).

Each log is diagnosed alone (`diagnose --log FILE --json`); a job with several logs (the `job`
column) is also diagnosed as one (`--log A --log B ...`) and scored against the cause of the job
(the `expected` of its first-failing member, the row whose `job_first` column is `yes`).
Prints one fact per line, per set (`dev`: the logs the rules may be written against; `measure`:
the logs they may only be measured on):
  <set> logs N / top-right K (P%) / healthy-called-healthy / confident(>=0.8)-right / per category.
--set restricts to one set; --misses lists every wrong answer; --rules (dev only) prints each
rule's record as the top cause, the table src/diag/calibration.cc fits confidence on. --check runs no diagnosis: it checks
the corpus itself (every row's file exists in its set's folder and no file lacks a row, line 1 is
a provenance line, the split follows the thread hash, labels are in the vocabulary, every job
has one first member) and prints one line per problem; exit 1 on any.
Usage: scripts/diagnose-corpus.py [--binary build/toposched] [--set dev|measure] [--misses]
       scripts/diagnose-corpus.py --set dev --rules
       scripts/diagnose-corpus.py --check [--corpus DIR]
"""
import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "data", "diagnosis-corpus")


def diagnose(binary, files):
    args = [binary, "diagnose", "--json"]
    for f in files:
        args += ["--log", f]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return "error", 0.0, p.stderr.strip().splitlines()[-1:] or [""], ""
    doc = json.loads(p.stdout)
    causes = doc.get("causes", [])
    if not causes:
        return "unknown", 0.0, [], ""
    return causes[0]["category"], float(causes[0].get("confidence", 0)), [], causes[0].get("rule", "")


VOCABULARY = {
    "timeout", "node_failure", "gpu_fault", "preempted", "host_oom", "gpu_oom", "evicted",
    "unschedulable", "nccl_transport_fallback", "nccl_degraded", "nccl_timeout", "network_error",
    "peer_failure", "rendezvous_failure", "application_error", "healthy", "unknown", "cancelled"}


def split_of(thread):
    return "measure" if int(hashlib.sha256(thread.strip().encode()).hexdigest()[:8], 16) % 2 else "dev"


def check(corpus, rows):
    problems = []
    listed = set()
    jobs = defaultdict(list)
    for i, r in enumerate(rows, start=2):
        where = f"INDEX.tsv:{i}: {r['file']}"
        listed.add((r["set"], r["file"]))
        if r["set"] != split_of(r["thread"]):
            problems.append(f"{where}: set {r['set']}, but thread {r['thread']!r} hashes to "
                            f"{split_of(r['thread'])}")
        if r["expected"] not in VOCABULARY:
            problems.append(f"{where}: expected {r['expected']!r} is not a cause name")
        path = os.path.join(corpus, r["set"], r["file"])
        if not os.path.isfile(path):
            problems.append(f"{where}: no such file in {r['set']}/")
            continue
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        if not lines[0].startswith(b"# PROVENANCE: "):
            problems.append(f"{r['set']}/{r['file']}:1: expected '# PROVENANCE: ...'")
        if len([x for x in lines[1:] if x.strip()]) < 2:
            problems.append(f"{r['set']}/{r['file']}: fewer than 2 log lines")
        if r["job"] != "-":
            jobs[r["job"]].append(r)
    for s in ("dev", "measure"):
        for name in sorted(os.listdir(os.path.join(corpus, s))):
            if (s, name) not in listed:
                problems.append(f"{s}/{name}: not in INDEX.tsv")
    for j, members in sorted(jobs.items()):
        if len(members) < 2:
            problems.append(f"job {j}: one file only")
        if sum(m["job_first"] == "yes" for m in members) != 1:
            problems.append(f"job {j}: expected exactly one member with job_first yes")
    for p in problems:
        print(p)
    print(f"corpus: {len(rows)} files, {len(jobs)} jobs, {len(problems)} problems")
    return 1 if problems else 0


def pct(k, n):
    return f"{k}/{n} ({100.0 * k / n:.0f}%)" if n else "0/0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "toposched"))
    ap.add_argument("--set", choices=["dev", "measure"])
    ap.add_argument("--misses", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--rules", action="store_true",
                    help="with --set dev only: each rule's record as the top cause (led, right), "
                         "as src/diag/calibration.cc's table")
    a = ap.parse_args()
    if a.rules and a.set != "dev":
        ap.error("--rules fits the calibration: it reads the dev set only (--set dev)")
    with open(os.path.join(a.corpus, "INDEX.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if a.check:
        return check(a.corpus, rows)
    sets = [a.set] if a.set else ["dev", "measure"]
    for s in sets:
        mine = [r for r in rows if r["set"] == s]
        right = 0
        per_cat = defaultdict(Counter)
        healthy = Counter()
        confident = Counter()
        led = defaultdict(Counter)
        for r in mine:
            path = os.path.join(a.corpus, s, r["file"])
            got, conf, err, rule = diagnose(a.binary, [path])
            if rule:
                led[rule]["led"] += 1
                led[rule]["right"] += got == r["expected"]
            ok = got == r["expected"]
            right += ok
            per_cat[r["expected"]]["n"] += 1
            per_cat[r["expected"]]["right"] += ok
            if r["expected"] == "healthy":
                healthy["n"] += 1
                healthy["right"] += ok
            if conf >= 0.8:
                confident["n"] += 1
                confident["right"] += ok
            if a.misses and not ok:
                print(f"{s} miss {r['file']}: expected {r['expected']}, got {got} {conf:.2f}"
                      + (f" ({err[0]})" if err else ""))
        print(f"{s} logs {len(mine)}")
        print(f"{s} top cause right {pct(right, len(mine))}")
        print(f"{s} healthy called healthy {pct(healthy['right'], healthy['n'])}")
        print(f"{s} confidence >= 0.8 right {pct(confident['right'], confident['n'])}")
        jobs = defaultdict(list)
        for r in mine:
            if r["job"] != "-":
                jobs[r["job"]].append(r)
        jr = 0
        for j, members in sorted(jobs.items()):
            first = [m for m in members if m.get("job_first") == "yes"]
            want = first[0]["expected"] if first else members[0]["expected"]
            got, _, _, _ = diagnose(a.binary, [os.path.join(a.corpus, s, m["file"]) for m in members])
            jr += got == want
            if a.misses and got != want:
                print(f"{s} miss job {j}: expected {want}, got {got}")
        print(f"{s} multi-log jobs right {pct(jr, len(jobs))}")
        for c in sorted(per_cat):
            print(f"{s} category {c} {pct(per_cat[c]['right'], per_cat[c]['n'])}")
        if a.rules:
            # The calibration table of src/diag/calibration.cc, one row per rule that led.
            for rule in sorted(led):
                print(f'    {{"{rule}", {led[rule]["led"]}, {led[rule]["right"]}}},')
    return 0


if __name__ == "__main__":
    sys.exit(main())
