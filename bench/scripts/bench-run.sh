#!/usr/bin/env bash
# GPU run of issues 4 and 6: the paper's 24 configurations x schedules, deterministic and atomic, plus odd shapes
# and a searched schedule. Usage on the device machine: DASHC_COMMIT=... bash bench/scripts/bench-run.sh (writes
# $OUT), with target/dashc-dev and target/cutlass-wheel carried (bench/scripts/prepare-carry.sh makes both).
# ARCH picks the main loop: sm90 (default, the Hopper one; needs the CUTLASS wheel) or sm80 (the portable one).
# The timing is the median of REPS (default 20, the minimum; runs up to 19 used 10). At 20 the whole
# sweep does not fit one 600 s device call: split it by mask, MASKS=full then MASKS=causal EXTRAS=0 (the odd
# shapes and the searched schedule run once, with EXTRAS=1, the default). LAUNCH=in-order|persistent picks the
# launch; unset, bench's own default (persistent with the sm90 main loop, in-order with the portable one). Runs up to
# 56 passed --launch in-order when LAUNCH was unset, then the default; run 63 still did.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D="target/dashc-dev"
A="--arch ${ARCH:-sm90}"
W=/tmp/dashc-run
[ "${ARCH:-sm90}" = sm90 ] && WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
R=$OUT/raw
mkdir -p $R
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
# Timing, poison and bitwise repeatability of every configuration x schedule, deterministic and atomic; the FP32
# reference check runs separately below (it dominates the time of small shapes).
$D bench $A --work-dir $W --reps ${REPS:-20} --masks ${MASKS:-full,causal} ${LAUNCH:+--launch $LAUNCH} --no-check --out $R 2>&1 | tee $OUT/bench.log
[ "${EXTRAS:-1}" = 1 ] && for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" \
             "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2"; do
  for hd in 64 128; do
    for mask in full causal; do
      $D run $A $shape --head-dim $hd --mask $mask --nondeterministic --work-dir $W --reps 5 --json \
        > "$R/odd-hd$hd-$mask-$(echo $shape | tr -d ' -').json" 2>>$R/odd.log || echo "FAILED: $shape $hd $mask" | tee -a $R/odd.log
    done
  done
done
[ "${EXTRAS:-1}" = 1 ] && $D run $A --seqlen 4096 --batch 4 --heads 16 --mask causal --schedule descending,search --work-dir $W --reps 20 2>&1 | tee $OUT/search-run.log
# The FP32 reference check of every configuration up to seqlen 4096, every schedule, while time remains.
for hd in 64 128; do for mask in full causal; do for s in 512 1024 2048 4096; do
  [ $SECONDS -gt ${CHECK_UNTIL:-480} ] && { echo "check pass stopped at hd$hd $mask $s (time)" | tee -a $R/check.log; break 3; }
  $D run $A --seqlen $s --batch $((16384 / s)) --heads $((2048 / hd)) --head-dim $hd --mask $mask --check --reps 2 \
    --work-dir $W --json > $R/check-hd$hd-$mask-$s.json 2>>$R/check.log || echo "FAILED check hd$hd $mask $s" | tee -a $R/check.log
done; done; done
# At most 8 files come back from the device: the raw results travel as one archive.
cp $R/bench-*.json $OUT/ 2>/dev/null
tar czf $OUT/raw.tgz -C $OUT raw && rm -rf $R
ls $OUT
