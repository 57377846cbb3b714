#!/usr/bin/env bash
# scratch: the kernel with the LSE read before the S^T/dP^T issue (hd128), as committed: bench of the hd128 rows
# (both masks, persistent launch, every schedule, det and atomic), FP32 checks of odd shapes and of seqlen <= 4096
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev; A="--arch sm90"; W=/tmp/dashc-run; R=$OUT/raw; mkdir -p $R
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 500 > $OUT/clocks.csv 2>&1 &
SMI=$!
$D bench $A --work-dir $W --reps 20 --head-dims 128 --masks full,causal --no-check --out $R 2>&1 | tee $OUT/bench.log | grep -v "^\s*$" | tail -40
kill $SMI 2>/dev/null
echo bench done $SECONDS
for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --seqlen-k 1000 --heads 2" "--seqlen 1000 --seqlen-k 3000 --heads 2"; do
  for mask in full causal; do
    $D run $A $shape --head-dim 128 --mask $mask --schedule descending --nondeterministic --check --work-dir $W --reps 3 --json \
      > "$R/odd-hd128-$mask-$(echo $shape | tr -d ' -').json" 2>>$R/odd.log || echo "FAILED: $shape $mask" | tee -a $R/odd.log
  done
done
echo odd done $SECONDS
for mask in full causal; do for s in 512 2048 4096; do
  [ $SECONDS -gt 540 ] && { echo "check pass stopped at $mask $s (time)"; break 2; }
  $D run $A --seqlen $s --batch $((16384 / s)) --heads 16 --head-dim 128 --mask $mask --check --reps 2 --work-dir $W --json \
    > $R/check-hd128-$mask-$s.json 2>>$R/check.log || echo "FAILED check $mask $s" | tee -a $R/check.log
done; done
echo checks done $SECONDS
cd $OUT && tar czf raw.tgz raw && rm -rf raw && ls
