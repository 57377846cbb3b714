#!/usr/bin/env python3
"""Summary table of `dashc bench` JSONs beside the anchors (shared/reference/anchors.md).

Usage: python3 bench/scripts/summarize-bench.py BENCH_JSON[,BENCH_JSON...] ANCHORS_MD [FA4_JSON] > summary-table.md
Per configuration: the best deterministic schedule (whole-backward TFLOPS, the mean over the bench's rounds), its
atomic variant, the cost of
determinism (1 - det / atomic; negative when the deterministic build is faster) and the anchors. Several bench JSONs
(comma-separated: one run per mask, say) make one table. FA4_JSON, the anchors.json that shared/bench/anchors.py writes
(providers fa4-det and fa4), adds FlashAttention-4 as measured beside the bench, on the same day and GPU model.
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


def fa4_measured(path):
    """(hd, mask, seqlen) -> {provider: TFLOPS} from anchors.py's JSON (rows with an error are left out)."""
    rows = {}
    for r in json.load(open(path)):
        if "tflops" in r:
            key = (r["hdim"], "causal" if r["causal"] else "full", r["seqlen"])
            rows.setdefault(key, {})[r["provider"]] = r["tflops"]
    return rows


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    configs = [c for path in sys.argv[1].split(",") for c in json.load(open(path))["configs"]]
    anchor_rows = anchors(sys.argv[2])
    measured = fa4_measured(sys.argv[3]) if len(sys.argv) == 4 else None
    head = "| hd | mask | seqlen | best det schedule | det TFLOPS | its atomic | det cost | FA4 det | FA4 | FA2 "
    if measured is None:
        print(head + "| vs FA4 det | vs FA4 | vs FA2 |")
        print("|---" * 13 + "|")
    else:
        print(head + "| FA4 det, same day | FA4, same day | vs FA4 det | vs FA4 | vs FA2 "
              "| vs FA4 det, same day | vs FA4, same day |")
        print("|---" * 17 + "|")
    configs.sort(key=lambda c: (c["mask"] != "full", c["head_dim"], c["seqlen"]))
    for c in configs:
        # Per schedule, the mean over the rounds (`bench --rounds`; one round before it existed); a schedule
        # that failed in any round is left out.
        per_schedule = {}
        for r in c["results"]:
            per_schedule.setdefault(r["schedule"], []).append(r)
        means = {}
        for name, rounds in per_schedule.items():
            if all(r.get("deterministic", {}).get("status") == "ok" for r in rounds):
                def mean(kind):
                    values = [(r.get(kind) or {}).get("tflops", {}).get("total") for r in rounds]
                    ok = all((r.get(kind) or {}).get("status") == "ok" for r in rounds) and None not in values
                    return sum(values) / len(values) if ok else None
                means[name] = (mean("deterministic"), mean("nondeterministic"))
        best = max(means, key=lambda name: means[name][0])
        det, atomic = means[best]
        key = (c["head_dim"], c["mask"], c["seqlen"])
        fa4d, fa4, fa2 = anchor_rows[key]
        rel = lambda a: f"{(det / a - 1) * 100:+.0f}%" if a else "–"
        atomic_cells = f"{atomic:.1f} | {(1 - det / atomic) * 100:.1f}%" if atomic else "– | –"
        row = (f"| {c['head_dim']} | {c['mask']} | {c['seqlen']} | {best} | {det:.1f} | {atomic_cells} "
               f"| {fa4d:g} | {fa4:g} | {fa2:g} ")
        if measured is None:
            print(row + f"| {rel(fa4d)} | {rel(fa4)} | {rel(fa2)} |")
        else:
            m = measured.get(key, {})
            md, mn = m.get("fa4-det"), m.get("fa4")
            cell = lambda v: f"{v:.1f}" if v else "–"
            print(row + f"| {cell(md)} | {cell(mn)} | {rel(fa4d)} | {rel(fa4)} | {rel(fa2)} | {rel(md)} | {rel(mn)} |")


if __name__ == "__main__":
    main()
