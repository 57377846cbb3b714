#!/usr/bin/env bash
# Where the main loop's time goes, instruction by instruction: one launch of the sm90 main kernel per row under
# Nsight Compute's full set with source (SASS) correlation, as run 66 did for the loop of 778bff4 and for FA4 (its
# FA4 pages, in bench/results/sm90-dev-2026-11-23-run66/, serve as the comparison: same FA4 wheel). Each launch is
# exported as the details page, the raw page and the SASS source page with its stall samples (CSV), and timed
# beforehand with the harness (median of 20, so the profile's launch can be set against the harness's figure).
# ROWS: "hd mask seqlen schedule det|atomic;..." (default: hd128 causal 16384 and hd128 full 8192, the rows where
# FA4's main kernel is 6-8% faster, run 145; hd64 causal 16384). Carry target/dashc-dev and target/cutlass-wheel.
# FA4=1 also profiles FA4's backward (non-deterministic, FA4_PROVIDERS to change) on each row's shape on this
# machine: FA4 travels as in sustain-run.sh (`PART=park bash bench/scripts/fa4-bench-run.sh` carrying target/fa4A
# first, then this script on the warm machine carrying target/fa4B as well). Output: $OUT/source.tgz; summarize
# with `python3 bench/scripts/ncu-source-summary.py` (reasons, top, phases, per-visit, range).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
D=target/dashc-dev; R=$OUT/source; mkdir -p $R
source bench/scripts/row-harness.sh
row_device_setup $R || exit 2
find_ncu || exit 3
if [ "${FA4:-0}" = 1 ]; then source bench/scripts/fa4-install.sh || exit 1; fi
ROWS=${ROWS:-"128 causal 16384 spread-symmetric-shift det;128 causal 16384 spread-symmetric-shift atomic;128 full 8192 spread-shift det;64 causal 16384 spread-symmetric-shift det"}
IFS=';' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do  # build every harness at once
  read -r hd mask seqlen schedule build <<< "$row"
  build_row_harness /tmp/src-$hd-$mask-$seqlen-$schedule-$build /dev/null $hd $mask $seqlen $schedule $build &
done
wait
echo "built at ${SECONDS}s"
export_pages() {  # name: the report's details, raw and SASS source pages
  $NCU -i /tmp/src-$1.ncu-rep --page details > $R/$1-details.txt 2>&1
  $NCU -i /tmp/src-$1.ncu-rep --page raw --csv > $R/$1-raw.csv 2>&1
  $NCU -i /tmp/src-$1.ncu-rep --page source --csv --print-source sass > $R/$1-source.csv 2>&1
}
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
  [ -f /tmp/src-$name.ncu-rep ] && export_pages $name
  echo "$name done at ${SECONDS}s"
done
if [ "${FA4:-0}" = 1 ]; then
  declare -A seen
  for row in "${rows[@]}"; do
    read -r hd mask seqlen schedule build <<< "$row"
    [ -n "${seen[$hd-$mask-$seqlen]:-}" ] && continue
    seen[$hd-$mask-$seqlen]=1
    for provider in ${FA4_PROVIDERS:-fa4}; do
      name=$hd-$mask-$seqlen-$provider
      # One step after a short rest (the script compiles FA4's kernels first); the main kernel only.
      timeout 400 $NCU --clock-control none --kernel-name regex:BackwardSm90 --launch-count 1 --set full \
        --import-source yes -o /tmp/src-$name env FA4_SITE=/tmp/site python3 bench/scripts/sustain_fa4.py \
        $hd $mask $seqlen $provider 0 0.01 /tmp/src-$name.json > $R/$name-ncu.log 2>&1 || echo "ncu failed $name"
      [ -f /tmp/src-$name.ncu-rep ] && export_pages $name
      echo "$name done at ${SECONDS}s"
    done
  done
fi
gzip -f $R/*.csv
tar czf $OUT/source.tgz -C $OUT source && rm -rf $R
