#!/usr/bin/env bash
# Issue 5 GPU run: calibrate, validate, and one traced run (trace overhead + measured timeline).
# Usage on the device machine: bash bench/scripts/validate-run.sh  (writes under $OUT), with target/dashc-dev and
# target/cutlass-wheel carried. ARCH picks the main loop: sm90 (default) or sm80. KEEP_TRACES=DIR keeps the
# calibration traces (docs/trace-format.md) in DIR. ROUNDS=N measures validate's rows N times in alternating order
# (`validate --rounds`; run 84's whole script, calibrate and one round, took 403 s on an H100, the per-call limit is
# 600 s).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
A="--arch ${ARCH:-sm90}"
[ "${ARCH:-sm90}" = sm90 ] && WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
mkdir -p /tmp/vdoc
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
$D calibrate $A --reps 5 ${KEEP_TRACES:+--keep-traces $KEEP_TRACES} -o $OUT/costs.json 2>&1 | tee $OUT/calibrate.log
[ -f $OUT/costs.json ] || exit 1
$D validate $A --costs $OUT/costs.json --no-check --reps 10 --rounds ${ROUNDS:-1} --raw $OUT/validate-raw.json --doc /tmp/vdoc/validation.md 2>&1 | tee $OUT/validate.log
$D run $A --seqlen 1024 --batch 16 --heads 16 --head-dim 128 --mask causal --schedule descending --no-check --reps 20 \
  --costs $OUT/costs.json --trace $OUT/trace-causal-1024.json 2>&1 | tee $OUT/run-trace.log
ls -la $OUT
