#!/usr/bin/env bash
# Run 77 (the device command, as run): the causal half of the bench and the FP32 checks of the causal rows.
FA4=0 MASKS=causal bash bench/scripts/fa4-bench-run.sh
for hd in 64 128; do for s in 512 2048 4096; do
  [ $SECONDS -gt 540 ] && break 2
  target/dashc-dev run --arch sm90 --seqlen $s --batch $((16384 / s)) --heads $((2048 / hd)) --head-dim $hd --mask causal \
    --check --reps 2 --work-dir /tmp/dashc-run --json > $OUT/check-hd$hd-causal-$s.json 2>>$OUT/check.log \
    || echo "FAILED check hd$hd causal $s" | tee -a $OUT/check.log
done; done
echo checks done at $SECONDS
tar czf $OUT/checks.tgz -C $OUT $(cd $OUT && ls check-*) && rm $OUT/check-hd*.json
