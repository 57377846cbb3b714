#!/usr/bin/env bash
# Searched schedules with the in-order launch on the causal long rows, against the built-ins and the persistent
# symmetric shifts. Run on 2026-11-25 (bench/results/search-causal-2026-11-25-89c79de-h100): with run 84's costs
# the model predicted them 2.5-3.4% faster than the best built-in; they ran 4-24% slower, because they spread the
# SMs over every (batch, head) at once (docs/search.md, "Heads in flight"). That run predates
# --max-heads-in-flight; the search lines here pass `any` to repeat it (the default now keeps to the built-ins'
# width, and returns the best built-in on these rows).
#   1. `dashc run` of a searched schedule, hd128 causal 2048, in-order, with the FP32 check: the clocks must be
#      filled in and the result ok;
#   2. `dashc bench` of the causal rows at SEQLENS (default 8192,16384) in two invocations, each `--rounds 2`:
#      the in-order launch with spt, symmetric-shift, spread-symmetric-shift and search (the search under the
#      costs COSTS), then the persistent launch, the default, with the two symmetric shifts (the control);
#   3. FP32 checks of searched schedules on two odd shapes, in-order, deterministic and atomic.
# Usage on the device machine: bash bench/scripts/search-causal-run.sh, carrying target/dashc-dev and
# target/cutlass-wheel (bench/scripts/prepare-carry.sh); the costs file is tracked in the repository. Took 488 s
# on an H100 (the call limit is 600 s). Everything is packed into $OUT/search-causal.tgz at the end: a device
# call returns only a few files, and the 2026-11-25 run lost its raw JSON for want of this.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
W=/tmp/dashc-run
COSTS=${COSTS:-bench/results/validate-2026-11-25-b095bfe-sm90/costs.json}
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/device.txt
mkdir -p $OUT/run $OUT/in-order $OUT/persistent $OUT/checks
$D run --arch sm90 --launch in-order --seqlen 2048 --batch 8 --heads 16 --head-dim 128 --mask causal \
  --schedule search --max-heads-in-flight any --costs $COSTS --check --json > $OUT/run/clocks.json 2> $OUT/run/clocks.log
echo "run: exit $?"; grep -o '"clocks":[^}]*}' $OUT/run/clocks.json | head -2
echo "clock check done at ${SECONDS}s"
$D bench --arch sm90 --work-dir $W --reps 20 --rounds 2 --launch in-order --masks causal \
  --seqlens ${SEQLENS:-8192,16384} --schedules spt,symmetric-shift,spread-symmetric-shift,search --costs $COSTS \
  --max-heads-in-flight any --no-check --out $OUT/in-order > $OUT/in-order/bench.log 2>&1
echo "in-order bench: exit $? at ${SECONDS}s"; grep -A30 "^hd mask" $OUT/in-order/bench.log
$D bench --arch sm90 --work-dir $W --reps 20 --rounds 2 --masks causal --seqlens ${SEQLENS:-8192,16384} \
  --schedules symmetric-shift,spread-symmetric-shift --no-check --out $OUT/persistent > $OUT/persistent/bench.log 2>&1
echo "persistent bench: exit $? at ${SECONDS}s"; grep -A30 "^hd mask" $OUT/persistent/bench.log
for shape in "--seqlen 3000 --batch 3 --heads 5" "--seqlen 1000 --seqlen-k 3000 --heads 2"; do
  for hd in 64 128; do
    tag=$(printf '%s' "$shape hd$hd" | tr -cs 'a-z0-9' '-' | sed 's/^-*//; s/-*$//')
    $D run --arch sm90 --launch in-order $shape --head-dim $hd --mask causal --schedule search --costs $COSTS \
      --max-heads-in-flight any --check --nondeterministic --json > $OUT/checks/$tag.json 2> $OUT/checks/$tag.log
    echo "check $shape hd$hd: exit $?"
  done
done
echo "done at ${SECONDS}s"
(cd $OUT && tar czf /tmp/search-causal.tgz . && mv /tmp/search-causal.tgz . && find . -mindepth 1 -maxdepth 1 ! -name search-causal.tgz -exec rm -rf {} +)
