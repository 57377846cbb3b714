#!/usr/bin/env bash
# Run 75: the 24 configurations of dd547e7's sm90 loop with the little device time left (372 s, start included).
# Largest seqlens first, one `dashc bench` per seqlen group so that a group cut off by the deadline loses only
# itself. Usage on the device: bash bench/results/bench-2026-11-25-dd547e7-h100/run75.sh with target/dashc-dev and
# target/cutlass-wheel carried (bench/scripts/prepare-carry.sh).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/raw; mkdir -p $R
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
DEADLINE=${DEADLINE:-165}
for seqlens in 16384 8192 4096 2048 1024,512; do
  left=$((DEADLINE - SECONDS)); [ $left -lt 15 ] && { echo "stopped before seqlens $seqlens (time)" | tee -a $OUT/bench.log; break; }
  echo "== seqlens $seqlens (t=${SECONDS}s)" >> $OUT/bench.log
  timeout $left $D bench --arch sm90 --seqlens $seqlens --work-dir $W --reps 20 --no-check --out $R/$seqlens >> $OUT/bench.log 2>&1 \
    || echo "seqlens $seqlens: exit $?" | tee -a $OUT/bench.log
done
echo "done at ${SECONDS}s" >> $OUT/bench.log
tar czf $OUT/raw.tgz -C $OUT raw && rm -rf $R
