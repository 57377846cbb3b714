#!/usr/bin/env bash
# Device run of the dQ-finalizer A/B. Carry target/finalize-ab.tgz (finalize-schedules.sh beside this script, with one of the patches here applied and dashc rebuilt, then
# `tar czf target/finalize-ab.tgz -C target finalize-ab`) and target/cutlass-wheel. Builds the four sm90
# deterministic harnesses of the working tree (build-*) and of the commit before the finalizer (base-*), then:
#   1. FP32 checks (poison, 5-run bitwise repeatability) of the check schedules with the new harness;
#   2. timing, ROUNDS rounds (default 2), every timing schedule with three arms in rotating order: "fused"
#      (the main loop writes dQ), "post" (the same binary with --dq-postprocess-only) and "base" (the old kernel).
# Output: $OUT/finalize-ab.tgz (one JSON line per run, ptxas logs, device.txt).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
[ -n "${OUT:-}" ] || { echo "OUT is not set" >&2; exit 2; }
I=$(WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh)
W=/tmp/finalize-ab; R=$W/results
rm -rf $W && mkdir -p $W && tar xzf target/finalize-ab.tgz -C $W && mv $W/finalize-ab/* $W/ && mkdir -p $R
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $R/device.txt
for d in $W/build-* $W/base-*; do
  (cd $d && nvcc -std=c++17 -O3 -lineinfo --expt-relaxed-constexpr -I"$I" -gencode=arch=compute_90a,code=sm_90a \
     -Xptxas -v -o harness harness.cu > ptxas.log 2>&1 || echo "BUILD FAILED $d") &
done
wait
echo "built at ${SECONDS}s"
for d in $W/build-* $W/base-*; do cp $d/ptxas.log $R/ptxas-$(basename $d).log; done
cfg() { local f=$(basename $1); echo "hd${f#hd}" | cut -d- -f1,2; }  # hd64-full from hd64-full-...
for f in $W/check/*.txt; do
  c=$(cfg $f)
  $W/build-$c/harness $f --check --reps 2 > $R/check-$(basename $f .txt).json 2> $R/check-$(basename $f .txt).err \
    || echo "CHECK FAILED $(basename $f)"
done
python3 - "$R" <<'PY'
import json, glob, sys
rows = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/check-*.json"))]
bad = [r["schedule"] + " " + str(r["shape"]) for r in rows if r["status"] != "ok"]
worst = max(max(r["check"][k] or 0 for k in ("rel_l2_dq", "rel_l2_dk", "rel_l2_dv")) for r in rows)
by_main = sum(r.get("dq_finalize", {}).get("written_by_main_loop", 0) for r in rows)
tiles = sum(r.get("dq_finalize", {}).get("tiles", 0) for r in rows if r.get("dq_finalize", {}).get("in_main_loop"))
print(f"checks: {len(rows)} results, {len(bad)} not ok {bad[:5]}, worst rel l2 {worst:.2e}, "
      f"dQ tiles by the main loop {by_main} of {tiles} (persistent runs)")
PY
echo "checked at ${SECONDS}s"
arms=(fused post base)
for round in $(seq 1 ${ROUNDS:-2}); do
  i=0
  for f in $W/time/*.txt; do
    c=$(cfg $f); n=$(basename $f .txt)
    for k in 0 1 2; do
      a=${arms[$(( (i + k + round) % 3 ))]}
      case $a in
        fused) $W/build-$c/harness $f --no-check --reps 20 --repeat-runs 2 ;;
        post) $W/build-$c/harness $f --no-check --reps 20 --repeat-runs 2 --dq-postprocess-only ;;
        base) $W/base-$c/harness $f --no-check --reps 20 --repeat-runs 2 ;;
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
    name = f.split("/")[-1][:-5]
    rnd, rest = name[len("time-"):].split("-", 1)
    row, arm = rest.rsplit("-", 1)
    try:
        r = json.load(open(f))
    except Exception:
        continue
    t[row][arm].append((r["time_ms"]["total_median"], r["time_ms"]["main_median"], r.get("dq_finalize", {}), r["status"]))
print(f"{'row':44s} {'base tot':>9s} {'post tot':>9s} {'fused tot':>9s} {'fused/base':>10s} {'main f/b':>9s} {'tiles by main loop':>18s}")
for row in sorted(t):
    m = {a: statistics.mean(x[0] for x in v) for a, v in t[row].items()}
    mm = {a: statistics.mean(x[1] for x in v) for a, v in t[row].items()}
    fin = t[row].get("fused", [(0, 0, {}, "")])[-1][2]
    st = ",".join(sorted({x[3] for v in t[row].values() for x in v}))
    if all(a in m for a in ("base", "post", "fused")):
        print(f"{row:44s} {m['base']:9.3f} {m['post']:9.3f} {m['fused']:9.3f} {m['fused']/m['base']-1:+10.2%} "
              f"{mm['fused']/mm['base']-1:+9.2%} {fin.get('written_by_main_loop', 0):>8}/{fin.get('tiles', 0):<8} {st}")
PY
tar czf $OUT/finalize-ab.tgz -C $W results
