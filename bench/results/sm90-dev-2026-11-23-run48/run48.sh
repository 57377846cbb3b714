#!/usr/bin/env bash
# scratch: durations and DRAM throughput of the pre/postprocess kernels (ncu), hd64 and hd128, 16384 tokens
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
S=/tmp/pp; mkdir -p $S; D=target/dashc-dev
$D codegen --seqlen 512 --batch 32 --heads 32 --head-dim 64 --mask full --schedule shift --arch sm90a -o $S/h64 > /dev/null
$D codegen --seqlen 512 --batch 32 --heads 16 --head-dim 128 --mask full --schedule shift --arch sm90a -o $S/h128 > /dev/null
ls -d $S/* | xargs -P 4 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
for n in h64 h128; do
  (cd $S/$n && ./harness schedule.txt --no-check --reps 20 | python3 -c "import json,sys;d=json.load(sys.stdin);print('$n',d['time_ms'])")
  (cd $S/$n && ncu --clock-control none -k regex:"bwd_preprocess|bwd_postprocess|bwd_main" -c 9 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum ./harness schedule.txt --no-check --reps 1 --warmup 0 --repeat-runs 1 2>&1 | grep -E "bwd_|duration|dram__" | head -40)
done
