# Quick device pass after a kernel change: variant timing (bench/scripts/variants-run.sh, no patches) beside the
# odd-shape FP32 checks of bench-run.sh, with a one-line verdict. Usage: bash bench/scripts/quick-run.sh
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/odd; mkdir -p $R
bash bench/scripts/variants-run.sh 2>&1 | grep round | sed 's/{.registers.: \([0-9]*\).*/r\1/'
for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" \
             "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2"; do
  for hd in 64 128; do for mask in full causal; do
      $D run $shape --head-dim $hd --mask $mask --nondeterministic --work-dir $W/$hd$mask$(echo $shape | tr -d ' -') --reps 5 --json \
        > "$R/odd-hd$hd-$mask-$(echo $shape | tr -d ' -').json" 2>>$R/odd.log || echo "FAILED: $shape $hd $mask" | tee -a $R/odd.log
  done; done
done
python3 - <<'P'
import json,glob,os
n=bad=0;worst=0.0
for f in sorted(glob.glob(os.environ['OUT']+'/odd/*.json')):
    d=json.load(open(f))
    for r in d['results']:
        for kind in ('deterministic','nondeterministic'):
            x=r.get(kind)
            if not x: continue
            n+=1
            e=max(x['check'][k] for k in ('rel_l2_dq','rel_l2_dk','rel_l2_dv'))
            worst=max(worst,e)
            ok=x['status']=='ok' and x['poison_ok'] and x['check']['ran'] and (x['repeatable'] or kind=='nondeterministic') and (r.get('vs_nondeterministic') or {}).get('ok', True)
            if not ok: bad+=1; print('BAD',os.path.basename(f),r['schedule'],kind,x['status'],x['check'])
print('odd results',n,'bad',bad,'worst rel l2',worst)
P
tar czf $OUT/odd.tgz -C $OUT odd && rm -rf $R
