#!/usr/bin/env bash
# Run 79 (the device command, as run): the odd shapes of bench-run.sh (EXTRAS), FP32 check on by default in `dashc run`.
export PATH=/usr/local/cuda/bin:$PATH; D=target/dashc-dev; R=$OUT/odd; mkdir -p $R
for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" \
             "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2"; do
  for hd in 64 128; do for mask in full causal; do
    [ $SECONDS -gt 200 ] && { echo "stopped (time) before $shape $hd $mask" >> $R/odd.log; break 3; }
    $D run --arch sm90 $shape --head-dim $hd --mask $mask --nondeterministic --work-dir /tmp/dashc-run --reps 5 --json \
      > "$R/odd-hd$hd-$mask-$(echo $shape | tr -d ' -').json" 2>>$R/odd.log || echo "FAILED: $shape $hd $mask" | tee -a $R/odd.log
  done; done
done
echo done at $SECONDS >> $R/odd.log; tar czf $OUT/odd.tgz -C $OUT odd && rm -rf $R
