set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
mkdir -p /tmp/tr
for row in "64 16384 1 32" "128 8192 2 16"; do
  set -- $row
  for s in symmetric-shift spread-symmetric-shift; do
    $D run --arch sm90 --launch persistent --seqlen $2 --batch $3 --heads $4 --head-dim $1 --mask causal --schedule $s \
      --no-check --reps 10 --idle-ms 500 --costs target/abfiles/costs-193.json --trace /tmp/tr/t-hd$1-s$2-$s.json \
      > /tmp/tr/log-hd$1-s$2-$s.txt 2>&1
    tail -25 /tmp/tr/log-hd$1-s$2-$s.txt
    gzip -c /tmp/tr/t-hd$1-s$2-$s.json > $OUT/t-hd$1-s$2-$s.json.gz
  done
done
tar czf $OUT/logs.tgz -C /tmp/tr $(cd /tmp/tr && ls log-*)
ls -la $OUT
