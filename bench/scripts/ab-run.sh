#!/usr/bin/env bash
# Device half of a kernel A/B (bench/scripts/ab-prepare.sh made target/ab.tgz here). Carry target/ab.tgz and
# target/cutlass-wheel. Builds the eight harnesses (new and base, head dim x mask; sm_90a, deterministic), then:
#   1. FP32 checks (poison, 5-run bitwise repeatability) of every check schedule with the new harnesses;
#   2. ROUNDS rounds (default 2) of timing, every timing schedule, the arms in rotating order: "new", "base" and,
#      with NEW_FLAGS set, "flags" (the new harness with those harness options, e.g. an A/B switch inside it);
#      with ALT_DEFINES set, "alt" (the new sources compiled with those nvcc options, e.g. -DDASHC_V_REG_BLOCKS=2: a
#      compile-time alternative timed in the same rotation; not FP32-checked unless ALT_CHECK=1).
#      Each run: --no-check --reps 20 --repeat-runs 2, whole backward and main kernel alone (medians of 20).
# Prints a summary (whole backward and main kernel, new against base, per row) and packs everything into
# $OUT/ab.tgz, or $OUT/ under AB_TGZ's name (one JSON line per run, ptxas logs, device.txt, sides.txt). About
# 100 s of building and checks plus 30 s per round and arm on an H200 (runs 101-103). Usage: ROUNDS=2 [NEW_FLAGS="..."] bash bench/scripts/ab-run.sh
# ONLY=REGEX times only the timing schedules whose name matches. SUSTAIN_REPS=N times each run as N repetitions
# after IDLE_MS (default 2000) of rest instead of 20: the GPU's power limit makes the first 40-60 ms of load about
# 10% faster than what follows (bench/NOTES.md runs 138-142), so the summary then also shows the first five whole
# backwards' median ("rested") and the last third's ("sustained"). SKIP_CHECKS=1 skips step 1; CHECK_ONLY=REGEX
# checks only the check schedules whose name matches; STOP_ON_FAIL=1 skips the timing if a check failed.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
: "${OUT:?OUT must name the folder to write to (the device machine sets it)}"
TGZ=${AB_TGZ:-target/ab.tgz}  # another prepared A/B: copy target/ab.tgz to a new name after ab-prepare.sh
[ -f $TGZ ] || { echo "$TGZ is missing: run bench/scripts/ab-prepare.sh here and carry it"; exit 2; }
I=$(WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh) || exit 2
W=/tmp/dashc-ab; R=$W/results
rm -rf $W && mkdir -p $W && tar xzf $TGZ -C $W && mv $W/ab/* $W/ && rmdir $W/ab && mkdir -p $R
trap 'tar czf $OUT/$(basename $TGZ) -C $W results' EXIT
cp $W/sides.txt $R/
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $R/device.txt
build() {  # harness folder, then extra nvcc options
  local d=$1; shift
  (cd $d && nvcc -std=c++17 -O3 -lineinfo --expt-relaxed-constexpr -I"$I" -gencode=arch=compute_90a,code=sm_90a \
     "$@" -Xptxas -v -o harness harness.cu > ptxas.log 2>&1 || echo "BUILD FAILED $d"; cp ptxas.log $R/ptxas-$(basename $d).log)
}
for d in $W/new-* $W/base-*; do build $d & done
if [ -n "${ALT_DEFINES:-}" ]; then
  for d in $W/new-*; do
    a=$W/alt-${d#$W/new-}; cp -r $d $a
    build $a $ALT_DEFINES &
  done
  echo "alt: new sources with $ALT_DEFINES" >> $R/sides.txt
fi
wait
echo "built at ${SECONDS}s"
cfg() { basename $1 | cut -d- -f1,2; }  # hd64-full from hd64-full-...
[ "${SKIP_CHECKS:-0}" = 1 ] && rm -f $W/check/*.txt
shopt -s nullglob
for f in $W/check/*.txt; do
  n=$(basename $f .txt)
  [[ -n "${CHECK_ONLY:-}" && ! $n =~ $CHECK_ONLY ]] && continue
  $W/new-$(cfg $f)/harness $f --check --reps 2 > $R/check-$n.json 2> $R/check-$n.err || echo "CHECK FAILED $n"
  if [ -n "${ALT_DEFINES:-}" ] && [ "${ALT_CHECK:-0}" = 1 ]; then
    $W/alt-$(cfg $f)/harness $f --check --reps 2 > $R/check-alt-$n.json 2> $R/check-alt-$n.err || echo "CHECK FAILED alt $n"
  fi
done
python3 - "$R" <<'PY'
import json, glob, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/check-*.json")):
    try:
        rows.append(json.load(open(f)))
    except Exception:
        rows.append({"status": "no result", "schedule": f.split("/")[-1], "shape": {}, "check": {}})
bad = [r["schedule"] + " " + str(r["shape"]) for r in rows if r["status"] != "ok"]
worst = max((r["check"].get(k) or 0) for r in rows for k in ("rel_l2_dq", "rel_l2_dk", "rel_l2_dv"))
print(f"checks: {len(rows)} results, {len(bad)} not ok {bad[:5]}, worst rel l2 {worst:.2e}")
sys.exit(1 if bad else 0)
PY
checks_ok=$?
if [ $checks_ok != 0 ] && [ "${STOP_ON_FAIL:-0}" = 1 ]; then echo "a check failed: no timing (STOP_ON_FAIL=1)"; exit 1; fi
echo "checked at ${SECONDS}s"
TIMING="--no-check --reps 20 --repeat-runs 2"
[ -n "${SUSTAIN_REPS:-}" ] && TIMING="--no-check --reps $SUSTAIN_REPS --repeat-runs 2 --idle-ms ${IDLE_MS:-2000}"
arms=(new base)
[ -n "${NEW_FLAGS:-}" ] && arms+=(flags)
[ -n "${ALT_DEFINES:-}" ] && arms+=(alt)
for round in $(seq 1 ${ROUNDS:-2}); do
  i=0
  for f in $W/time/*.txt; do
    n=$(basename $f .txt)
    [[ -n "${ONLY:-}" && ! $n =~ $ONLY ]] && continue
    for k in $(seq 0 $(( ${#arms[@]} - 1 ))); do
      a=${arms[$(( (i + k + round) % ${#arms[@]} ))]}
      case $a in
        new) $W/new-$(cfg $f)/harness $f $TIMING ;;
        base) $W/base-$(cfg $f)/harness $f $TIMING ;;
        flags) $W/new-$(cfg $f)/harness $f $TIMING $NEW_FLAGS ;;
        alt) $W/alt-$(cfg $f)/harness $f $TIMING ;;
      esac > $R/time-r$round-$n-$a.json 2> $R/time-r$round-$n-$a.err || echo "RUN FAILED $n $a"
    done
    i=$((i + 1))
  done
  echo "round $round at ${SECONDS}s"
done
python3 - "$R" <<'PY'
import json, glob, sys, collections, statistics
t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(sys.argv[1] + "/time-*.json"):
    rest = f.split("/")[-1][len("time-"):-len(".json")].split("-", 1)[1]
    row, arm = rest.rsplit("-", 1)
    try:
        r = json.load(open(f))
    except Exception:
        continue
    if r["status"] == "ok":
        t[row][arm].append(r)
arms = sorted({a for v in t.values() for a in v}, key=["base", "new", "flags", "alt"].index)
print(f"{'row':44s} " + " ".join(f"{a + ' ms':>9s}" for a in arms) + f" {'new/base':>9s} {'main n/b':>9s}")
for row in sorted(t):
    tot = {a: statistics.mean(r["time_ms"]["total_median"] for r in v) for a, v in t[row].items()}
    main = {a: statistics.mean(r["time_ms"]["main_median"] for r in v) for a, v in t[row].items()}
    cells = " ".join(f"{tot[a]:9.3f}" if a in tot else f"{'-':>9s}" for a in arms)
    ratio = lambda d: f"{d['new'] / d['base'] - 1:+9.2%}" if "new" in d and "base" in d else f"{'-':>9s}"
    print(f"{row:44s} {cells} {ratio(tot)} {ratio(main)}")
    reps = {a: [r["total_reps"] for r in v if len(r.get("total_reps", [])) >= 30] for a, v in t[row].items()}
    if all(reps.get(a) for a in ("new", "base")):  # long series (SUSTAIN_REPS): rested and sustained
        rested = {a: statistics.mean(statistics.median(x[:5]) for x in v) for a, v in reps.items() if v}
        sustained = {a: statistics.mean(statistics.median(x[len(x) * 2 // 3:]) for x in v) for a, v in reps.items() if v}
        print(f"{'':44s} rested {ratio(rested)}, sustained {ratio(sustained)} (whole backward, new/base time)")
PY
