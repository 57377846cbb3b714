#!/usr/bin/env python3
"""The model's signed error on a `dashc bench` run, offline: for every deterministic result in a results folder's
raw.tgz (bench/scripts/fa4-interleaved-run.sh's layout: raw/dashc-round*/bench-*.json), `dashc simulate` predicts
the main kernel's time with the given costs (persistent launch, the result's schedule, --split-tail where its name
ends in +split), and the error against the measured main kernel is summarized per head dim and mask, against the
fastest repetition and against the median. No GPU. A check of how far costs fitted on one kernel (and card) are
from another, not a validation (that is `dashc validate`, with held-out configurations).

Usage: python3 bench/scripts/predict-vs-bench.py COSTS.json RESULTS_DIR [RESULTS_DIR ...]
       (DASHC=path/to/dashc, default target/debug/dashc)
"""
import functools
import json
import os
import statistics
import subprocess
import sys
import tarfile

DASHC = os.environ.get("DASHC", "target/debug/dashc")


# Every round of a folder repeats its configurations and schedules: simulate each once.
@functools.lru_cache(maxsize=None)
def predicted_ms(costs, hd, mask, seqlen, batch, heads, schedule):
    cmd = [DASHC, "simulate", "--seqlen", str(seqlen), "--batch", str(batch), "--heads", str(heads),
           "--head-dim", str(hd), "--mask", mask, "--launch", "persistent",
           "--schedule", schedule.removesuffix("+split"), "--costs", costs, "--json"]
    if schedule.endswith("+split"):
        cmd.append("--split-tail")
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    # With --split-tail, simulate lists the unsplit schedule and then its split: take the one named. (Until
    # fb6928d this took the first result, so a +split result was compared with the unsplit prediction.)
    named = [r for r in out["results"] if r["schedule"] == schedule]
    if len(named) != 1:
        sys.exit(f"dashc simulate gave no single result named {schedule}: {[r['schedule'] for r in out['results']]}")
    return named[0]["makespan"] / 1000.0  # µs -> ms


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    costs = sys.argv[1]
    for folder in sys.argv[2:]:
        errors = {}
        with tarfile.open(os.path.join(folder, "raw.tgz")) as t:
            for m in t.getmembers():
                if not (m.name.startswith("raw/dashc-round") and m.name.endswith(".json")):
                    continue
                bench = json.load(t.extractfile(m))
                for c in bench["configs"]:
                    for r in c["results"]:
                        det = r["deterministic"]
                        if det.get("status") != "ok":
                            continue
                        p = predicted_ms(costs, c["head_dim"], c["mask"], c["seqlen"], c["batch"], c["heads"],
                                         r["schedule"])
                        t_ms = det["time_ms"]
                        errors.setdefault((c["head_dim"], c["mask"]), []).append(
                            ((p / t_ms["main_min"] - 1) * 100, (p / t_ms["main_median"] - 1) * 100))
        print(folder)
        for (hd, mask), v in sorted(errors.items()):
            fast = [a for a, _ in v]
            med = [b for _, b in v]
            print(f"  hd{hd} {mask}: {len(v)} results; predicted/fastest - 1: median {statistics.median(fast):+.1f}%"
                  f" ({min(fast):+.1f}% to {max(fast):+.1f}%); predicted/median - 1: median"
                  f" {statistics.median(med):+.1f}% ({min(med):+.1f}% to {max(med):+.1f}%)")


if __name__ == "__main__":
    main()
