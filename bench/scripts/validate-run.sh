#!/usr/bin/env bash
# Issue 5 GPU run: calibrate, validate, and one traced run (trace overhead + measured timeline).
# Usage on the device machine: bash bench/scripts/validate-run.sh  (writes under $OUT)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
mkdir -p /tmp/vdoc
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
$D calibrate --reps 5 -o $OUT/costs.json 2>&1 | tee $OUT/calibrate.log
[ -f $OUT/costs.json ] || exit 1
$D validate --costs $OUT/costs.json --no-check --reps 10 --raw $OUT/validate-raw.json --doc /tmp/vdoc/validation.md 2>&1 | tee $OUT/validate.log
$D run --seqlen 1024 --batch 16 --heads 16 --head-dim 128 --mask causal --schedule descending --no-check --reps 20 \
  --costs $OUT/costs.json --trace $OUT/trace-causal-1024.json 2>&1 | tee $OUT/run-trace.log
ls -la $OUT
