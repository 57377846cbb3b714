#!/usr/bin/env bash
# Is the main kernel's time a function of where its buffers lie, or of when it runs? Runs 133-137 measured one
# schedule's main kernel at 4.9 and at 5.4 ms within and between processes, at the same clock. For each of two
# configurations (the split schedules of hd64 causal 16384 and hd128 full 4096), PROCS fresh harness processes
# (default 6), each timing the main kernel (REPS repetitions, default 10) with its own buffers and then TRIALS more
# times (default 6; harness --placement-trials): even trials with the dQ accumulator in a new buffer, odd trials with
# the first buffer again. Every repetition carries an NVML reading (SM clock, board power, limit flags: "main_reps").
# SUSTAIN=N (default 0) adds one process per configuration that times N repetitions in a row, to show the time
# against power under sustained load. Carry target/dashc-dev and target/cutlass-wheel. Output:
# $OUT/placement.tgz (placement/*.json) and a table on stdout.
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
    (cd $g && ./harness schedule.txt --no-check --reps ${REPS:-10} --repeat-runs 2 --placement-trials ${TRIALS:-6}) \
      > $R/$name-proc$i.json 2> $R/$name-proc$i.err || echo "run failed $name $i"
  done
  if [ "${SUSTAIN:-0}" -gt 0 ]; then
    (cd $g && ./harness schedule.txt --no-check --reps $SUSTAIN --repeat-runs 2) \
      > $R/$name-sustain.json 2> $R/$name-sustain.err || echo "run failed $name sustain"
  fi
  echo "$name done at ${SECONDS}s"
done
python3 - "$R" <<'PY'
import glob, json, statistics, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    try:
        r = json.load(open(f))
    except Exception:
        print(f, "no result"); continue
    name = f.split('/')[-1]
    t = r.get("placement_trials", [])
    first = [x["main_median"] for x in t if x["pad_bytes"] == 0]
    moved = [x["main_median"] for x in t if x["pad_bytes"] > 0]
    c = r.get("clocks") or {}
    print(f"{name:32s} {r['status']:4s} main {r['time_ms']['main_median']:.3f} (min {r['time_ms']['main_min']:.3f}) "
          f"MHz {c.get('sm_mhz_median', '-')} W {c.get('power_w_median', '-')} | "
          f"trials, first buffer: {' '.join(f'{x:.3f}' for x in first)} | moved: {' '.join(f'{x:.3f}' for x in moved)}")
    reps = r.get("main_reps", [])
    if reps:  # the repetitions in order: ms/watts, 10 to a line
        cells = [f"{ms:.2f}/{w:.0f}{'*' if lim else ''}" if w is not None else f"{ms:.2f}/-" for ms, mhz, w, lim in reps]
        for i in range(0, len(cells), 10):
            print("    " + " ".join(cells[i:i + 10]))
        timed = [(ms, w) for ms, mhz, w, lim in reps if w is not None]
        if len(timed) > 2:
            ms, w = zip(*timed)
            try:
                print(f"    correlation ms~watts {statistics.correlation(ms, w):+.2f} over {len(timed)} readings "
                      f"(* = power or thermal limit flagged)")
            except statistics.StatisticsError:
                pass
PY
tar czf $OUT/placement.tgz -C $OUT placement && rm -rf $R  # one file: the device call returns a limited number
