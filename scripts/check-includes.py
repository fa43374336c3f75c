#!/usr/bin/env python3
"""Fails when a module includes a module above it (the table in DESIGN.md).

Each src/<module>/ file may include only headers of the modules listed for it below (and its
own). `topo` may include `core`; `cost` may include topo and core; and so on. `slurm` (toposched
beside Slurm: scontrol readers, held-job placement, rank-local exec setup) sits beside `store`:
it may include core, topo, cost, job and sched; only `cli` includes it. `diag` (diagnosis of
interrupted jobs from their logs) sits beside the scheduler: core, topo, cost, job; `api` may
include it (DESIGN.md: api may depend on every module above it but sim), to classify a job's
exit report and its interruptions in the daemon.
"""
import os
import re
import sys

ALLOWED = {
    "core": set(),
    "topo": {"core"},
    "cost": {"topo", "core"},
    "job": {"core", "topo"},
    "sched": {"core", "topo", "cost", "job"},
    "slurm": {"core", "topo", "cost", "job", "sched"},
    "diag": {"core", "topo", "cost", "job"},
    "store": {"core", "job"},
    "api": {"core", "topo", "cost", "job", "sched", "store", "diag"},
    "sim": {"core", "topo", "cost", "job", "sched", "store"},
    "cli": {"core", "topo", "cost", "job", "sched", "store", "api", "sim", "slurm", "diag"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src")
    errors = []
    for module in sorted(os.listdir(root)):
        mdir = os.path.join(root, module)
        if not os.path.isdir(mdir):
            continue
        if module not in ALLOWED:
            errors.append(f"src/{module}: module not in the dependency table (scripts/check-includes.py)")
            continue
        for dirpath, _, files in os.walk(mdir):
            for f in files:
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1).split("/")[0]
                        if target == module or target not in ALLOWED:
                            continue
                        if target not in ALLOWED[module]:
                            rel = os.path.relpath(path, os.path.join(root, ".."))
                            errors.append(f"{rel}:{lineno}: module '{module}' must not include "
                                          f"'{m.group(1)}' (allowed: {sorted(ALLOWED[module]) or 'none'})")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print("include direction: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
