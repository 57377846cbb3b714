#!/usr/bin/env bash
# Kernel A/B run on the device machine: renders a few shapes with `dashc codegen` (the templates in the working
# tree: "cur"), derives one variant per patch given (applied to the rendered sources with `patch -p3`), builds
# each for sm_90a and times them interleaved, two rounds.
# Usage: bash bench/scripts/variants-run.sh PATCH...   (target/dashc-dev from bench/scripts/prepare-carry.sh, carried)
# Run 13 (bench/NOTES.md) used bench/scripts/variants/run13-bulk-dq.patch (dQ staged in shared memory, one bulk
# reduction per visit), with the variant "nr" made from it by setting `rot = 0`.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
S=/tmp/variants
rm -rf $S && mkdir -p $S
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
shapes=(
  "h128f_det:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128f_nd:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift --nondeterministic"
  "h128c_det:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "h64f_det:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64c_det:--seqlen 16384 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
)
variants=(cur)
for patch in "$@"; do variants+=("$(basename "$patch" .patch)"); done
for entry in "${shapes[@]}"; do
  name=${entry%%:*}; flags=${entry#*:}
  $D codegen $flags --arch sm90a -o $S/$name/cur > /dev/null || { echo "codegen failed: $name"; exit 1; }
  for patch in "$@"; do
    v=$(basename "$patch" .patch)
    cp -r $S/$name/cur $S/$name/$v && patch -s -p3 -d $S/$name/$v < "$patch" || { echo "patch $patch failed"; exit 1; }
  done
done
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && nvcc -std=c++17 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -o harness harness.cu > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
for round in 1 2; do
  for entry in "${shapes[@]}"; do
    name=${entry%%:*}
    for v in "${variants[@]}"; do
      (cd $S/$name/$v && ./harness schedule.txt --no-check --reps 30 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      echo "round $round $name $v $(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); print(d['time_ms']['main_median'], d['tflops']['main'], d['repeatable'], d['status'], d['main_kernel'])" 2>/dev/null)"
    done
  done
done
for d in $S/*/*; do rm -f $d/harness; done
tar czf $OUT/variants.tgz -C $S .
