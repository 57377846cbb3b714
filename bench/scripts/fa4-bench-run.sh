#!/usr/bin/env bash
# FlashAttention-4 (deterministic and not) and dashc's bench of one mask on the same device machine, so that the
# comparison of issue 6 is made on one GPU. The FA4 wheels (../shared/bench/fa4-wheels.sh DIR) are too large for
# one call: a first call carries DIR/A as target/fa4A and runs `PART=park bash bench/scripts/fa4-bench-run.sh`,
# which parks it in /tmp/fa4park outside the repo; the next call, while the machine is still warm, carries
# DIR/B as target/fa4B (with ../shared/bench/anchors.py copied into it), target/dashc-dev and target/cutlass-wheel,
# and runs `MASKS=full bash bench/scripts/fa4-bench-run.sh`: it installs FA4 into /tmp/site, times it (every row,
# both masks, REPS medians) and then runs `dashc bench --arch sm90 --masks $MASKS`. FA4=0 skips FA4 (a later call
# for the other mask). The tracked working tree plus what is carried must stay under the device's 64 MiB.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
if [ "${PART:-run}" = park ]; then
  mkdir -p /tmp/fa4park && cp target/fa4A/* /tmp/fa4park/ && ls /tmp/fa4park | tee $OUT/park.txt
  exit 0
fi
REPO=$PWD; D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/raw; mkdir -p $R
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
if [ "${FA4:-1}" = 1 ]; then
  source bench/scripts/fa4-install.sh || exit 1
  (cd $OUT && PROVIDERS=fa4-det,fa4 REPS=${REPS:-20} RESULTS_DIR=$OUT timeout ${FA4_LIMIT:-260} python3 -c \
    "import site,runpy; site.addsitedir('/tmp/site'); runpy.run_path('$REPO/target/fa4B/anchors.py', run_name='__main__')" \
    > $OUT/fa4.log 2>&1; grep -v "^{" $OUT/fa4.log | tail -30)
  echo "fa4 done at ${SECONDS}s"
fi
$D bench --arch sm90 --work-dir $W --reps ${REPS:-20} --masks ${MASKS:-full} --no-check --out $R 2>&1 \
  | tee $OUT/bench-${MASKS:-full}.log | grep "\*"
echo "bench done at ${SECONDS}s"
cp $R/bench-*.json $OUT/bench-${MASKS:-full}.json && gzip $OUT/bench-${MASKS:-full}.json && rm -rf $R
