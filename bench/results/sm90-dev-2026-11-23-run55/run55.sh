#!/usr/bin/env bash
# scratch: A/B of Q tile rows (hd64: 128 vs 64) and ring depths (kStages / kDqStages) on the sm90 loop
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
S=/tmp/ab; mkdir -p $S
B=target/dashc-dev
shapes64=(
  "h64f:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64f8k:--seqlen 8192 --batch 2 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64c:--seqlen 16384 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
  "h64c8k:--seqlen 8192 --batch 2 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
  "h64f2k:--seqlen 2048 --batch 8 --heads 32 --head-dim 64 --mask full --schedule shift"
)
shapes128=(
  "h128f:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128f8k:--seqlen 8192 --batch 2 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128c:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
)
declare -A CG=( [c]="" [m64]="--block-m 64" [m64s4]="--block-m 64" [m64s3d3]="--block-m 64" [s3d1]="" )
declare -A VF=( [c]="" [m64]="" [m64s4]="-DDASHC_AB_STAGES=4" [m64s3d3]="-DDASHC_AB_STAGES=3 -DDASHC_AB_DQ_STAGES=3" [s3d1]="-DDASHC_AB_STAGES=3 -DDASHC_AB_DQ_STAGES=1" )
v64=(c m64 m64s4 m64s3d3); v128=(c s3d1)
gen() { # dir flags variant
  $B codegen $2 ${CG[$3]} --arch sm90a -o $1 > /dev/null || echo "codegen failed $1"
  sed -i "s|-o harness harness.cu|${VF[$3]} -o harness harness.cu|" $1/nvcc-command.txt
}
for e in "${shapes64[@]}"; do for v in "${v64[@]}"; do gen $S/${e%%:*}/$v "${e#*:}" $v; done; done
for e in "${shapes128[@]}"; do for v in "${v128[@]}"; do gen $S/${e%%:*}/$v "${e#*:}" $v; done; done
# correctness of the new variants: odd shapes (q tiles with no visit, KV past seqlen), FP32 reference, 3 repeat runs
for mask in full causal; do
  for v in m64 m64s4 m64s3d3; do for det in "" "--nondeterministic"; do
    gen $S/chk/64$mask$v${det:+nd} "--seqlen 3000 --seqlen-k 1000 --heads 2 --head-dim 64 --mask $mask --schedule descending $det" $v
    gen $S/chk/64$mask${v}r${det:+nd} "--seqlen 1000 --seqlen-k 3000 --heads 2 --head-dim 64 --mask $mask --schedule descending $det" $v
  done; done
  gen $S/chk/128$mask"s3d1" "--seqlen 3000 --seqlen-k 1000 --heads 2 --head-dim 128 --mask $mask --schedule descending" s3d1
  gen $S/chk/128$mask"s3d1r" "--seqlen 1000 --seqlen-k 3000 --heads 2 --head-dim 128 --mask $mask --schedule descending" s3d1
done
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo built $SECONDS
for d in $S/chk/*; do (cd $d && ./harness schedule.txt --check --repeat-runs 3 --reps 2 > run.json 2>&1; python3 -c "import json;d=json.load(open('run.json'));c=d['check'];print('$d',d['status'],d['deterministic'],d['repeatable'],d['poison_ok'],d['finite'],c['rel_l2_dq'],c['rel_l2_dk'],c['rel_l2_dv'],d['main_kernel'])" || echo "CHECK FAILED $d"); done
run_round() {
  for e in "$@"; do
    name=${e%%:*}; line="round $round $name"
    for v in $(ls $S/$name); do
      (cd $S/$name/$v && ./harness schedule.txt --no-check --reps 20 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      line="$line $v=$(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); print(round(d['tflops']['main'],1),'/',round(d['tflops']['total'],1))" 2>/dev/null)"
    done
    echo "$line"
  done
}
for round in 1 2; do run_round "${shapes64[@]}" "${shapes128[@]}"; done
for d in $S/*/*; do rm -f $d/harness; done
tar czf $OUT/ab.tgz -C $S --exclude schedule.txt . ; echo done $SECONDS
