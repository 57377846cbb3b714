#!/usr/bin/env bash
# FlashAttention-4 and dashc on the same rows, interleaved on one device machine: ROUNDS rounds (default 3), each
# timing FA4 deterministic and not (the shared anchors.py, REPS medians, both masks) and `dashc bench` of the same
# rows, the two in alternating order, with the SM clock, power and throttle reasons logged every 200 ms. One 20-rep
# median moves by several percent on the long rows from one measurement to the next (run 82); the rounds show by
# how much, for FA4 and dashc alike. dashc's round N is `bench --first-round N`: even rounds run its configurations,
# schedules and builds in reverse (runs 87-89 predate this and ran dashc in the usual order every round).
# Environment: SEQLENS (default 8192,16384), MASKS (dashc's masks, default full,causal; FA4 always times both),
# SCHEDULES, BENCH_FLAGS (more `dashc bench` flags, e.g. --split-tail), REPS, ROUNDS, FIRST_ROUND (the number of the first round, so that a later call on the same machine
# continues the numbering), FA4=0 (dashc only), LAST_ROUND_BEFORE (no round starts after this many seconds),
# FA4_GAPLESS=1 (FA4 timed by bench/scripts/fa4_rows.py instead of anchors.py: anchors.py's way and gapless, the host
# two steps ahead of the GPU as in training, both in one process; its anchors.json has both).
# The FA4 wheels travel as in bench/scripts/fa4-bench-run.sh: first `PART=park bash bench/scripts/fa4-bench-run.sh`
# carrying target/fa4A, then this script, on the still warm machine, carrying target/fa4B, target/dashc-dev and
# target/cutlass-wheel (bench/results moved out of the working tree for both calls: 64 MiB limit). FA4 is
# installed once per machine: a later call with FA4=1 still needs target/fa4B (for anchors.py).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
REPO=$PWD; D=target/dashc-dev; W=/tmp/dashc-run; R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/device.txt
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
[ "${FA4:-1}" = 1 ] && { source bench/scripts/fa4-install.sh || exit 1; }
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 > $R/smi.csv 2>/dev/null &
SMI=$!
fa4() {
  mkdir -p $R/fa4-round$1
  echo "round $1 fa4 start ${SECONDS}s" >> $R/events.txt
  local script=$REPO/target/fa4B/anchors.py
  [ "${FA4_GAPLESS:-0}" = 1 ] && script=$REPO/bench/scripts/fa4_rows.py
  (cd $R/fa4-round$1 && SEQLENS=${SEQLENS:-8192,16384} PROVIDERS=fa4-det,fa4 REPS=${REPS:-20} RESULTS_DIR=. timeout ${FA4_LIMIT:-200} \
    python3 -c "import site,runpy; site.addsitedir('/tmp/site'); runpy.run_path('$script', run_name='__main__')" \
    > fa4.log 2>&1)
}
dashc() {
  mkdir -p $R/dashc-round$1
  echo "round $1 dashc start ${SECONDS}s" >> $R/events.txt
  $D bench --arch sm90 --work-dir $W --reps ${REPS:-20} --seqlens ${SEQLENS:-8192,16384} --masks ${MASKS:-full,causal} --no-check \
    --schedules ${SCHEDULES:-naive,shift,spread-shift,symmetric-shift,spread-symmetric-shift} --out $R/dashc-round$1 \
    --first-round $1 ${BENCH_FLAGS:-} > $R/dashc-round$1/bench.log 2>&1
}
first=${FIRST_ROUND:-1}
for round in $(seq $first $((first + ${ROUNDS:-3} - 1))); do
  [ $round -gt $first ] && [ $SECONDS -gt ${LAST_ROUND_BEFORE:-380} ] && { echo "round $round skipped (time)"; break; }
  if [ "${FA4:-1}" != 1 ]; then dashc $round
  elif [ $((round % 2)) = 1 ]; then fa4 $round; dashc $round; else dashc $round; fa4 $round; fi
  echo "round $round done at ${SECONDS}s"
done
kill $SMI
# The summary also goes to a file, so that no cut of the output loses the medians table, which comes first (runs
# 233-234 lost it: the call kept the output's last 30 lines and then overwrote the raw archive this script made).
python3 bench/scripts/summarize-interleaved.py $R | tee $OUT/summary.md
tar czf $OUT/raw.tgz -C $OUT raw && rm -rf $R
echo "packed: $OUT/raw.tgz, $OUT/summary.md (raw/ removed; do not pack it again)"
