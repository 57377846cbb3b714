#!/usr/bin/env bash
# Run 81 (device): is the trace build faster than the timing build at long sequences, and which of its stamps makes
# it so? Run 78's and 80's "Trace overhead" tables had the trace build 2-8% faster than the timing build at seqlen
# 8192 (both head dims, every schedule) and 1-3% slower at 2048. Variants of one rendered kernel per shape: c (the
# timing build), t (kTrace on: every stamp), tc (kTrace, only the consumers' visit-top stamp), tw (kTrace, all but
# that stamp); tc and tw need bench/scripts/variants/run81-trace-parts.patch. Two interleaved rounds, main kernel
# median of 20, SM clock and power logged. Usage: bash bench/scripts/trace-ab-run.sh (target/dashc-dev and
# target/cutlass-wheel carried).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
S=/tmp/tab; rm -rf $S; mkdir -p $S
shapes=(
  "h128f8k:--seqlen 8192 --batch 2 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h64f16k:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule naive"
  "h64f8k:--seqlen 8192 --batch 2 --heads 32 --head-dim 64 --mask full --schedule shift"
)
declare -A VF=( [c]="" [t]="" [tc]="-DDASHC_TRACE_ONLY_CONSUMER=1" [tw]="-DDASHC_TRACE_NO_CONSUMER=1" )
V="c t tc tw"
for e in "${shapes[@]}"; do
  name=${e%%:*}
  target/dashc-dev codegen ${e#*:} --arch sm90 -o $S/$name/c > /dev/null || { echo "codegen failed $name"; exit 1; }
  for v in t tc tw; do
    cp -r $S/$name/c $S/$name/$v
    patch -s -p1 -d $S/$name/$v < bench/scripts/variants/run81-trace-parts.patch || { echo "patch failed"; exit 1; }
    sed -i 's/constexpr bool kTrace = false;/constexpr bool kTrace = true;/' $S/$name/$v/bwd_params.h
    sed -i "s|-o harness harness.cu|${VF[$v]} -o harness harness.cu|" $S/$name/$v/nvcc-command.txt
  done
done
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo "built at ${SECONDS}s"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 200 > $OUT/clocks.csv 2>&1 &
SMI=$!
for round in 1 2 3; do
  for e in "${shapes[@]}"; do
    name=${e%%:*}; line="round $round $name"
    for v in $V; do
      (cd $S/$name/$v && timeout 120 ./harness schedule.txt --no-check --reps 20 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      line="$line $v=$(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); print(d['time_ms']['main_median'], round(d['tflops']['main'],1), d['repeatable'])" 2>/dev/null)"
    done
    echo "$line"
  done
  [ $SECONDS -gt ${UNTIL:-330} ] && { echo "stopped after round $round (time)"; break; }
done
kill $SMI 2>/dev/null
for d in $S/*/*; do rm -f $d/harness $d/schedule.txt; done
tar czf $OUT/tab.tgz -C $S . ; echo "done at ${SECONDS}s"
