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
python3 bench/scripts/check-verdict.py 'odd results' $R/*.json
tar czf $OUT/odd.tgz -C $OUT odd && rm -rf $R
