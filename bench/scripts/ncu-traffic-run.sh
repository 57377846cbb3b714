#!/usr/bin/env bash
# Where the energy goes: one launch of the backward's main kernel under Nsight Compute, dashc (deterministic and
# atomic, a schedule per row) and FA4 (deterministic and not), with a few counters: time, DRAM bytes read and
# written, L2 bytes and hit rate, instructions executed, shared-memory wavefronts. Under sustained load every
# kernel runs at the 700 W limit (runs 139-142), so what it moves and executes per FLOP sets its speed there.
# ROWS as in sustain-run.sh, "hd mask seqlen schedule [unsplit];...": the split tail unless the row says unsplit
# (default hd128 causal 16384 and hd128 full 8192, each with its best schedule and spt). FA4 as in sustain-run.sh
# (part A parked, target/fa4B carried; FA4=0 skips it). Carry target/dashc-dev and target/cutlass-wheel.
# Output: $OUT/ncu.tgz (CSV per launch) and a table on stdout.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
D=target/dashc-dev; R=$OUT/ncu; mkdir -p $R
source bench/scripts/row-harness.sh
row_device_setup $R || exit 2
find_ncu || exit 3
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
ROWS=${ROWS:-"128 causal 16384 spread-symmetric-shift;128 causal 16384 spt;128 full 8192 spread-shift;128 full 8192 spt"}
IFS=';' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do  # build every harness at once
  read -r hd mask seqlen schedule unsplit <<< "$row"
  for build in det atomic; do
    build_row_harness /tmp/ncu-$hd-$mask-$seqlen-$schedule${unsplit:+-unsplit}-$build /dev/null $hd $mask $seqlen \
      $schedule $build $unsplit &
  done
done
if [ "${FA4:-1}" = 1 ]; then source bench/scripts/fa4-install.sh || exit 1; fi
wait
echo "built at ${SECONDS}s"
profile() {  # name, then the command
  local name=$1; shift
  timeout 300 $NCU --clock-control none --launch-count 1 --metrics $METRICS --csv --print-units base "$@" > $R/$name.csv 2> $R/$name.err ||
    echo "failed $name"
}
declare -A seen
for row in "${rows[@]}"; do
  read -r hd mask seqlen schedule unsplit <<< "$row"
  schedule=$schedule${unsplit:+-unsplit}
  for build in det atomic; do
    g=/tmp/ncu-$hd-$mask-$seqlen-$schedule-$build
    (cd $g && profile $hd-$mask-$seqlen-dashc-$build-$schedule --kernel-name bwd_main_kernel \
      ./harness schedule.txt --no-check --reps 1 --warmup 0 --repeat-runs 2)
  done
  if [ "${FA4:-1}" = 1 ] && [ -z "${seen[$hd-$mask-$seqlen]:-}" ]; then
    seen[$hd-$mask-$seqlen]=1
    for p in fa4-det fa4; do
      profile $hd-$mask-$seqlen-$p --kernel-name regex:BackwardSm90 \
        env FA4_SITE=/tmp/site python3 bench/scripts/sustain_fa4.py $hd $mask $seqlen $p 0 0.01 /tmp/ncu-$p.json
    done
  fi
  echo "$hd $mask $seqlen $schedule done at ${SECONDS}s"
done
python3 - "$R" <<'PY' | tee $R/summary.txt
import csv, glob, io, sys
print("| launch | kernel | ms | DRAM read GB | DRAM write GB | L2 GB | L2 hit % | instructions (G) | smem wavefronts (G) |")
print("|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(sys.argv[1] + "/*.csv")):
    text = open(f).read()
    start = text.find('"ID"')
    if start < 0:
        print(f"| {f.split('/')[-1][:-4]} | no result | | | | | | | |"); continue
    m, kernel = {}, ""
    for r in csv.DictReader(io.StringIO(text[start:])):
        kernel = r.get("Kernel Name", "")[:40]
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "")
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1,
                 "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1e3}.get(unit, 1)
        m[r["Metric Name"]] = v * scale
    g = lambda k: m.get(k, float("nan"))
    print(f"| {f.split('/')[-1][:-4]} | {kernel} | {g('gpu__time_duration.sum'):.3f} | {g('dram__bytes_read.sum') / 1e9:.2f} | "
          f"{g('dram__bytes_write.sum') / 1e9:.2f} | {g('lts__t_bytes.sum') / 1e9:.1f} | {g('lts__t_sector_hit_rate.pct'):.1f} | "
          f"{g('sm__inst_executed.sum') / 1e9:.3f} | "
          f"{g('l1tex__data_pipe_lsu_wavefronts_mem_shared.sum') / 1e9:.3f} |")
PY
tar czf $OUT/ncu.tgz -C $OUT ncu && rm -rf $R
