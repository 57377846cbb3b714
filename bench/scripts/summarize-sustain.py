#!/usr/bin/env python3
"""Table of bench/scripts/sustain-run.sh: per row and provider, the whole backward's TFLOPS over its first five
timed steps after a rest ("rested") and over the last third of the series ("sustained"), with the board power, SM
clock and the share of readings with a power or thermal limit over that last third, and the board's energy per
backward over the whole series (NVML's counter; "-" where the file has none); then dashc against FA4 in each state
and by energy. FA4's providers ending in -gapless ran with steps queued ahead of the GPU (sustain_fa4.py).
Usage: python3 bench/scripts/summarize-sustain.py DIR (the unpacked sustain.tgz's sustain/ folder)."""
import glob
import json
import statistics as st
import sys


def series(d):
    """(whole-backward ms per step, NVML readings [mhz, watts, limited] per step) of either file kind."""
    if "provider" in d:  # sustain_fa4.py
        reps = d["total_reps"]
        return [r[0] for r in reps], [r[1:] for r in reps]
    return d["total_reps"], [r[1:] for r in d.get("main_reps", [])]


def flops_of(d):
    if "provider" in d:
        return d["flops"]
    s = d["shape"]
    f = 4.0 * s["batch"] * s["heads"] * s["seqlen_q"] * s["seqlen_k"] * s["head_dim"] * 2.5
    return f * (0.5 if s["mask"] == "causal" else 1.0)


rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    name = f.split("/")[-1][:-5]
    hd, mask, seqlen, provider = name.split("-", 3)
    try:
        d = json.load(open(f))
    except (OSError, ValueError):
        print(f"{name}: no result")
        continue
    if d.get("status", "ok") != "ok":
        print(f"{name}: status {d['status']}")
        continue
    ms, readings = series(d)
    if len(ms) < 6:
        print(f"{name}: {len(ms)} steps only")
        continue
    tail = ms[len(ms) * 2 // 3:]
    tail_readings = [r for r in readings[len(readings) * 2 // 3:] if r[0] is not None]
    flops = flops_of(d)
    rows.setdefault((int(hd), mask, int(seqlen)), {})[provider] = dict(
        rested=flops / (st.median(ms[:5]) * 1e-3) / 1e12,
        sustained=flops / (st.median(tail) * 1e-3) / 1e12,
        steps=len(ms),
        watts=st.median(watts) if (watts := [r[1] for r in tail_readings if r[1] is not None]) else None,
        mhz=st.median([r[0] for r in tail_readings]) if tail_readings else None,
        limited=(sum(1 for r in tail_readings if r[2]) / len(tail_readings)) if tail_readings else None,
        joules=(e["joules"] / e["backwards"]) if (e := d.get("energy")) and e.get("backwards") else None)

order = ["fa4-det", "fa4", "fa4-det-gapless", "fa4-gapless", "dashc-det", "dashc-atomic"]
print("| hd | mask | seqlen | provider | rested TFLOPS | sustained TFLOPS | sustained/rested | W | MHz | limited | steps "
      "| J per backward |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(rows):
    for p in order:
        r = rows[key].get(p)
        if not r:
            continue
        w = f"{r['watts']:.0f}" if r["watts"] is not None else "-"
        mhz = f"{r['mhz']:.0f}" if r["mhz"] is not None else "-"
        lim = f"{100 * r['limited']:.0f}%" if r["limited"] is not None else "-"
        joules = f"{r['joules']:.3f}" if r["joules"] is not None else "-"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {p} | {r['rested']:.1f} | {r['sustained']:.1f} | "
              f"{100 * (r['sustained'] / r['rested'] - 1):+.1f}% | {w} | {mhz} | {lim} | {r['steps']} | {joules} |")
print()
print("dashc deterministic against each FA4 provider (throughput; by energy: FA4's joules per backward over dashc's, "
      "above 0 where dashc takes less):")
print()
print("| hd | mask | seqlen | against | rested | sustained | by energy |")
print("|---|---|---|---|---|---|---|")
for key in sorted(rows):
    r = rows[key]
    if "dashc-det" not in r:
        continue
    dashc = r["dashc-det"]
    for ref in order[:4]:
        if ref not in r:
            continue
        cells = [f"{100 * (dashc[phase] / r[ref][phase] - 1):+.1f}%" for phase in ("rested", "sustained")]
        both = dashc["joules"] is not None and r[ref]["joules"] is not None
        cells.append(f"{100 * (r[ref]['joules'] / dashc['joules'] - 1):+.1f}%" if both else "-")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {ref} | " + " | ".join(cells) + " |")
