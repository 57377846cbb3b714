#!/usr/bin/env bash
# Traces of the short rows (seqlen 512 and 1024, both masks and head dims, every built-in schedule, in-order launch),
# fitted with `dashc calibrate` and kept, so that the costs of short units can be compared with the standard
# calibration (seqlen 2048 and 8192) offline: `dashc calibrate --from-traces DIR` with the same flags.
# The question (bench/NOTES.md, runs 92-94): the model underpredicts spt and the symmetric shifts at seqlen 512-1024
# by 4-14% while naive and descending are within 4%; which phase of a unit is longer than the fit says?
# Usage on the device machine, with target/dashc-dev and target/cutlass-wheel carried:
#   bash bench/scripts/short-units-run.sh      (writes $OUT/short-units.tgz)
set -uo pipefail
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
[ -d "$OUT" ] || { echo "OUT=$OUT is not a folder"; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
W=/tmp/short-units
rm -rf $W && mkdir -p $W
rc=0
pack() { tar czf "$OUT/short-units.tgz" -C $W . && ls -la "$OUT"; }
trap 'pack; exit $rc' EXIT
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null || { rc=1; exit; }
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader | tee $W/device.txt
$D calibrate --arch sm90 --reps 5 --seqlens 512,1024 --head-dims 64,128 --masks full,causal \
  --schedules naive,descending,spt,shift,symmetric-shift,spread-shift,spread-symmetric-shift \
  --keep-traces $W/traces -o $W/costs-short.json > >(tee $W/calibrate-short.log) 2>&1 || rc=1
gzip -r $W/traces
echo "short-units done at ${SECONDS}s"
