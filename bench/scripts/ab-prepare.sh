#!/usr/bin/env bash
# Prepares a kernel A/B of the sm90 deterministic main loop: the working tree's templates ("new") against those of
# BASE (a commit, default HEAD), for bench/scripts/ab-run.sh on the device machine. Everything is rendered here (no
# GPU needed), so the device only compiles four harnesses per side (head dim x mask; the harness reads its schedule
# at run time) instead of one per shape:
#   target/ab/new-hdD-MASK, target/ab/base-hdD-MASK   source trees (`dashc codegen --arch sm90`);
#   target/ab/time/*.txt    timing schedules: the 24 paper rows (full: spread-shift, causal: spread-symmetric-shift),
#                           plus naive at hd64 full 8192 and 16384 (a unit that ends many dQ tiles in a row);
#   target/ab/check/*.txt   FP32-check schedules: odd shapes and seqlen 2048, four schedules per configuration, and
#                           one in-order schedule per configuration;
# packed into target/ab.tgz (about 9 MB; carry it with target/cutlass-wheel). Persistent launch (the sm90 default)
# unless a name says in-order. Usage: bash bench/scripts/ab-prepare.sh [BASE]
# (Runs 101-103 used the first form of this pair: bench/results/finalize-ab-2026-11-26-h200/ at commit 8a48641.)
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:-HEAD}
base_rev=$(git rev-parse --verify "$BASE^{commit}")
O=target/ab
rm -rf $O && mkdir -p $O/time $O/check
cargo build --quiet -p dashc
D=target/debug/dashc
CUTLASS_INCLUDE=${CUTLASS_INCLUDE:-$(kernels/fetch-cutlass.sh)}
export CUTLASS_INCLUDE
# The base side's dashc, built from a throwaway worktree of BASE (its templates are compiled into the binary).
wt=$(mktemp -d /tmp/dashc-ab-base.XXXXXX)
trap 'git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"; rm -rf "$wt-target"' EXIT
git worktree add --quiet --detach "$wt" "$base_rev"
(cd "$wt" && CARGO_TARGET_DIR="$wt-target" cargo build --quiet -p dashc)
B="$wt-target/debug/dashc"
render() {  # out-name, then codegen flags
  local name=$1; shift
  local tmp; tmp=$(mktemp -d)
  $D codegen --arch sm90 "$@" -o "$tmp" > /dev/null
  cp "$tmp/schedule.txt" "$name"
  rm -rf "$tmp"
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
for hd in 64 128; do for mask in full causal; do
  $D codegen --arch sm90 --seqlen 1024 --heads 2 --head-dim $hd --mask $mask --schedule naive -o $O/new-hd$hd-$mask > /dev/null
  $B codegen --arch sm90 --seqlen 1024 --heads 2 --head-dim $hd --mask $mask --schedule naive -o $O/base-hd$hd-$mask > /dev/null
done; done
{
  echo "new: working tree of $(git rev-parse --short HEAD)$(git diff --quiet -- kernels || echo ' + uncommitted kernel changes')"
  echo "base: $(git rev-parse --short "$base_rev")"
} > $O/sides.txt
tar czf target/ab.tgz -C target ab
echo "$(ls $O/time | wc -l) timing and $(ls $O/check | wc -l) check schedules; $(cat $O/sides.txt | tr '\n' ';') target/ab.tgz $(du -h target/ab.tgz | cut -f1)"
