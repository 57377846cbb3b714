#!/usr/bin/env bash
# scratch: A/B of warp-uniform operand descriptors (u) and single-field slot reads (v)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
S=/tmp/ab; mkdir -p $S
shapes=(
  "h64f:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64c:--seqlen 16384 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
  "h128f:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128c:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "h64f2k:--seqlen 2048 --batch 8 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h128c2k:--seqlen 2048 --batch 8 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
)
declare -A VF=( [c]="" [u]="-DDASHC_UNIFORM_DESC=1" [uv]="-DDASHC_UNIFORM_DESC=1 -DDASHC_SLIM_SLOT=1" [v]="-DDASHC_SLIM_SLOT=1" )
variants=(c u uv v)
for entry in "${shapes[@]}"; do
  name=${entry%%:*}; flags=${entry#*:}
  for v in "${variants[@]}"; do
    bin=target/dashc-new
    $bin codegen $flags --arch sm90a -o $S/$name/$v > /dev/null || echo "codegen failed $name $v"
    sed -i "s|-o harness harness.cu|${VF[$v]} -o harness harness.cu|" $S/$name/$v/nvcc-command.txt
  done
done
# correctness of the new variants: odd shapes, FP32 reference, 3 repeat runs
for hd in 64 128; do for mask in full causal; do for v in uv; do
  target/dashc-new codegen --seqlen 1000 --seqlen-k 3000 --heads 2 --head-dim $hd --mask $mask --schedule descending --arch sm90a -o $S/chk/$hd$mask$v > /dev/null
  sed -i "s|-o harness harness.cu|${VF[$v]} -o harness harness.cu|" $S/chk/$hd$mask$v/nvcc-command.txt
done; done; done
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo built $SECONDS
for d in $S/chk/*; do (cd $d && ./harness schedule.txt --check --repeat-runs 3 --reps 2 > run.json 2>&1; python3 -c "import json;d=json.load(open('run.json'));c=d['check'];print('$d',d['status'],d['repeatable'],d['poison_ok'],c['rel_l2_dq'],c['rel_l2_dk'],c['rel_l2_dv'])"); done
for round in 1 2; do
  for entry in "${shapes[@]}"; do
    name=${entry%%:*}
    line="round $round $name"
    for v in "${variants[@]}"; do
      (cd $S/$name/$v && ./harness schedule.txt --no-check --reps 20 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      line="$line $v=$(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); print(round(d['tflops']['main'],1))" 2>/dev/null)"
    done
    echo "$line"
  done
done
for d in $S/*/*; do rm -f $d/harness; done
tar czf $OUT/ab.tgz -C $S --exclude schedule.txt . ; echo done $SECONDS
