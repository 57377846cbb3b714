#!/usr/bin/env bash
# Issue 4 correctness pass on the device machine: every paper configuration up to seqlen 4096 x every applicable
# built-in schedule, deterministic and atomic, against the FP32 reference (plus poison and 5-run bitwise checks).
# Usage: DASHC_COMMIT=... bash bench/scripts/check-run.sh   (target/dashc-dev from bench/scripts/prepare-carry.sh, carried)
# HEAD_DIMS (default "64 128") picks the head dims: on an H100 all 16 configurations take more than one call's
# 600 s (run 178), so run HEAD_DIMS=64, then HEAD_DIMS=128. The results are packed into $OUT/check.tgz also when the
# call is cut short (a call returns at most 8 files).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
D=target/dashc-dev
A="--arch ${ARCH:-sm90}"
[ "${ARCH:-sm90}" = sm90 ] && WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
R=$OUT/check
mkdir -p $R
trap 'tar czf $OUT/check.tgz -C $OUT check && rm -rf $R' EXIT
trap 'exit 124' TERM INT  # a `timeout` around the script still packs what is done
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | tee $R/device.txt
for hd in ${HEAD_DIMS:-64 128}; do for mask in full causal; do for s in 512 1024 2048 4096; do
  $D run $A --seqlen $s --batch $((16384 / s)) --heads $((2048 / hd)) --head-dim $hd --mask $mask --check --reps 2 \
    --nondeterministic --work-dir /tmp/dashc-run --json > $R/check-hd$hd-$mask-$s.json 2>>$R/check.log \
    || echo "FAILED check hd$hd $mask $s" | tee -a $R/check.log
  echo "done hd$hd $mask $s at ${SECONDS}s"
done; done; done
