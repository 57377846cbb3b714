#!/usr/bin/env bash
# A/B of the spread shifts against the paper's (run 82, bench/NOTES.md): the head dim 128 rows at 4096-16384,
# where a KV tile spans two Q tiles and the spread start leaves two visits between rank-consecutive dQ adds.
# ROUNDS rounds (default 3) of `dashc bench`, deterministic and atomic, the schedule order reversed every other
# round so that neither schedule always runs first; then FP32 checks of the spread schedules on odd shapes and on
# two of the paper's configurations, both launches.
# Usage on the device machine: bash bench/scripts/spread-ab-run.sh (target/dashc-dev and target/cutlass-wheel
# carried; bench/scripts/prepare-carry.sh makes both).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
W=/tmp/dashc-run
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
R=$OUT/raw
mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
for round in $(seq 1 "${ROUNDS:-3}"); do
  for mask in full causal; do
    if [ $mask = full ]; then a=shift; b=spread-shift; else a=symmetric-shift; b=spread-symmetric-shift; fi
    order="$a,$b"; [ $((round % 2)) = 0 ] && order="$b,$a"
    mkdir -p $R/round$round-$mask
    $D bench --arch sm90 --work-dir $W --reps 20 --head-dims 128 --masks $mask --seqlens ${SEQLENS:-4096,8192,16384} \
      --schedules $order --no-check --out $R/round$round-$mask 2>&1 | grep -v "^\s*$" | tail -4
  done
done
for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" \
             "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 2048 --batch 8 --heads 16"; do
  for launch in persistent in-order; do
    for pair in "full:spread-shift" "causal:spread-symmetric-shift"; do
      mask=${pair%%:*}; sch=${pair#*:}
      $D run --arch sm90 $shape --head-dim 128 --mask $mask --schedule $sch --launch $launch --nondeterministic \
        --check --reps 3 --work-dir $W --json > "$R/check-$mask-$launch-$(echo $shape | tr -d ' -').json" 2>>$R/check.log ||
        echo "FAILED: $shape $mask $launch" | tee -a $R/check.log
    done
  done
done
python3 - <<'P'
import json, glob, os, statistics as st
out = os.environ['OUT']
rows = {}
for f in sorted(glob.glob(out + '/raw/round*/bench-*.json')):
    for c in json.load(open(f))['configs']:
        for r in c['results']:
            for kind in ('deterministic', 'nondeterministic'):
                x = r[kind]
                key = (c['mask'], c['seqlen'], r['schedule'], kind[:3])
                ok = x['status'] == 'ok' and (kind == 'nondeterministic' or x['repeatable'])
                rows.setdefault(key, []).append((x['time_ms']['main_median'] * 1000, x['tflops']['total'], ok))
for k in sorted(rows):
    v = rows[k]
    print(*k, 'main us', ' '.join(f'{t:.0f}' for t, *_ in v), '| TFLOPS', ' '.join(f'{t:.1f}' for _, t, *_ in v),
          '| mean', f'{st.mean(t for _, t, *_ in v):.1f}', '| ok' if all(ok for *_, ok in v) else '| NOT OK')
P
python3 bench/scripts/check-verdict.py checks $R/check-*.json
tar czf $OUT/raw.tgz -C $OUT raw && rm -rf $R
