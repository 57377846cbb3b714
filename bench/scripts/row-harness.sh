#!/usr/bin/env bash
# Sourced by sustain-run.sh, ncu-traffic-run.sh and ncu-source-run.sh (device machine).
#   row_device_setup DIR   writes the device's line to DIR/device.txt (and stdout) and exports CUTLASS_INCLUDE
#                          from the carried wheel (target/cutlass-wheel); returns 2 when that fails.
#   find_ncu               sets NCU to the Nsight Compute CLI; returns 3 when there is none.
#   build_row_harness DIR LOG HD MASK SEQLEN SCHEDULE det|atomic [unsplit]
#                          renders one of the paper's rows (16384 tokens, hidden 2048, the split tail unless
#                          `unsplit` is given, the sm90 main loop) with `$D codegen` and builds its harness.
# LOG takes codegen's output; the build's goes to DIR/build.log. Needs $D (the dashc binary) and CUTLASS_INCLUDE.
# Prints "build failed DIR" when either step fails.
build_row_harness() {
  local g=$1 log=$2 hd=$3 mask=$4 seqlen=$5 schedule=$6 flag="" split=--split-tail
  [ "$7" = atomic ] && flag=--nondeterministic
  [ "${8:-}" = unsplit ] && split=""
  rm -rf "$g" && $D codegen --arch sm90 --seqlen "$seqlen" --batch $((16384 / seqlen)) --heads $((2048 / hd)) \
    --head-dim "$hd" --mask "$mask" --schedule "$schedule" $split $flag -o "$g" > "$log" 2>&1 &&
    (cd "$g" && eval "$(cat nvcc-command.txt)" > build.log 2>&1) || echo "build failed $g"
}

row_device_setup() {
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee "$1/device.txt"
  CUTLASS_INCLUDE=$(WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh) || return 2
  export CUTLASS_INCLUDE
}

find_ncu() {
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -x "$NCU" ] || { echo "ncu not found"; return 3; }
}
