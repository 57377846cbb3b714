#!/usr/bin/env bash
# Is the main kernel's time a function of where its buffers lie? Runs 133-136 measured one schedule's main kernel
# at 4.9 and at 5.4 ms from one process to the next, at the same clock. For each of two configurations (the split
# schedules of hd64 causal 16384 and hd128 full 4096), PROCS fresh harness processes (default 6), each timing the
# main kernel (median of 10) with its own buffers and then with the dQ accumulator moved TRIALS times (default 6;
# harness --placement-trials). Carry target/dashc-dev and target/cutlass-wheel. Output: $OUT/placement/*.json and
# a table on stdout.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
R=$OUT/placement; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $R/device.txt
CUTLASS_INCLUDE=$(WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh) || exit 2
export CUTLASS_INCLUDE
configs=("hd64-causal-16384|--seqlen 16384 --batch 1 --heads 32 --head-dim 64 --mask causal --schedule spread-symmetric-shift"
         "hd128-full-4096|--seqlen 4096 --batch 4 --heads 16 --head-dim 128 --mask full --schedule shift")
for c in "${configs[@]}"; do  # render and build both at once
  name=${c%%|*}; flags=${c#*|}; g=/tmp/placement-$name
  rm -rf $g && target/dashc-dev codegen --arch sm90 $flags --split-tail -o $g > $R/codegen-$name.log 2>&1 &&
    (cd $g && eval "$(cat nvcc-command.txt)" > build.log 2>&1 || echo "build failed $name") &
done
wait
echo "built at ${SECONDS}s"
for c in "${configs[@]}"; do
  name=${c%%|*}; g=/tmp/placement-$name
  [ -x $g/harness ] || { echo "no harness for $name"; continue; }
  for i in $(seq 1 ${PROCS:-6}); do
    (cd $g && ./harness schedule.txt --no-check --reps 10 --repeat-runs 2 --placement-trials ${TRIALS:-6}) \
      > $R/$name-proc$i.json 2> $R/$name-proc$i.err || echo "run failed $name $i"
  done
  echo "$name done at ${SECONDS}s"
done
python3 - "$R" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*-proc*.json")):
    try:
        r = json.load(open(f))
    except Exception:
        print(f, "no result"); continue
    trials = " ".join(f"{t['main_median']:.3f}" for t in r.get("placement_trials", []))
    print(f"{f.split('/')[-1]:32s} {r['status']:4s} main {r['time_ms']['main_median']:.3f} (min {r['time_ms']['main_min']:.3f}) "
          f"MHz {r['clocks']['sm_mhz_median'] if r.get('clocks') else '-'} | moved accumulator: {trials}")
PY
