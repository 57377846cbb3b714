#!/usr/bin/env bash
# Searched schedules with the in-order launch on the causal long rows (docs/hopper.md, "What is missing"): with run
# 84's costs the model predicts them 2.5-3.4% faster than the best built-in, on the rows furthest below FA4.
# Also the first GPU run of the harness's `clocks` (the SM clock from NVML while each timed backward runs).
#   1. `dashc run` of a searched schedule, hd128 causal 2048, in-order, with the FP32 check: the clocks must be
#      filled in and the result ok;
#   2. `dashc bench` of the causal rows at SEQLENS (default 8192,16384) in two invocations, each `--rounds 2`:
#      the in-order launch with spt, symmetric-shift, spread-symmetric-shift and search (the search under the
#      costs COSTS), then the persistent launch, the default, with the two symmetric shifts (the control);
#   3. FP32 checks of searched schedules on two odd shapes, in-order, deterministic and atomic.
# Usage on the device machine: bash bench/scripts/search-causal-run.sh, carrying target/dashc-dev and
# target/cutlass-wheel (bench/scripts/prepare-carry.sh); the costs file is tracked in the repository. About 96
# long-row harness runs: at run 90's 3 s each, with the builds, an estimated 400-450 s (the call limit is 600 s).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
W=/tmp/dashc-run
COSTS=${COSTS:-bench/results/validate-2026-11-25-b095bfe-sm90/costs.json}
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/device.txt
mkdir -p $OUT/run $OUT/in-order $OUT/persistent $OUT/checks
$D run --arch sm90 --launch in-order --seqlen 2048 --batch 8 --heads 16 --head-dim 128 --mask causal \
  --schedule search --costs $COSTS --check --json > $OUT/run/clocks.json 2> $OUT/run/clocks.log
echo "run: exit $?"; grep -o '"clocks":[^}]*}' $OUT/run/clocks.json | head -2
echo "clock check done at ${SECONDS}s"
$D bench --arch sm90 --work-dir $W --reps 20 --rounds 2 --launch in-order --masks causal \
  --seqlens ${SEQLENS:-8192,16384} --schedules spt,symmetric-shift,spread-symmetric-shift,search --costs $COSTS \
  --no-check --out $OUT/in-order > $OUT/in-order/bench.log 2>&1
echo "in-order bench: exit $? at ${SECONDS}s"; grep -A30 "^hd mask" $OUT/in-order/bench.log
$D bench --arch sm90 --work-dir $W --reps 20 --rounds 2 --masks causal --seqlens ${SEQLENS:-8192,16384} \
  --schedules symmetric-shift,spread-symmetric-shift --no-check --out $OUT/persistent > $OUT/persistent/bench.log 2>&1
echo "persistent bench: exit $? at ${SECONDS}s"; grep -A30 "^hd mask" $OUT/persistent/bench.log
for shape in "--seqlen 3000 --batch 3 --heads 5" "--seqlen 1000 --seqlen-k 3000 --heads 2"; do
  for hd in 64 128; do
    tag=$(echo "$shape hd$hd" | tr -c 'a-z0-9' '_')
    $D run --arch sm90 --launch in-order $shape --head-dim $hd --mask causal --schedule search --costs $COSTS \
      --check --nondeterministic --json > $OUT/checks/$tag.json 2> $OUT/checks/$tag.log
    echo "check $shape hd$hd: exit $?"
  done
done
echo "done at ${SECONDS}s"
