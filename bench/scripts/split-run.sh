#!/usr/bin/env bash
# The split tail (--split-tail) on the device: FP32 checks, then timing against the unsplit schedules.
# PART=check (default all): every paper configuration up to seqlen 4096 with the spread schedules and their split
# versions, deterministic and atomic, against the FP32 reference (poison and 5-run bitwise checks included), and
# odd shapes whose units are fewer than the SMs (every unit split) or whose last KV tile is partial.
# PART=time: `bench --split-tail` of the long rows (SEQLENS, default 8192,16384) for SCHEDULES (default
# spread-shift,spread-symmetric-shift), ROUNDS rounds (default 2), so each row has both versions from one binary.
# Carry target/dashc-dev and target/cutlass-wheel (bench/scripts/prepare-carry.sh).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/split; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $R/device.txt
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
PART=${PART:-all}
if [ $PART = all ] || [ $PART = check ]; then
  for hd in 64 128; do for mask in full causal; do for s in ${CHECK_SEQLENS:-512 1024 2048 4096}; do
    sched=$([ $mask = full ] && echo spread-shift || echo spread-symmetric-shift,spt)
    $D run --arch sm90 --seqlen $s --batch $((16384 / s)) --heads $((2048 / hd)) --head-dim $hd --mask $mask --check \
      --reps 2 --nondeterministic --schedule $sched --split-tail --work-dir $W --json > $R/check-hd$hd-$mask-$s.json \
      2>>$R/check.log || echo "FAILED check hd$hd $mask $s" | tee -a $R/check.log
    echo "check hd$hd $mask $s done at ${SECONDS}s"
  done; done; done
  for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" \
               "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2"; do
    for hd in 64 128; do for mask in full causal; do
      tag=odd-hd$hd-$mask-$(echo $shape | tr -d ' -')
      $D run --arch sm90 $shape --head-dim $hd --mask $mask --check --nondeterministic --reps 2 --schedule naive,descending \
        --split-tail --work-dir $W --json > $R/$tag.json 2>>$R/check.log || echo "FAILED $tag" | tee -a $R/check.log
    done; done
  done
  echo "checks done at ${SECONDS}s"
  python3 bench/scripts/check-verdict.py 'split checks' $R/*.json
fi
if [ $PART = all ] || [ $PART = time ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 200 > $R/smi.csv 2>/dev/null &
  SMI=$!
  first=${FIRST_ROUND:-1}
  for round in $(seq $first $((first + ${ROUNDS:-2} - 1))); do
    [ $round -gt $first ] && [ $SECONDS -gt ${LAST_ROUND_BEFORE:-400} ] && { echo "round $round skipped (time)"; break; }
    mkdir -p $R/bench-round$round
    $D bench --arch sm90 --work-dir $W --reps ${REPS:-20} --seqlens ${SEQLENS:-8192,16384} --masks full,causal --no-check \
      --schedules ${SCHEDULES:-spread-shift,spread-symmetric-shift} --split-tail --out $R/bench-round$round \
      --first-round $round > $R/bench-round$round/bench.log 2>&1
    echo "round $round done at ${SECONDS}s"; tail -30 $R/bench-round$round/bench.log
  done
  kill $SMI
fi
tar czf $OUT/split.tgz -C $OUT split && rm -rf $R
