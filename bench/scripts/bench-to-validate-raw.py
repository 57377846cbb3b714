#!/usr/bin/env python3
"""A `dashc bench` JSON as a `dashc validate` raw file, so that `validate --from-raw` can set the model's predictions
beside a bench's measurements (the deterministic build's main-kernel median per configuration and schedule; with
`bench --rounds`, the median of the rounds' medians).

Usage: python3 bench/scripts/bench-to-validate-raw.py BENCH_JSON > validate-raw.json
The bench must record its launch (`launch`, since commit f8fc613). No traced Gantt runs: the report draws none.
"""
import json
import statistics
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
        # One row per schedule: with `bench --rounds N` the median over the rounds, failed if any round failed.
        per_schedule = {}
        for r in c["results"]:
            per_schedule.setdefault(r["schedule"], []).append(r["deterministic"])
        for schedule, rounds in per_schedule.items():
            failed = [d["status"] for d in rounds if d["status"] != "ok"]
            main = [d["time_ms"]["main_median"] for d in rounds]
            total = [d["time_ms"]["total_median"] for d in rounds]
            ok = not failed and None not in main and None not in total
            row = {
                "mask": c["mask"], "head_dim": c["head_dim"], "heads": c["heads"], "seqlen": c["seqlen"],
                "batch": c["batch"], "schedule": schedule, "status": failed[0] if failed else "ok",
                "main_ms": statistics.median(main) if ok else None,
                "total_ms": statistics.median(total) if ok else None,
            }
            if len(rounds) > 1:
                row["main_ms_rounds"] = main
            rows.append(row)
    raw = {
        "format": "dashc-validation-raw", "schema_version": bench["schema_version"],
        "command": bench["command"] + "  [converted from the bench JSON by bench/scripts/bench-to-validate-raw.py]",
        "tool": "dashc bench", "date": bench["date"], "commit": bench["commit"], "device": device["name"],
        "compute_cap": device["compute_cap"], "driver": device["driver"], "arch": bench["arch"],
        "launch": bench["launch"], "rows": rows, "gantt": [],
    }
    if bench.get("rounds", 1) > 1:
        raw["rounds"] = bench["rounds"]
    json.dump(raw, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
