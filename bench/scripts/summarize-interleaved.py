#!/usr/bin/env python3
"""Table of an interleaved FA4/dashc run (bench/scripts/fa4-interleaved-run.sh): per row, the best deterministic
and atomic schedule by the mean over rounds of the whole backward's TFLOPS (among the schedules measured in the
most rounds of that row), every round's value, and FA4's. Where FA4 was also timed gapless (fa4_rows.py: providers
fa4-det-gapless and fa4-gapless, the host two steps ahead of the GPU), a second pair of tables compares dashc with
those, by the medians and by the fastest steps.
Usage: python3 bench/scripts/summarize-interleaved.py RAW_DIR (the unpacked raw.tgz's raw/ folder; the run script
calls it on its own raw/ at the end). Rows that dashc did not bench are left out of the table."""
import glob, json, statistics as st, sys

raw = sys.argv[1]
runs = {}  # (hd, mask, seqlen) -> name -> [TFLOPS per round]
fastest = {}  # the same, dashc's fastest repetitions (and FA4's, where its file keeps them: fa4_rows.py)
for f in sorted(glob.glob(raw + '/fa4-round*/anchors.json')):
    d = json.load(open(f))
    for r in (d if isinstance(d, list) else d.get('results', [])):
        if r.get('tflops'):
            key = (r['hdim'], 'causal' if r['causal'] else 'full', r['seqlen'])
            runs.setdefault(key, {}).setdefault(r['provider'], []).append(r['tflops'])
            if r.get('ms_min'):
                fastest.setdefault(key, {}).setdefault(r['provider'], []).append(r['tflops'] * r['ms'] / r['ms_min'])
for f in sorted(glob.glob(raw + '/dashc-round*/bench-*.json')):
    for c in json.load(open(f))['configs']:
        key = (c['head_dim'], c['mask'], c['seqlen'])
        for r in c['results']:
            for kind, name in (('deterministic', 'det'), ('nondeterministic', 'atomic')):
                x = r[kind]
                ok = x['status'] == 'ok' and x['poison_ok'] and (kind != 'deterministic' or x['repeatable'])
                if not ok:
                    sys.exit(f'not ok: {key} {r["schedule"]} {kind}')
                runs.setdefault(key, {}).setdefault(f'{name} {r["schedule"]}', []).append(x['tflops']['total'])
                # The fastest repetition, as TFLOPS (the work is the same): the rested state, which the median
                # mixes with the power-limited one on the long rows. FA4's harness keeps only its median.
                t = x['time_ms']
                if t.get('total_min'):
                    fastest.setdefault(key, {}).setdefault(f'{name} {r["schedule"]}', []).append(
                        x['tflops']['total'] * t['total_median'] / t['total_min'])


def best(entries, prefix):
    # Among the schedules measured in the most rounds only: a schedule timed once would otherwise win by the
    # luck of one median against others averaged over several rounds.
    cands = {k[len(prefix):]: v for k, v in entries.items() if k.startswith(prefix)}
    most = max(len(v) for v in cands.values())
    cands = {k: v for k, v in cands.items() if len(v) == most}
    name = max(cands, key=lambda k: st.mean(cands[k]))
    return name, cands[name]


def fmt(v):
    return f'{st.mean(v):.1f} ({" / ".join(f"{x:.1f}" for x in v)})'


def pct(a, b):
    return f'{100 * (st.mean(a) / st.mean(b) - 1):+.1f}%'


print('| hd | mask | seqlen | best det schedule | det TFLOPS, mean (rounds) | best atomic | atomic TFLOPS | '
      'det cost | FA4 det | FA4 | vs FA4 det | vs FA4 |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|')
for key in sorted(runs, key=lambda k: (k[1] != 'full', k[0], k[2])):
    e = runs[key]
    if not any(k.startswith('det ') for k in e):
        continue  # FA4 times every row; a call of the run script may have benched only some (MASKS)
    dn, dv = best(e, 'det ')
    an, av = best(e, 'atomic ')
    fd, fn = e.get('fa4-det'), e.get('fa4')
    cost = f'{100 * (1 - st.mean(dv) / st.mean(av)):.1f}%'
    print(f'| {key[0]} | {key[1]} | {key[2]} | {dn} | {fmt(dv)} | {an} | {fmt(av)} | {cost} | '
          f'{fmt(fd) if fd else "-"} | {fmt(fn) if fn else "-"} | {pct(dv, fd) if fd else "-"} | '
          f'{pct(dv, fn) if fn else "-"} |')
print()
print('Every schedule (mean over rounds):')
print()
for key in sorted(runs, key=lambda k: (k[1] != 'full', k[0], k[2])):
    e = runs[key]
    print(f'- hd{key[0]} {key[1]} {key[2]}: ' + ', '.join(f'{k} {st.mean(v):.1f}' for k, v in sorted(e.items())))

gapless = [k for k in sorted(runs, key=lambda k: (k[1] != 'full', k[0], k[2]))
           if 'fa4-gapless' in runs[k] and any(n.startswith('det ') for n in runs[k])]
if gapless:
    for title, table in (('medians', runs), ('fastest steps', fastest)):
        print()
        print(f'dashc deterministic against FA4 timed gapless, by the {title} (TFLOPS of the whole backward; FA4 '
              'timed as anchors.py times it beside):')
        print()
        print('| hd | mask | seqlen | dashc det | FA4 det gapless | FA4 gapless | FA4 det | FA4 | vs FA4 det gapless '
              '| vs FA4 gapless |')
        print('|---|---|---|---|---|---|---|---|---|---|')
        for key in gapless:
            e = table.get(key, {})
            if not any(n.startswith('det ') for n in e):
                continue
            _, dv = best(e, 'det ')
            cells = [fmt(e[p]) if p in e else '-' for p in ('fa4-det-gapless', 'fa4-gapless', 'fa4-det', 'fa4')]
            vs = [pct(dv, e[p]) if p in e else '-' for p in ('fa4-det-gapless', 'fa4-gapless')]
            print(f'| {key[0]} | {key[1]} | {key[2]} | {fmt(dv)} | ' + ' | '.join(cells + vs) + ' |')

if fastest:
    print()
    print('dashc by each run\'s fastest repetition (TFLOPS of the whole backward; FA4 keeps no such figure):')
    print()
    print('| hd | mask | seqlen | best det schedule | det TFLOPS | best atomic | atomic TFLOPS | det cost |')
    print('|---|---|---|---|---|---|---|---|')
    for key in sorted(fastest, key=lambda k: (k[1] != 'full', k[0], k[2])):
        e = fastest[key]
        if not any(n.startswith('det ') for n in e) or not any(n.startswith('atomic ') for n in e):
            continue
        dn, dv = best(e, 'det ')
        an, av = best(e, 'atomic ')
        print(f'| {key[0]} | {key[1]} | {key[2]} | {dn} | {fmt(dv)} | {an} | {fmt(av)} | '
              f'{100 * (1 - st.mean(dv) / st.mean(av)):.1f}% |')
