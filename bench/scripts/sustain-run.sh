#!/usr/bin/env bash
# FA4 and dashc under sustained load, each from a GPU at rest. The power controller lets the first tens of
# milliseconds of load run about 10% faster than sustained load (bench/NOTES.md run 138), and a 20-step median mixes
# the two. Per row (ROWS, default the four long rows furthest below FA4 non-deterministic), in rotating order:
# FA4 deterministic, FA4, dashc deterministic and dashc atomic (the schedule the row's best in runs 129-130), each
# after IDLE seconds of rest (default 3), timed for about SECONDS (default 3; dashc: REPS repetitions, default 300,
# each a whole backward and a main kernel alone). Every step carries an NVML reading. Output: $OUT/sustain/*.json
# and a table (bench/scripts/summarize-sustain.py): the first steps' median ("rested"), the last third's
# ("sustained"), power and clock, and the board's energy per backward over the series.
# PROVIDERS (space-separated) replaces the four: fa4-gapless and fa4-det-gapless time FA4 with two steps queued
# ahead of the GPU, as a training loop runs (sustain_fa4.py's "gapless"), where fa4 and fa4-det wait for each step
# as anchors.py does, the GPU idling while Python launches the next.
# FA4 travels as in fa4-interleaved-run.sh: `PART=park bash bench/scripts/fa4-bench-run.sh` carrying target/fa4A
# first, then this script on the warm machine carrying target/fa4B, target/dashc-dev and target/cutlass-wheel.
# FA4=0 times dashc only.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
REPO=$PWD; D=target/dashc-dev; R=$OUT/sustain; mkdir -p $R
source bench/scripts/row-harness.sh
row_device_setup $R || exit 2
# hd mask seqlen schedule
ROWS=${ROWS:-"128 full 8192 spread-shift;128 causal 16384 spread-symmetric-shift;64 causal 16384 spread-symmetric-shift;64 full 16384 spread-shift"}
IFS=';' read -ra rows <<< "$ROWS"
for row in "${rows[@]}"; do  # build every harness at once
  read -r hd mask seqlen schedule <<< "$row"
  for build in det atomic; do
    build_row_harness /tmp/sustain-$hd-$mask-$seqlen-$build $R/codegen-$hd-$mask-$seqlen-$build.log \
      $hd $mask $seqlen $schedule $build &
  done
done
if [ "${FA4:-1}" = 1 ]; then source bench/scripts/fa4-install.sh || exit 1; fi
wait
echo "built at ${SECONDS}s"
n=0
for row in "${rows[@]}"; do
  read -r hd mask seqlen schedule <<< "$row"
  read -ra providers <<< "${PROVIDERS:-fa4-det fa4 dashc-det dashc-atomic}"
  [ "${FA4:-1}" = 1 ] || providers=(dashc-det dashc-atomic)
  k=${#providers[@]}
  for i in $(seq 0 $((k - 1))); do
    p=${providers[$(((i + n) % k))]}
    name=$hd-$mask-$seqlen-$p
    case $p in
      fa4*) FA4_SITE=/tmp/site timeout 120 python3 bench/scripts/sustain_fa4.py $hd $mask $seqlen ${p%-gapless} \
              ${IDLE:-3} ${SECONDS_PER_RUN:-3} $R/$name.json $([ "${p%-gapless}" != "$p" ] && echo gapless) \
              > $R/$name.log 2>&1 || echo "failed $name" ;;
      dashc-*) g=/tmp/sustain-$hd-$mask-$seqlen-${p#dashc-}
               (cd $g && timeout 120 ./harness schedule.txt --no-check --reps ${REPS:-300} --warmup 2 --repeat-runs 2 \
                 --idle-ms $((${IDLE:-3} * 1000))) > $R/$name.json 2> $R/$name.log || echo "failed $name" ;;
    esac
  done
  n=$((n + 1))
  echo "$hd $mask $seqlen done at ${SECONDS}s"
done
python3 bench/scripts/summarize-sustain.py $R | tee $R/summary.txt
tar czf $OUT/sustain.tgz -C $OUT sustain && rm -rf $R
