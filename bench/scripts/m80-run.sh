#!/usr/bin/env bash
# The sm90 loop's 80-row query tiles (head dim 128, full masks) on the device machine: FP32 checks at odd shapes
# (deterministic and atomic, poison and bitwise repeat), then the whole backward of 64-row against 80-row tiles at
# the paper's hd128 full rows, interleaved (spread-shift with the split tail, persistent launch, both builds).
# Usage: PART=check|time|all [SEQLENS="8192 16384"] [ROUNDS=2] bash bench/scripts/m80-run.sh
# (target/dashc-dev and target/cutlass-wheel from bench/scripts/prepare-carry.sh, carried). Output: $OUT/m80.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/m80; mkdir -p $R
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
trap 'tar czf $OUT/m80.tgz -C $OUT m80 && rm -rf $R' EXIT
trap 'exit 124' TERM INT
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version --format=csv,noheader | tee $R/device.txt
PART=${PART:-all}
if [ "$PART" = check ] || [ "$PART" = all ]; then
  for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 777 --seqlen-k 1234 --heads 5" \
               "--seqlen 3000 --seqlen-k 1000 --heads 2" "--seqlen 4096 --batch 4 --heads 16"; do
    tag=$(echo $shape | tr -d ' -')
    for launch in persistent in-order; do
      $D run --arch sm90 $shape --head-dim 128 --block-m 80 --mask full --schedule shift,spread-shift,naive \
        --split-tail --launch $launch --check --reps 3 --nondeterministic --work-dir $W --json \
        > $R/check-$tag-$launch.json 2>>$R/check.log || echo "FAILED: $shape $launch" | tee -a $R/check.log
    done
  done
  python3 bench/scripts/check-verdict.py 'm80 checks' $R/check-*.json | tee $R/check-verdict.txt
fi
if [ "$PART" = time ] || [ "$PART" = all ]; then
  for round in $(seq 1 ${ROUNDS:-2}); do
    for s in ${SEQLENS:-8192 16384}; do
      for bm in 64 80; do
        $D run --arch sm90 --seqlen $s --batch $((16384 / s)) --heads 16 --head-dim 128 --mask full --block-m $bm \
          --schedule spread-shift --split-tail --nondeterministic --reps 30 --idle-ms 500 --work-dir $W \
          --json > $R/time-s$s-m$bm-r$round.json 2>>$R/time.log || echo "FAILED: time $s $bm" | tee -a $R/time.log
        python3 - $R/time-s$s-m$bm-r$round.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d['results']:
    out = [r['schedule']]
    for k in ('deterministic', 'nondeterministic'):
        x = r.get(k)
        if x:
            t = x['time_ms']
            out.append('%s %s total %.1f TFLOPS (median %.3f ms, fastest %.3f ms) main median %.3f ms' % (
                k[:5], x['status'], x['tflops']['total'], t['total_median'], t['total_min'], t['main_median']))
    print(sys.argv[1].split('/')[-1], *out)
PY
      done
    done
  done
fi
echo "done at ${SECONDS}s"
