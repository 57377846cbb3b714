#!/usr/bin/env python3
"""Summary table of a `dashc bench` JSON beside the anchors (shared/reference/anchors.md).

Usage: python3 bench/scripts/summarize-bench.py BENCH_JSON ANCHORS_MD > summary-table.md
Per configuration: the best deterministic schedule (whole-backward TFLOPS), its atomic variant, the cost of
determinism (1 - det / atomic; negative when the deterministic build is faster) and the anchors.
"""
import json
import re
import sys


def anchors(path):
    rows = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].isdigit():
            num = lambda s: float(re.match(r"[\d.]+", s).group())
            # The first table is the one measured on this project's GPU; later tables (the paper's) keep out.
            rows.setdefault((int(cells[0]), cells[1], int(cells[2])), (num(cells[5]), num(cells[4]), num(cells[7])))
    return rows


def main():
    bench, anchor_rows = json.load(open(sys.argv[1])), anchors(sys.argv[2])
    print("| hd | mask | seqlen | best det schedule | det TFLOPS | its atomic | det cost | FA4 det | FA4 | FA2 "
          "| vs FA4 det | vs FA4 | vs FA2 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    configs = sorted(bench["configs"], key=lambda c: (c["mask"] != "full", c["head_dim"], c["seqlen"]))
    for c in configs:
        ok = [r for r in c["results"] if r.get("deterministic", {}).get("status") == "ok"]
        best = max(ok, key=lambda r: r["deterministic"]["tflops"]["total"])
        det = best["deterministic"]["tflops"]["total"]
        atomic = best["nondeterministic"]["tflops"]["total"]
        fa4d, fa4, fa2 = anchor_rows[(c["head_dim"], c["mask"], c["seqlen"])]
        rel = lambda a: f"{(det / a - 1) * 100:+.0f}%"
        print(f"| {c['head_dim']} | {c['mask']} | {c['seqlen']} | {best['schedule']} | {det:.1f} | {atomic:.1f} "
              f"| {(1 - det / atomic) * 100:.1f}% | {fa4d:g} | {fa4:g} | {fa2:g} | {rel(fa4d)} | {rel(fa4)} | {rel(fa2)} |")


if __name__ == "__main__":
    main()
