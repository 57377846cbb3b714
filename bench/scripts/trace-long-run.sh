#!/usr/bin/env bash
# The full-mask 16384 rows against the model (bench/NOTES.md, runs 95-100): every schedule there is predicted
# 4.5-12% fast, and the SM clock explains much of it but not all (hd64 spread-shift ran at 1980 MHz in run 96 and
# was as slow as its neighbours at 1830-1890 MHz). This traces both head dims' spread-shift at seqlen 16384 and at
# 8192 (a calibration shape, for comparison), in-order launch, with the costs of COSTS_FILE (default: calibrate
# first, which takes about 100 s). Each run's log ends with its phases beside the calibration's (`dashc run
# --trace` prints them: which phase grows at 16384); the measured timelines (docs/timeline-format.md) come back too.
# Usage on the device machine, with target/dashc-dev and target/cutlass-wheel carried:
#   bash bench/scripts/trace-long-run.sh
# Writes $OUT/trace-long.tgz.part-aa, -ab, ... (15 MiB pieces: a device call returns files of at most 16 MiB; the
# 16384 timelines are large). Here: cat trace-long.tgz.part-* | tar xzf -
set -uo pipefail
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
[ -d "$OUT" ] || { echo "OUT=$OUT is not a folder"; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
W=/tmp/trace-long
rm -rf $W && mkdir -p $W
rc=0
pack() { tar czf - -C $W . | split -b 15M - "$OUT/trace-long.tgz.part-" && ls -la "$OUT"; }
trap 'pack; exit $rc' EXIT
step() { "$@" || { [ $rc = 0 ] && rc=1; echo "failed: $*"; }; }
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null || { rc=1; exit; }
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader | tee $W/device.txt
COSTS=${COSTS_FILE:-}
if [ -z "$COSTS" ]; then
  step $D calibrate --arch sm90 --reps 5 -o $W/costs.json > $W/calibrate.log 2>&1
  COSTS=$W/costs.json
fi
[ -f "$COSTS" ] || { echo "no costs file $COSTS"; rc=1; exit; }
cp "$COSTS" $W/costs.json 2>/dev/null
for hd in 64 128; do
  heads=$((2048 / hd))
  for seqlen in 8192 16384; do
    name=hd$hd-full-s$seqlen-spread-shift
    step $D run --arch sm90 --launch in-order --seqlen $seqlen --batch $((16384 / seqlen)) --heads $heads \
      --head-dim $hd --mask full --schedule spread-shift --no-check --reps 10 --costs $W/costs.json \
      --trace $W/$name.json > $W/$name.log 2>&1
  done
done
gzip $W/*.json.partial $W/hd*.json 2>/dev/null
echo "trace-long done at ${SECONDS}s"
