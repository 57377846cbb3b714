#!/usr/bin/env bash
# scratch: postprocess through shared memory + no dq_accum zeroing in the det sm90 build: checks, A/B of total time, ncu durations
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
S=/tmp/ab; mkdir -p $S
shapes=(
  "h64f512:--seqlen 512 --batch 32 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64f2k:--seqlen 2048 --batch 8 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64f16k:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule shift"
  "h64c1k:--seqlen 1024 --batch 16 --heads 32 --head-dim 64 --mask causal --schedule symmetric-shift"
  "h128f512:--seqlen 512 --batch 32 --heads 16 --head-dim 128 --mask full --schedule shift"
  "h128c2k:--seqlen 2048 --batch 8 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "h128c16k:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "h64f512nd:--seqlen 512 --batch 32 --heads 32 --head-dim 64 --mask full --schedule shift --nondeterministic"
)
for entry in "${shapes[@]}"; do
  name=${entry%%:*}; flags=${entry#*:}
  target/dashc-dev codegen $flags --arch sm90a -o $S/$name/base > /dev/null || echo "codegen failed $name"
  target/dashc-new codegen $flags --arch sm90a -o $S/$name/new > /dev/null || echo "codegen failed $name"
done
n=0
for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2"; do
  for hd in 64 128; do for mask in full causal; do
    n=$((n+1)); target/dashc-new codegen $shape --head-dim $hd --mask $mask --schedule descending --arch sm90a -o $S/chk/c$n > /dev/null; echo "$shape hd$hd $mask det" > $S/chk/c$n/what.txt
    n=$((n+1)); target/dashc-new codegen $shape --head-dim $hd --mask $mask --schedule naive --nondeterministic --arch sm90a -o $S/chk/c$n > /dev/null; echo "$shape hd$hd $mask nondet" > $S/chk/c$n/what.txt
  done; done
done
ls -d $S/*/* | xargs -P 16 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo built $SECONDS
bad=0
for d in $S/chk/*; do (cd $d && timeout 120 ./harness schedule.txt --check --repeat-runs 3 --reps 2 > run.json 2>run.err; python3 -c "
import json;d=json.load(open('run.json'));c=d['check'];w='$(cat $d/what.txt)'
ok=d['status']=='ok' and d['poison_ok'] and c['ran'] and (d['repeatable'] or 'nondet' in w)
print(('ok ' if ok else 'BAD ')+w,d['repeatable'],c['rel_l2_dq'],c['rel_l2_dk'],c['rel_l2_dv'])" || echo "CHECK FAILED $(cat $d/what.txt)"); done
target/dashc-new run --arch sm80 --seqlen 3000 --seqlen-k 1000 --heads 2 --head-dim 128 --mask causal --schedule descending --check --reps 2 --work-dir /tmp/w80 2>&1 | tail -4
for round in 1 2; do
  for entry in "${shapes[@]}"; do
    name=${entry%%:*}
    line="round $round $name"
    for v in base new; do
      (cd $S/$name/$v && timeout 120 ./harness schedule.txt --no-check --reps 20 > run$round.json 2> run$round.err) || echo "RUN FAILED $name $v"
      line="$line $v=$(python3 -c "import json; d=json.load(open('$S/$name/$v/run$round.json')); t=d['time_ms']; print(round(t['total_median'],4), round(t['main_median'],4))" 2>/dev/null)"
    done
    echo "$line"
  done
done
for v in base new; do (cd $S/h64f512/$v && ncu --clock-control none -k regex:"process" -c 2 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed ./harness schedule.txt --no-check --reps 1 --warmup 0 --repeat-runs 2 2>&1 | grep -E "void|duration|dram__" | cut -c1-100); done
for d in $S/*/*; do rm -f $d/harness; done
tar czf $OUT/ab.tgz -C $S --exclude schedule.txt --exclude '*.cu' --exclude '*.cuh' --exclude '*.h' . ; echo done $SECONDS
