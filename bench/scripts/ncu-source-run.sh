#!/usr/bin/env bash
# Where the main loop's time goes, instruction by instruction: one launch of the sm90 main kernel per row under
# Nsight Compute's full set with source (SASS) correlation, as run 66 did for the loop of 778bff4 and for FA4 (its
# FA4 pages, in bench/results/sm90-dev-2026-11-23-run66/, serve as the comparison: same FA4 wheel). Each launch is
# exported as the details page, the raw page and the SASS source page with its stall samples (CSV), and timed
# beforehand with the harness (median of 20, so the profile's launch can be set against the harness's figure).
# ROWS: "hd mask seqlen schedule det|atomic;..." (default: hd128 causal 16384 and hd128 full 8192, the rows where
# FA4's main kernel is 6-8% faster, run 145; hd64 causal 16384). Carry target/dashc-dev and target/cutlass-wheel.
# Output: $OUT/source.tgz.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
D=target/dashc-dev; R=$OUT/source; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $R/device.txt
CUTLASS_INCLUDE=$(WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh) || exit 2
export CUTLASS_INCLUDE
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -x "$NCU" ] || { echo "ncu not found"; exit 3; }
ROWS=${ROWS:-"128 causal 16384 spread-symmetric-shift det;128 causal 16384 spread-symmetric-shift atomic;128 full 8192 spread-shift det;64 causal 16384 spread-symmetric-shift det"}
IFS=';' read -ra rows <<< "$ROWS"
source bench/scripts/row-harness.sh
for row in "${rows[@]}"; do  # build every harness at once
  read -r hd mask seqlen schedule build <<< "$row"
  build_row_harness /tmp/src-$hd-$mask-$seqlen-$schedule-$build /dev/null $hd $mask $seqlen $schedule $build &
done
wait
echo "built at ${SECONDS}s"
for row in "${rows[@]}"; do
  read -r hd mask seqlen schedule build <<< "$row"
  name=$hd-$mask-$seqlen-$schedule-$build
  g=/tmp/src-$name
  [ -x $g/harness ] || { echo "no harness for $name"; continue; }
  (cd $g && ./harness schedule.txt --no-check --reps 20 > $R/$name-time.json 2> $R/$name-time.err) ||
    echo "timing failed $name"
  (cd $g && timeout 400 $NCU --clock-control none --kernel-name bwd_main_kernel --launch-count 1 --set full \
    --import-source yes -o /tmp/src-$name ./harness schedule.txt --no-check --reps 1 --warmup 0 --repeat-runs 2 \
    > $R/$name-ncu.log 2>&1) || echo "ncu failed $name"
  if [ -f /tmp/src-$name.ncu-rep ]; then
    $NCU -i /tmp/src-$name.ncu-rep --page details > $R/$name-details.txt 2>&1
    $NCU -i /tmp/src-$name.ncu-rep --page raw --csv > $R/$name-raw.csv 2>&1
    $NCU -i /tmp/src-$name.ncu-rep --page source --csv --print-source sass > $R/$name-source.csv 2>&1
  fi
  echo "$name done at ${SECONDS}s"
done
gzip -f $R/*.csv
tar czf $OUT/source.tgz -C $OUT source && rm -rf $R
