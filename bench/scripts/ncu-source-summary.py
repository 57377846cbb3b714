#!/usr/bin/env python3
"""Summaries of an Nsight Compute source page (`ncu -i REP --page source --csv --print-source sass`, gzipped).

Usage:
  ncu-source-summary.py per-visit FILE KERNEL_REGEX EXECS_PER_VISIT
      Instructions per consumer warp and visit, by opcode: every SASS instruction executed at least a fifth as
      often as EXECS_PER_VISIT (visits x consumer warps per CTA, e.g. 264192 x 8 for hd128 causal 16384 with
      64 x 128 tiles) counts with its executions divided by EXECS_PER_VISIT.
  ncu-source-summary.py phases FILE KERNEL_REGEX EXECS_PER_VISIT
      Warp-stall samples between waypoints (the last wgmma of a batch, wgmma waits, named barriers, mbarrier
      waits), as a share of all samples, with the instructions that hold at least 0.4% and their main reason.
  ncu-source-summary.py range FILE KERNEL_REGEX EXECS_PER_VISIT FIRST LAST
      Instructions FIRST..LAST (row numbers as `phases` prints them): stall share, main reason, executions per
      visit, SASS.

The page holds one table per kernel launch profiled; the first launch whose name matches KERNEL_REGEX is read.
Written for bench/results/sm90-dev-2026-11-23-run66 (dashc's sm90 loop against FlashAttention-4).
"""
import csv
import collections
import gzip
import re
import sys

STALL_ALL = "Warp Stall Sampling (All Samples)"


def load(path, kernel_regex):
    rows, header, matching = [], None, False
    for line in gzip.open(path, "rt").read().splitlines():
        if line.startswith('"Kernel Name"'):
            if rows:
                break  # the first matching launch only
            matching = re.search(kernel_regex, line) is not None
            header = None
            continue
        if line.startswith('"Address"'):
            header = next(csv.reader([line]))
            continue
        if matching and header:
            fields = next(csv.reader([line]))
            if len(fields) == len(header):
                rows.append(dict(zip(header, fields)))
    if not rows:
        sys.exit(f"no launch of a kernel matching {kernel_regex!r} in {path}")
    return rows


def opcode(source):
    return re.sub(r"^@!?U?P\w+\s+", "", source.strip()).split(" ")[0].split(".")[0]


def main_reason(row):
    reasons = [(int(row[k] or 0), k[len("stall_"):]) for k in row if k.startswith("stall_") and "Not Issued" not in k]
    return max(reasons)[1]


def per_visit(rows, per):
    ops, total = collections.Counter(), 0.0
    for r in rows:
        n = int(r["Instructions Executed"] or 0) / per
        if n > 0.2:
            ops[opcode(r["Source"])] += n
            total += n
    print(f"instructions per consumer warp and visit: {total:.1f}")
    print(" ".join(f"{op}:{n:.0f}" for op, n in ops.most_common()))


def phases(rows, per):
    total = sum(int(r[STALL_ALL] or 0) for r in rows)
    start, share, notes = None, 0, []
    waypoint = re.compile(r"HGMMA.*gsb0|DEPBAR|BAR\.SYNC|BAR\.ARV|SYNCS\.PHASECHK")
    for i, r in enumerate(rows):
        if int(r["Instructions Executed"] or 0) / per < 0.05:
            continue
        samples = int(r[STALL_ALL] or 0)
        start = i if start is None else start
        share += samples
        if samples > 0.004 * total:
            notes.append(f"{opcode(r['Source'])}[{100 * samples / total:.1f} {main_reason(r)}]")
        if waypoint.search(r["Source"]):
            print(f"{start:5d}-{i:5d} {100 * share / total:5.1f}%  " + " | ".join(notes))
            start, share, notes = None, 0, []
    if start is not None:
        print(f"{start:5d}-end   {100 * share / total:5.1f}%  " + " | ".join(notes))


def show_range(rows, per, first, last):
    total = sum(int(r[STALL_ALL] or 0) for r in rows)
    for i in range(first, min(last, len(rows) - 1) + 1):
        r = rows[i]
        samples = int(r[STALL_ALL] or 0)
        execs = int(r["Instructions Executed"] or 0) / per
        print(f"{i:5d} {100 * samples / total:4.1f}% {main_reason(r):14s} {execs:5.2f} {r['Source'].strip()[:80]}")


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] not in ("per-visit", "phases", "range"):
        sys.exit(__doc__)
    command, path, regex, per = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    table = load(path, regex)
    if command == "per-visit":
        per_visit(table, per)
    elif command == "phases":
        phases(table, per)
    else:
        show_range(table, per, int(sys.argv[5]), int(sys.argv[6]))
