#!/usr/bin/env bash
# scratch: A/B of the deferred dQ (warpgroups decoupled: kDeferDq), without the wgmma serialization of run 61; persistent launch
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
S=/tmp/ab; mkdir -p $S
shapes=(
  "h64f:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule spt"
  "h64f8k:--seqlen 8192 --batch 2 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64c:--seqlen 16384 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
  "h64c8k:--seqlen 8192 --batch 2 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
  "h128f:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128f8k:--seqlen 8192 --batch 2 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128c:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "h64f2k:--seqlen 2048 --batch 8 --heads 32 --head-dim 64 --mask full --schedule shift"
)
declare -A BIN=( [c]=target/dashc-base [n]=target/dashc-new [d]=target/dashc-new )
declare -A VF=( [c]="" [n]="" [d]="-DDASHC_DEFER_DQ=1" )
gen() { # dir flags variant
  ${BIN[$3]} codegen $2 --arch sm90a -o $1 > /dev/null || echo "codegen failed $1"
  sed -i "s|-o harness harness.cu|${VF[$3]} -o harness harness.cu|" $1/nvcc-command.txt
}
for e in "${shapes[@]}"; do for v in c n d; do gen $S/${e%%:*}/$v "${e#*:} --launch persistent" $v; done; done
for hd in 64 128; do for mask in full causal; do for launch in in-order persistent; do for det in "" "--nondeterministic"; do
  gen $S/chk/$hd$mask$launch${det:+nd} "--seqlen 3000 --seqlen-k 1000 --heads 2 --head-dim $hd --mask $mask --schedule descending --launch $launch $det" d
  gen $S/chk/$hd$mask${launch}r${det:+nd} "--seqlen 1000 --seqlen-k 3000 --batch 2 --heads 3 --head-dim $hd --mask $mask --schedule descending --launch $launch $det" d
done; done; done; done
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo built $SECONDS
for d in $S/chk/*; do (cd $d && timeout 120 ./harness schedule.txt --check --repeat-runs 3 --reps 2 > run.json 2>&1; python3 -c "import json;d=json.load(open('run.json'));c=d['check'];print('$d',d['status'],d['launch'],d['deterministic'],d['repeatable'],d['poison_ok'],d['finite'],c['rel_l2_dq'],c['rel_l2_dk'],c['rel_l2_dv'])" || { echo "CHECK FAILED $d"; tail -c 600 run.json; }); done
echo checked $SECONDS
for round in 1 2; do
  for e in "${shapes[@]}"; do
    name=${e%%:*}; line="round $round $name"
    for v in c n d; do
      (cd $S/$name/$v && timeout 120 ./harness schedule.txt --no-check --reps 20 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      line="$line $v=$(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); print(round(d['tflops']['main'],1),'/',round(d['tflops']['total'],1), d['repeatable'])" 2>/dev/null)"
    done
    echo "$line"
  done
done
for d in $S/*/*; do rm -f $d/harness; done
tar czf $OUT/ab.tgz -C $S --exclude schedule.txt . ; echo done $SECONDS
