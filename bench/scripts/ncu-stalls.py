#!/usr/bin/env python3
"""Where a kernel's warps wait, from the pages that bench/scripts/ncu-source-run.sh exports (run 148).

Usage:
  python3 ncu-stalls.py reasons LABEL=RAW.csv.gz:KERNEL [LABEL=RAW.csv.gz:KERNEL ...]
      Stall samples by reason (smsp__pcsamp_warps_issue_stalled_*), one column per launch, and a few totals
      (cycles, instructions, tensor-pipe activity). KERNEL is a substring of the kernel's name: the raw page of an
      FA4 run also holds its pre- and postprocess kernels (FA4's main kernel: BackwardSm90; dashc's:
      bwd_main_kernel). The first launch whose name matches is taken.
  python3 ncu-stalls.py top SOURCE.csv.gz KERNEL [N]
      The N instructions (default 40) with the most stall samples, with their share of the launch's samples, how
      often they ran and their three largest stall reasons, by SASS index (the order of the source page).
  python3 ncu-stalls.py dump SOURCE.csv.gz KERNEL
      Every SASS instruction with its samples, executions and two largest stall reasons.

The source page lists the stall columns Nsight Compute names stall_*; the warpgroup-arrive reason of `wgmma`
issue has no column there, so an HGMMA's samples can exceed the sum of its listed reasons.
"""
import csv
import gzip
import io
import sys


def rows_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return list(csv.reader(io.StringIO(f.read())))


def raw_launch(path, kernel):
    """The raw page's metrics of the first launch whose kernel name contains `kernel`."""
    rows = rows_of(path)
    header_at = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    header = rows[header_at]
    for r in rows[header_at + 2:]:  # the line after the header holds the units
        d = dict(zip(header, r))
        if kernel in d.get("Kernel Name", ""):
            return d
    sys.exit(f"{path}: no launch of a kernel named like {kernel!r}")


def number(text):
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return float("nan")


def reasons(specs):
    launches = {}
    for spec in specs:
        label, rest = spec.split("=", 1)
        path, kernel = rest.rsplit(":", 1)
        launches[label] = raw_launch(path, kernel)
    prefix = "smsp__pcsamp_warps_issue_stalled_"
    keys = sorted({k for d in launches.values() for k in d if k.startswith(prefix) and not k.endswith("not_issued")})
    totals = {label: sum(number(d.get(k, "0")) for k in keys) for label, d in launches.items()}
    print("| reason | " + " | ".join(launches) + " |")
    print("|---|" + "---|" * len(launches))
    for k in keys:
        values = [number(d.get(k, "nan")) for d in launches.values()]
        if max(values) < 0.005 * max(totals.values()):
            continue
        cells = [f"{v:.0f} ({100 * v / totals[label]:.1f}%)" for v, label in zip(values, launches)]
        print(f"| {k[len(prefix):]} | " + " | ".join(cells) + " |")
    print("| all stall samples | " + " | ".join(f"{totals[label]:.0f}" for label in launches) + " |")
    for metric, name in [
        ("sm__cycles_elapsed.max", "elapsed cycles (max over SMs)"),
        ("gpu__time_duration.sum", "duration"),
        ("smsp__inst_executed.sum", "instructions"),
        ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe active, %"),
    ]:
        print(f"| {name} | " + " | ".join(d.get(metric, "-") for d in launches.values()) + " |")


def source_rows(path, kernel):
    """(index, SASS, samples, executions, {stall reason: samples}) of the kernel's source page."""
    blocks, current = [], None
    for r in rows_of(path):
        if r and r[0] == "Kernel Name":
            current = {"name": r[1] if len(r) > 1 else "", "rows": []}
            blocks.append(current)
        elif r and r[0] == "Address" and current is not None:
            current["header"] = r
        elif r and current is not None and "header" in current:
            current["rows"].append(r)
    if not blocks:  # a page of one kernel has no "Kernel Name" line of its own
        rows = rows_of(path)
        blocks = [{"name": kernel, "header": rows[0], "rows": rows[1:]}]
    block = next((b for b in blocks if kernel in b["name"]), None)
    if block is None:
        sys.exit(f"{path}: no kernel named like {kernel!r}")
    at = {k: i for i, k in enumerate(block["header"])}
    stalls = [k for k in block["header"] if k.startswith("stall_") and "Not Issued" not in k]
    out = []
    for n, r in enumerate(block["rows"]):
        count = lambda k: int(number(r[at[k]])) if r[at[k]] not in ("", "-") else 0
        out.append((n, r[at["Source"]].strip(), count("Warp Stall Sampling (All Samples)"),
                    count("Instructions Executed"), {k[len("stall_"):]: count(k) for k in stalls}))
    return out


def top(path, kernel, n):
    rows = source_rows(path, kernel)
    total = sum(r[2] for r in rows)
    print(f"{len(rows)} instructions, {total} stall samples")
    for index, sass, samples, executed, stalls in sorted(rows, key=lambda r: -r[2])[:n]:
        largest = sorted(stalls.items(), key=lambda kv: -kv[1])[:3]
        reasons_text = " ".join(f"{k}={v}" for k, v in largest if v)
        print(f"{index:5d} {100 * samples / max(total, 1):5.1f}% ran {executed:9d}  {sass[:60]:60s} {reasons_text}")


def dump(path, kernel):
    for index, sass, samples, executed, stalls in source_rows(path, kernel):
        largest = sorted(stalls.items(), key=lambda kv: -kv[1])[:2]
        reasons_text = " ".join(f"{k}={v}" for k, v in largest if v)
        print(f"{index:5d} {samples:6d} {executed:10d} {sass[:70]:70s} {reasons_text}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "reasons":
        reasons(sys.argv[2:])
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "top":
        top(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 40)
    elif len(sys.argv) == 4 and sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
