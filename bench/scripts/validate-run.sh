#!/usr/bin/env bash
# Issue 5 GPU run: calibrate, validate, and one traced run (trace overhead + measured timeline).
# Usage on the device machine: bash bench/scripts/validate-run.sh  (writes under $OUT), with target/dashc-dev and
# target/cutlass-wheel carried. ARCH picks the main loop: sm90 (default) or sm80. KEEP_TRACES=DIR keeps the
# calibration traces (docs/trace-format.md) in DIR. ROUNDS=N measures validate's rows N times in alternating order
# (`validate --rounds`), FIRST_ROUND=N numbers the first of them (`--first-round`: round 2 alone runs the reversed
# order, so two calls of one round each, FIRST_ROUND 1 then 2, make an alternating pair; merge their raw files with
# `dashc validate --from-raw A --from-raw B`); REPS=N sets the repetitions per measurement (default 10); LAUNCH=persistent
# measures validate's rows with the persistent launch (the sm90 default in `run` and `bench`; calibrate always
# traces the in-order one). SCHEDULES=LIST restricts validate's schedules; VALIDATE_FLAGS adds flags (e.g.
# --split-tail, --idle-ms 500), CALIBRATE_FLAGS adds calibrate's (e.g. --idle-ms 500, so that the traced run, its
# last timed one, starts nearer rest). PART splits the work over two calls (run 84's whole script, calibrate and one round, took
# 403 s on an H100; the per-call limit is 600 s):
#   PART=all (default): everything in one call;
#   PART=calibrate: calibrate and the traced run; costs.json is also kept in /tmp/dashc-costs.json on the machine;
#   PART=validate: validate under COSTS_FILE (default /tmp/dashc-costs.json, left by PART=calibrate on the same
#     warm machine). One round at REPS=10 took 289 s on an H100 (run 94), two rounds about 600 s, more than one
#     call: run ROUNDS=1 twice (FIRST_ROUND=1, then 2) and merge.
# Everything the call writes is packed into $OUT/validate-run.tgz, the only file left there, also when a step fails
# (a device call returns only a few files).
set -uo pipefail
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
[ -d "$OUT" ] || { echo "OUT=$OUT is not a folder"; exit 2; }
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
A="--arch ${ARCH:-sm90}"
PART=${PART:-all}
case $PART in all|calibrate|validate) ;; *) echo "PART must be all, calibrate or validate (got $PART)"; exit 2 ;; esac
# Whatever happens, everything written under $OUT is packed into one archive, which goes in before the rest is
# removed (a kill in between leaves both); the exit status is the first failed step's.
rc=0
pack() {
  cd -- "$OUT" || return
  tar czf /tmp/validate-run.tgz --exclude=./validate-run.tgz . && mv /tmp/validate-run.tgz . &&
    find . -mindepth 1 -maxdepth 1 ! -name validate-run.tgz -exec rm -rf {} + && ls -la
}
trap 'pack; exit $rc' EXIT
step() { "$@" || { [ $rc = 0 ] && rc=1; echo "failed: $*"; }; }
[ "${ARCH:-sm90}" = sm90 ] && WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
rm -rf /tmp/vdoc && mkdir -p /tmp/vdoc
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
if [ $PART = all ] || [ $PART = calibrate ]; then
  step $D calibrate $A --reps 5 ${CALIBRATE_FLAGS:-} ${KEEP_TRACES:+--keep-traces $KEEP_TRACES} -o $OUT/costs.json \
    > >(tee $OUT/calibrate.log) 2>&1
  [ -f $OUT/costs.json ] || { rc=1; exit; }
  cp $OUT/costs.json /tmp/dashc-costs.json
  step $D run $A --seqlen 1024 --batch 16 --heads 16 --head-dim 128 --mask causal --schedule descending --no-check \
    --reps 20 --costs $OUT/costs.json --trace $OUT/trace-causal-1024.json > >(tee $OUT/run-trace.log) 2>&1
  echo "calibrate part done at ${SECONDS}s"
fi
if [ $PART = validate ]; then
  COSTS=${COSTS_FILE:-/tmp/dashc-costs.json}
  [ -f $COSTS ] || { echo "no costs file $COSTS: run PART=calibrate first on this warm machine"; rc=1; exit; }
  cp $COSTS $OUT/costs.json
fi
if [ $PART = all ] || [ $PART = validate ]; then
  step $D validate $A ${LAUNCH:+--launch $LAUNCH} ${SCHEDULES:+--schedules $SCHEDULES} ${VALIDATE_FLAGS:-} --costs $OUT/costs.json --no-check --reps ${REPS:-10} --rounds ${ROUNDS:-1} \
    --first-round ${FIRST_ROUND:-1} --raw $OUT/validate-raw.json --doc /tmp/vdoc/validation.md \
    > >(tee $OUT/validate.log) 2>&1
  [ -f /tmp/vdoc/validation.md ] && cp /tmp/vdoc/validation.md $OUT/
fi
