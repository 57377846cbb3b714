#!/usr/bin/env bash
# Schedule files for the dQ-finalizer A/B (finalize-ab-run.sh beside this script), rendered here (no GPU needed) with
# `dashc codegen` into target/finalize-ab/: the 24 paper configurations with one schedule each for timing (full:
# spread-shift, causal: spread-symmetric-shift, plus naive at hd64 full 8192 and 16384, where a unit ends many dQ
# tiles in a row), and odd shapes x several schedules for the FP32 checks. Persistent launch (the sm90 default)
# unless the name says in-order.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${DASHC:-target/debug/dashc}
O=target/finalize-ab
rm -rf $O && mkdir -p $O/time $O/check
render() {  # out-name, then codegen flags
  local name=$1; shift
  $D codegen --arch sm90 "$@" -o /tmp/finalize-ab-render > /dev/null
  cp /tmp/finalize-ab-render/schedule.txt "$name"
  rm -rf /tmp/finalize-ab-render
}
for hd in 64 128; do for s in 512 1024 2048 4096 8192 16384; do
  shape="--seqlen $s --batch $((16384 / s)) --heads $((2048 / hd)) --head-dim $hd"
  render $O/time/hd$hd-full-$s-spread-shift.txt $shape --mask full --schedule spread-shift
  render $O/time/hd$hd-causal-$s-spread-symmetric-shift.txt $shape --mask causal --schedule spread-symmetric-shift
done; done
for s in 8192 16384; do
  render $O/time/hd64-full-$s-naive.txt --seqlen $s --batch $((16384 / s)) --heads 32 --head-dim 64 --mask full --schedule naive
done
for hd in 64 128; do for mask in full causal; do
  if [ $mask = full ]; then scheds="naive spt shift spread-shift"; else scheds="naive descending symmetric-shift spread-symmetric-shift"; fi
  for shape in "--seqlen 1000 --batch 2 --heads 3" "--seqlen 3000 --batch 3 --heads 5" \
               "--seqlen 1000 --seqlen-k 3000 --heads 2" "--seqlen 3000 --seqlen-k 1000 --heads 2" \
               "--seqlen 2048 --batch 8 --heads $((2048 / hd))"; do
    for sch in $scheds; do
      render "$O/check/hd$hd-$mask-$(echo $shape | tr -d ' -')-$sch.txt" $shape --head-dim $hd --mask $mask --schedule $sch
    done
  done
  render "$O/check/hd$hd-$mask-seqlen2048batch8-naive-inorder.txt" --seqlen 2048 --batch 8 --heads $((2048 / hd)) \
    --head-dim $hd --mask $mask --schedule naive --launch in-order
done; done
# One source tree per configuration (the harness reads the schedule at run time).
for hd in 64 128; do for mask in full causal; do
  $D codegen --arch sm90 --seqlen 1024 --heads 2 --head-dim $hd --mask $mask --schedule naive -o $O/build-hd$hd-$mask > /dev/null
done; done
echo "$(ls $O/time | wc -l) timing and $(ls $O/check | wc -l) check schedules in $O"
