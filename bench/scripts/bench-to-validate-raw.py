#!/usr/bin/env python3
"""A `dashc bench` JSON as a `dashc validate` raw file, so that `validate --from-raw` can set the model's predictions
beside a bench's measurements (the deterministic build's main-kernel median per configuration and schedule).

Usage: python3 bench/scripts/bench-to-validate-raw.py BENCH_JSON > validate-raw.json
The bench must record its launch (`launch`, since commit f8fc613). No traced Gantt runs: the report draws none.
"""
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bench = json.load(open(sys.argv[1]))
    if "launch" not in bench:
        sys.exit("this bench JSON does not record its launch (bench before commit f8fc613)")
    device = bench["device"]
    rows = []
    for c in bench["configs"]:
        for r in c["results"]:
            det = r["deterministic"]
            rows.append({
                "mask": c["mask"], "head_dim": c["head_dim"], "heads": c["heads"], "seqlen": c["seqlen"],
                "batch": c["batch"], "schedule": r["schedule"], "status": det["status"],
                "main_ms": det["time_ms"]["main_median"], "total_ms": det["time_ms"]["total_median"],
            })
    raw = {
        "format": "dashc-validation-raw", "schema_version": bench["schema_version"],
        "command": bench["command"] + "  [converted from the bench JSON by bench/scripts/bench-to-validate-raw.py]",
        "tool": "dashc bench", "date": bench["date"], "commit": bench["commit"], "device": device["name"],
        "compute_cap": device["compute_cap"], "driver": device["driver"], "arch": bench["arch"],
        "launch": bench["launch"], "rows": rows, "gantt": [],
    }
    json.dump(raw, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
