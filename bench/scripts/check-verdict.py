#!/usr/bin/env python3
"""One-line verdict over `dashc run --json` files with the FP32 check: how many results, how many not ok (status,
poison, check not run, a deterministic result not bitwise repeatable, or deterministic and atomic dQ apart), and
the worst relative L2 error. Usage: python3 bench/scripts/check-verdict.py LABEL FILE... (used by quick-run.sh and
spread-ab-run.sh on the device)."""
import json, os, sys

label, files = sys.argv[1], sys.argv[2:]
n = bad = 0
worst = 0.0
for f in sorted(files):
    for r in json.load(open(f))['results']:
        for kind in ('deterministic', 'nondeterministic'):
            x = r.get(kind)
            if not x:
                continue
            n += 1
            worst = max(worst, max(x['check'][k] for k in ('rel_l2_dq', 'rel_l2_dk', 'rel_l2_dv')))
            ok = (x['status'] == 'ok' and x['poison_ok'] and x['check']['ran']
                  and (x['repeatable'] or kind == 'nondeterministic')
                  and (r.get('vs_nondeterministic') or {}).get('ok', True))
            if not ok:
                bad += 1
                print('BAD', os.path.basename(f), r['schedule'], kind, x['status'], x['check'])
print(label, n, 'bad', bad, 'worst rel l2', worst)
