#!/usr/bin/env python3
"""Per-row table of an ab-run.sh result (the tgz it wrote, or its unpacked results folder): for every arm against
base, the whole backward and the main kernel by the mean over rounds of each run's median, and the main kernel by
the mean over rounds of each run's fastest repetition (the rested state; bench/NOTES.md runs 138-142 on why the
medians of long series drift with the power limit). Markdown on stdout.
Usage: python3 bench/scripts/summarize-ab.py RESULT.tgz|RESULTS_DIR"""
import collections
import glob
import json
import os
import statistics
import sys
import tarfile
import tempfile


def load(path):
    """Timing results by row and arm: lists of the harness's JSON objects (status ok only)."""
    if os.path.isdir(path):
        root = path
    else:
        root = tempfile.mkdtemp()
        with tarfile.open(path) as t:
            t.extractall(root, filter="data")
        root = os.path.join(root, "results")
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in glob.glob(os.path.join(root, "time-*.json")):
        rest = os.path.basename(f)[len("time-"):-len(".json")].split("-", 1)[1]
        row, arm = rest.rsplit("-", 1)
        try:
            r = json.load(open(f))
        except (OSError, ValueError):
            continue
        if r.get("status") == "ok":
            runs[row][arm].append(r)
    sides = open(os.path.join(root, "sides.txt")).read().strip().replace("\n", "; ")
    return runs, sides


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    runs, sides = load(sys.argv[1])
    if not runs:
        sys.exit(f"no timing results in {sys.argv[1]}")
    arms = [a for a in ("new", "flags", "alt") if any(a in v for v in runs.values())]
    print(f"Sides: {sides}\n")
    head = "| row | rounds | base ms (whole) |"
    rule = "|---|---|---|"
    for a in arms:
        head += f" {a}/base whole | {a}/base main, medians | {a}/base main, fastest |"
        rule += "---|---|---|"
    print(head)
    print(rule)
    wins = collections.Counter()
    for row in sorted(runs):
        v = runs[row]
        if "base" not in v:
            continue
        whole = {a: statistics.mean(r["time_ms"]["total_median"] for r in rs) for a, rs in v.items()}
        main_med = {a: statistics.mean(r["time_ms"]["main_median"] for r in rs) for a, rs in v.items()}
        main_min = {a: statistics.mean(r["time_ms"]["main_min"] for r in rs) for a, rs in v.items()}
        line = f"| {row} | {len(v['base'])} | {whole['base']:.3f} |"
        for a in arms:
            if a not in v:
                line += " - | - | - |"
                continue
            ratios = [d[a] / d["base"] - 1 for d in (whole, main_med, main_min)]
            wins[a] += ratios[2] < 0
            line += "".join(f" {x:+.2%} |" for x in ratios)
        print(line)
    n = sum(1 for v in runs.values() if "base" in v)
    print("\n" + "; ".join(f"{a}: main kernel's fastest repetition faster than base on {wins[a]} of {n} rows" for a in arms))


main()
