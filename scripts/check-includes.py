#!/usr/bin/env python3
"""Fails when an include runs against the module order (docs/design.md, "Modules").

Two checks. (1) Across modules: each src/<module>/ file may include only headers of the modules
listed for it below (and its own). (2) Inside a module: the files form layers, so no two files
may include each other, directly or through others (a file and its header, x.h and x.cc, count
as one unit). A cycle is printed as the chain of includes that closes it.
"""
import os
import re
import sys

SCHED_FAMILY = ["state", "select", "placement", "plugins", "placer", "sched"]
ALLOWED = {
    "core": set(),
    "topo": {"core"},
    "cost": {"topo", "core"},
    "job": {"core", "topo"},
    # The scheduler family, bottom up: the occupancy state (free GPUs, allocations, link loads),
    # the node-level choice (which GPUs of one node, in which ring order), the placer's shared
    # vocabulary (a placement, its verdict and plan, group shapes), the placer's plugins, the gang
    # placer, the scheduler (queue, passes, events, run times, scripts).
    "state": {"core", "topo", "cost"},
    "select": {"core", "topo", "cost", "state"},
    "placement": {"core", "topo", "cost", "job", "state"},
    "plugins": {"core", "topo", "cost", "job", "state", "select", "placement"},
    "placer": {"core", "topo", "cost", "job", "state", "select", "placement", "plugins"},
    "sched": {"core", "topo", "cost", "job", "state", "select", "placement", "plugins", "placer"},
    # slurm (beside a live Slurm: scontrol readers, held-job placement, rank-local exec setup)
    # sits beside store; only cli includes it. diag (diagnosis of interrupted jobs from their
    # logs) sits beside the scheduler; api includes it to classify a job's exit report.
    "slurm": {"core", "topo", "cost", "job", *SCHED_FAMILY},
    "diag": {"core", "topo", "cost", "job"},
    # deviceplugin (the kubelet device plugin: devices, preferred set, what a container gets,
    # the gRPC service and its registration) sits on the node-level choice; only cli includes it.
    "deviceplugin": {"core", "topo", "cost", "state", "select"},
    "store": {"core", "job"},
    "api": {"core", "topo", "cost", "job", *SCHED_FAMILY, "store", "diag"},
    "sim": {"core", "topo", "cost", "job", *SCHED_FAMILY, "store"},
    "cli": {"core", "topo", "cost", "job", *SCHED_FAMILY, "store", "api", "sim", "slurm", "diag",
            "deviceplugin"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def cycle_errors(module, edges, root):
    """One error per include cycle among a module's units (depth-first search, each cycle once)."""
    errors, state, stack = [], {}, []

    def visit(u):
        state[u] = "open"
        stack.append(u)
        for v in sorted(edges.get(u, {})):
            if state.get(v) == "open":
                cycle = stack[stack.index(v):] + [v]
                hops = []
                for a, b in zip(cycle, cycle[1:]):
                    path, lineno = edges[a][b]
                    hops.append(f"{os.path.relpath(path, os.path.join(root, '..'))}:{lineno} "
                                f"includes {b}")
                errors.append(f"src/{module}: include cycle inside the module: " + "; ".join(hops))
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = "done"

    for u in sorted(edges):
        if u not in state:
            visit(u)
    return errors


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
        edges = {}  # unit -> {unit it includes: (file, line) of the first such include}
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
                        if target == module:
                            unit = os.path.splitext(os.path.relpath(path, root))[0]
                            dep = os.path.splitext(m.group(1))[0]
                            if dep != unit:
                                edges.setdefault(unit, {}).setdefault(dep, (path, lineno))
                            continue
                        if target not in ALLOWED:
                            continue
                        if target not in ALLOWED[module]:
                            rel = os.path.relpath(path, os.path.join(root, ".."))
                            errors.append(f"{rel}:{lineno}: module '{module}' must not include "
                                          f"'{m.group(1)}' (allowed: {sorted(ALLOWED[module]) or 'none'})")
        errors.extend(cycle_errors(module, edges, root))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print("include direction: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
