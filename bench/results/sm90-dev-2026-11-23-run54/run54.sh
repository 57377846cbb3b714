#!/usr/bin/env bash
# scratch: FP32 checks with the NaN-poisoned accumulator: in-order 3000x1000 (q tiles without visits when causal), persistent 1000x3000
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
mkdir -p $OUT/chk
for hd in 64 128; do for mask in full causal; do
  target/dashc-dev run --arch sm90 --seqlen 3000 --seqlen-k 1000 --heads 2 --head-dim $hd --mask $mask --schedule naive,descending \
    --nondeterministic --check --reps 2 --work-dir /tmp/w --json > $OUT/chk/inorder-hd$hd-$mask.json 2>>$OUT/chk/err.log || echo "FAILED inorder $hd $mask"
  target/dashc-dev run --arch sm90 --seqlen 1000 --seqlen-k 3000 --heads 2 --head-dim $hd --mask $mask --schedule naive,descending \
    --launch persistent --nondeterministic --check --reps 2 --work-dir /tmp/w --json > $OUT/chk/persistent-hd$hd-$mask.json 2>>$OUT/chk/err.log || echo "FAILED persistent $hd $mask"
  echo "$hd $mask $SECONDS"
done; done
python3 - <<'PY'
import json,glob,os
n=0; bad=[]; worst=0
for f in sorted(glob.glob(os.environ['OUT']+'/chk/*.json')):
    d=json.load(open(f))
    for r in d['results']:
        for k in ('deterministic','nondeterministic'):
            x=r.get(k)
            if not x: continue
            n+=1; c=x['check']
            ok = c['ran'] and x['status']=='ok' and x['poison_ok'] and x['finite'] and (k!='deterministic' or x['repeatable'])
            if not ok: bad.append((os.path.basename(f), r['schedule'], k))
            else: worst=max(worst,c['rel_l2_dq'],c['rel_l2_dk'],c['rel_l2_dv'])
print('results', n, 'worst rel l2', worst, 'bad', bad)
PY
tar czf $OUT/chk.tgz -C $OUT chk && rm -rf $OUT/chk
