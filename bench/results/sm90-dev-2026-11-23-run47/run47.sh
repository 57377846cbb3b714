#!/usr/bin/env bash
# scratch: 80-row tiles at head dim 128 (dQ transposed, one dQ writer): FP32 checks on odd shapes, A/B against 64-row tiles
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
S=/tmp/ab; mkdir -p $S; D=target/dashc-new
shapes=(
  "f16k:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
  "f8k:--seqlen 8192 --batch 2 --heads 16 --head-dim 128 --mask full --schedule shift"
  "f4k:--seqlen 4096 --batch 4 --heads 16 --head-dim 128 --mask full --schedule shift"
  "f2k:--seqlen 2048 --batch 8 --heads 16 --head-dim 128 --mask full --schedule shift"
  "c16k:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "c4k:--seqlen 4096 --batch 4 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
)
for entry in "${shapes[@]}"; do
  name=${entry%%:*}; flags=${entry#*:}
  $D codegen $flags --arch sm90a -o $S/$name/m64 > /dev/null || echo "codegen failed $name m64"
  $D codegen $flags --block-m 80 --arch sm90a -o $S/$name/m80 > /dev/null || echo "codegen failed $name m80"
done
$D codegen --seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift --block-m 80 --nondeterministic --arch sm90a -o $S/f16k/m80nd > /dev/null
n=0
for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2" "--seqlen 4096 --batch 4 --heads 16"; do
  for mask in full causal; do for sched in descending naive; do
    n=$((n+1)); $D codegen $shape --head-dim 128 --mask $mask --schedule $sched --block-m 80 --arch sm90a -o $S/chk/c$n > /dev/null || echo "codegen failed chk $shape $mask $sched"
    echo "$shape $mask $sched" > $S/chk/c$n/what.txt
  done; done
done
$D codegen --seqlen 3000 --batch 3 --heads 5 --head-dim 128 --mask causal --schedule descending --block-m 80 --nondeterministic --arch sm90a -o $S/chk/nd1 > /dev/null; echo "nondet 3000 causal" > $S/chk/nd1/what.txt
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo built $SECONDS
for d in $S/chk/*; do (cd $d && timeout 120 ./harness schedule.txt --check --repeat-runs 3 --reps 2 > run.json 2>run.err; python3 -c "import json;d=json.load(open('run.json'));c=d['check'];print('$(cat $d/what.txt)',d['status'],'rep',d['repeatable'],'poison',d['poison_ok'],c['ran'],c['rel_l2_dq'],c['rel_l2_dk'],c['rel_l2_dv'])" || { echo "CHECK FAILED $(cat $d/what.txt)"; tail -3 run.err; }); done
for round in 1 2; do
  for entry in "${shapes[@]}"; do
    name=${entry%%:*}
    line="round $round $name"
    for v in m64 m80 m80nd; do
      [ -d $S/$name/$v ] || continue
      (cd $S/$name/$v && timeout 120 ./harness schedule.txt --no-check --reps 20 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      line="$line $v=$(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); print(round(d['tflops']['main'],1), round(d['tflops']['total'],1))" 2>/dev/null)"
    done
    echo "$line"
  done
done
for d in $S/*/*; do rm -f $d/harness; done
tar czf $OUT/ab.tgz -C $S --exclude schedule.txt --exclude '*.cu' --exclude '*.cuh' --exclude '*.h' . ; echo done $SECONDS
