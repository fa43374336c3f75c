#!/usr/bin/env python3
"""Re-runs of some policies beside earlier all-policy runs: for every run directory NAME under
NEW (a report.json of `toposched simulate`), writes OUT/NAME/report.json: BASE/NAME's report with
NEW/NAME's policies put in place of BASE/NAME's rows of the same names (an ablation or
checkpoint run with no BASE counterpart is copied as it is). Every merged report says what it
was merged from ("merged_from"). For a change that can only move the re-run policies: the
policies not re-run must take no part in it (say why where the tables are reported).
Usage: merge-runs.py BASE NEW OUT     e.g. merge-runs.py eval/llm2 eval/llm3 eval/llm3m"""
import json
import os
import sys


def main(base, new, out):
    for name in sorted(os.listdir(new)):
        src = os.path.join(new, name, "report.json")
        if not os.path.isfile(src):
            continue
        fresh = json.load(open(src))
        old_path = os.path.join(base, name, "report.json")
        if os.path.isfile(old_path):
            merged = json.load(open(old_path))
            if merged.get("trace", {}).get("file") != fresh.get("trace", {}).get("file") or \
                    merged.get("seed") != fresh.get("seed"):
                sys.exit(f"{name}: {base} and {new} ran different traces or seeds")
            merged["policies"].update(fresh["policies"])
            merged["merged_from"] = {"base": old_path, "replaced": sorted(fresh["policies"]),
                                     "from": src}
        else:
            merged = fresh
        os.makedirs(os.path.join(out, name), exist_ok=True)
        with open(os.path.join(out, name, "report.json"), "w") as f:
            json.dump(merged, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
