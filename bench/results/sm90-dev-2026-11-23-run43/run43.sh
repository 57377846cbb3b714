#!/usr/bin/env bash
# scratch: Nsight Compute profile (full set + SASS source counters) of the sm90 main loop at HEAD, three configs
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
D=target/dashc-dev; S=/tmp/prof; mkdir -p $S
shapes=(
  "h64f:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h128c:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "h128f:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
)
for entry in "${shapes[@]}"; do
  name=${entry%%:*}; flags=${entry#*:}
  $D codegen $flags --arch sm90a -o $S/$name > /dev/null || echo "codegen failed $name"
done
ls -d $S/* | xargs -P 8 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || { echo "BUILD FAILED {}"; tail -5 ptxas.log; }'
echo built $SECONDS
for entry in "${shapes[@]}"; do
  name=${entry%%:*}
  (cd $S/$name && ./harness schedule.txt --no-check --reps 20 > $OUT/$name-time.json 2>&1; python3 -c "import json;d=json.load(open('$OUT/$name-time.json'));print('$name',d['tflops'])")
  (cd $S/$name && ncu --clock-control none -k regex:bwd_main_kernel -c 1 --set full --import-source yes -o $S/$name-rep ./harness schedule.txt --reps 1 --warmup 0 --repeat-runs 2 --no-check > $OUT/$name-ncu.log 2>&1)
  ncu -i $S/$name-rep.ncu-rep --page details > $OUT/$name-details.txt 2>&1
  ncu -i $S/$name-rep.ncu-rep --page source --csv --print-source sass > $OUT/$name-source.csv 2>&1
  ncu -i $S/$name-rep.ncu-rep --page raw --csv > $OUT/$name-raw.csv 2>&1
  gzip $OUT/$name-source.csv $OUT/$name-raw.csv
  cuobjdump --dump-sass $S/$name/harness | gzip > $OUT/$name-sass.txt.gz
  echo "$name done $SECONDS"
done
cp $S/h64f/ptxas.log $OUT/h64f-ptxas.log
cd $OUT && tar czf prof.tgz --remove-files h64f-* h128c-* h128f-*
