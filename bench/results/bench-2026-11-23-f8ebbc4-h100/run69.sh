#!/usr/bin/env bash
# scratch: FA4 (det and not) and dashc's bench on one machine, for the final comparison. PART=a: FA4 + dashc hd128;
# PART=b: dashc hd64.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
REPO=$PWD; D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/raw; mkdir -p $R
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
if [ "${PART:-a}" = a ]; then
  bash .devgpu/fa4install.sh
  (cd $OUT && PROVIDERS=fa4-det,fa4 REPS=20 RESULTS_DIR=$OUT timeout 240 python3 -c "import site,runpy; site.addsitedir('/tmp/site'); runpy.run_path('$REPO/.fa4C/anchors.py', run_name='__main__')" > $OUT/fa4.log 2>&1; grep -v "^{" $OUT/fa4.log | tail -30)
  echo fa4 done $SECONDS
  M=full
else
  M=causal
fi
HD=64,128
$D bench --arch sm90 --work-dir $W --reps 20 --head-dims $HD --masks $M --no-check --out $R 2>&1 | tee $OUT/bench-$M.log | grep "\*"
echo bench done $SECONDS
cp $R/bench-*.json $OUT/bench-$M.json
