#!/usr/bin/env bash
# Sourced by sustain-run.sh and ncu-traffic-run.sh (device machine): renders one of the paper's rows (16384 tokens,
# hidden 2048, the split tail, the sm90 main loop) with `$D codegen` and builds its harness.
#   build_row_harness DIR LOG HD MASK SEQLEN SCHEDULE det|atomic
# LOG takes codegen's output; the build's goes to DIR/build.log. Needs $D (the dashc binary) and CUTLASS_INCLUDE.
# Prints "build failed DIR" when either step fails.
build_row_harness() {
  local g=$1 log=$2 hd=$3 mask=$4 seqlen=$5 schedule=$6 flag=""
  [ "$7" = atomic ] && flag=--nondeterministic
  rm -rf "$g" && $D codegen --arch sm90 --seqlen "$seqlen" --batch $((16384 / seqlen)) --heads $((2048 / hd)) \
    --head-dim "$hd" --mask "$mask" --schedule "$schedule" --split-tail $flag -o "$g" > "$log" 2>&1 &&
    (cd "$g" && eval "$(cat nvcc-command.txt)" > build.log 2>&1) || echo "build failed $g"
}
