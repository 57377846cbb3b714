#!/usr/bin/env python3
"""Summaries of Nsight Compute pages: the source page (`ncu -i REP --page source --csv --print-source sass`,
gzipped) and, for `reasons`, the raw page (`--page raw --csv`, gzipped), as bench/scripts/ncu-source-run.sh
exports them.

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
  ncu-source-summary.py top FILE KERNEL_REGEX [N]
      The N instructions (default 40) with the most stall samples: row number, share of all samples, executions,
      SASS and the three largest reasons. (The source page has no column for the warpgroup-arrive reason of a
      `wgmma` issue: an HGMMA's samples can exceed the sum of its listed reasons.)
  ncu-source-summary.py wavefronts FILE KERNEL_REGEX VISITS
      Shared-memory wavefronts (the source page's "L1 Wavefronts Shared": wgmma operand reads, LDS, STS, STSM) per
      visit of the whole CTA, by instruction kind (the HGMMA shapes kept apart). VISITS: the launch's visits (e.g.
      264192 for hd128 causal 16384 with 64 x 128 tiles). TMA traffic (the loads into shared memory, the bulk
      reduce's read-out) has no per-instruction count here.
  ncu-source-summary.py reasons LABEL=RAW_FILE:KERNEL_REGEX [...]
      Stall samples by reason (smsp__pcsamp_warps_issue_stalled_*) from raw pages, one column per launch, and a
      few totals (cycles, duration, instructions, tensor-pipe activity). FA4's main kernel: BackwardSm90; dashc's:
      bwd_main_kernel (an FA4 page also holds its pre- and postprocess kernels).

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


def load_raw_page(path, kernel_regex):
    """The raw page's metrics of the first launch whose kernel name matches."""
    rows = list(csv.reader(gzip.open(path, "rt").read().splitlines()))
    at = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if at is None:
        sys.exit(f"{path}: not a raw page")
    for fields in rows[at + 2:]:  # the line after the header holds the units
        launch = dict(zip(rows[at], fields))
        if re.search(kernel_regex, launch.get("Kernel Name", "")):
            return launch
    sys.exit(f"no launch of a kernel matching {kernel_regex!r} in {path}")


def mnemonic(source):
    """The instruction with its modifiers, without its predicate: HGMMA.64x64x16.F32.BF16, LDS.64, ..."""
    return re.sub(r"^@!?U?P\w+\s+", "", source.strip()).split(" ")[0]


def opcode(source):
    return mnemonic(source).split(".")[0]


def reasons_of(row):
    """(samples, reason) of every stall reason the source page lists for an instruction, largest first."""
    listed = [(int(row[k] or 0), k[len("stall_"):]) for k in row if k.startswith("stall_") and "Not Issued" not in k]
    return sorted(listed, reverse=True)


def main_reason(row):
    return reasons_of(row)[0][1]


def per_visit(rows, per):
    ops, total = collections.Counter(), 0.0
    for r in rows:
        n = int(r["Instructions Executed"] or 0) / per
        if n > 0.2:
            ops[opcode(r["Source"])] += n
            total += n
    print(f"instructions per consumer warp and visit: {total:.1f}")
    print(" ".join(f"{op}:{n:.0f}" for op, n in ops.most_common()))


def wavefronts(rows, visits):
    kinds, total = collections.Counter(), 0.0
    for r in rows:
        n = float((r.get("L1 Wavefronts Shared") or "0").replace(",", "")) / visits
        if n > 0:
            op = mnemonic(r["Source"])
            kinds[op if op.startswith("HGMMA") else opcode(r["Source"])] += n
            total += n
    print(f"shared-memory wavefronts per visit: {total:.0f}")
    for kind, n in kinds.most_common():
        print(f"  {kind:32s} {n:8.1f}")


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


def top(rows, n):
    total = sum(int(r[STALL_ALL] or 0) for r in rows)
    print(f"{len(rows)} instructions, {total} stall samples")
    ranked = sorted(enumerate(rows), key=lambda ir: -int(ir[1][STALL_ALL] or 0))[:n]
    for i, r in ranked:
        samples = int(r[STALL_ALL] or 0)
        largest = " ".join(f"{reason}={k}" for k, reason in reasons_of(r)[:3] if k)
        print(f"{i:5d} {100 * samples / total:5.1f}% ran {int(r['Instructions Executed'] or 0):9d}  "
              f"{r['Source'].strip()[:60]:60s} {largest}")


def reasons(specs):
    launches = {}
    for spec in specs:
        label, rest = spec.split("=", 1)
        path, regex = rest.rsplit(":", 1)
        launches[label] = load_raw_page(path, regex)
    number = lambda text: float(text.replace(",", "") or "nan")
    prefix = "smsp__pcsamp_warps_issue_stalled_"
    keys = sorted({k for d in launches.values() for k in d if k.startswith(prefix) and not k.endswith("not_issued")})
    totals = {label: sum(number(d.get(k, "0")) for k in keys) for label, d in launches.items()}
    print("| reason | " + " | ".join(launches) + " |")
    print("|---|" + "---|" * len(launches))
    for k in keys:
        values = [number(d.get(k, "nan")) for d in launches.values()]
        if max(values) >= 0.005 * max(totals.values()):
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


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "reasons":
        reasons(sys.argv[2:])
        sys.exit()
    if len(sys.argv) in (4, 5) and sys.argv[1] == "top":
        top(load(sys.argv[2], sys.argv[3]), int(sys.argv[4]) if len(sys.argv) == 5 else 40)
        sys.exit()
    if len(sys.argv) < 5 or sys.argv[1] not in ("per-visit", "phases", "range", "wavefronts"):
        sys.exit(__doc__)
    command, path, regex, per = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    table = load(path, regex)
    if command == "per-visit":
        per_visit(table, per)
    elif command == "wavefronts":
        wavefronts(table, per)
    elif command == "phases":
        phases(table, per)
    else:
        show_range(table, per, int(sys.argv[5]), int(sys.argv[6]))
