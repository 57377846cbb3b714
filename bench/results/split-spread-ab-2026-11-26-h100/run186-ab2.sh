#!/usr/bin/env bash
# A/B of the split tail with and without the spread over heads: every head-dim-128 row of the paper, persistent.
# Arm "spread": the main binary; arm "plain": the same code with DASHC_NO_SPREAD=1 (the window is the tail alone).
set -u
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh >/dev/null || exit 2
N=target/abfiles/dashc-ns; R=$OUT/ab2; mkdir -p $R
trap 'tar czf $OUT/ab2.tgz -C $OUT ab2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $R/device.txt
$N --version | tee -a $R/device.txt
for round in ${ROUNDS:-1 2}; do
  for m in full causal; do
    sch="shift,spread-shift"; [ $m = causal ] && sch="symmetric-shift,spread-symmetric-shift"
    for s in ${SEQLENS:-512 1024 2048 4096 8192 16384}; do
      b=$((16384 / s))
      shape="--arch sm90 --launch persistent --batch $b --heads 16 --seqlen $s --head-dim 128 --mask $m --reps 20 --no-check --schedule $sch --split-tail --json"
      arms="spread plain"; [ $((round % 2)) = 0 ] && arms="plain spread"
      for a in $arms; do
        if [ $a = plain ]; then DASHC_NO_SPREAD=1 $N run $shape > $R/r$round-$m-s$s-$a.json 2> $R/r$round-$m-s$s-$a.err
        else $N run $shape > $R/r$round-$m-s$s-$a.json 2> $R/r$round-$m-s$s-$a.err; fi
        echo "round $round $m s$s $a rc=$? at ${SECONDS}s"
      done
    done
  done
done
python3 - $R <<'PY'
import json, glob, sys, os, collections
t = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/r*.json")):
    n = os.path.basename(f)[:-5]; rnd, m, s, arm = n.split("-")
    try: d = json.load(open(f))
    except Exception as e: print(n, "no json"); continue
    for r in d["results"]:
        det = r["deterministic"]
        if det["status"] != "ok" or not det["repeatable"]: print("NOT OK", n, r["schedule"])
        t[(m, s, r["schedule"], arm)].append(det["time_ms"]["main_median"])
keys = sorted({k[:3] for k in t}, key=lambda k: (k[0], int(k[1][1:]), k[2]))
for k in keys:
    sp, pl = t.get(k + ("spread",), []), t.get(k + ("plain",), [])
    ms = lambda v: sum(v) / len(v) if v else float("nan")
    print(f"{k[0]:6} {k[1]:>6} {k[2]:30} spread {ms(sp):.4f} plain {ms(pl):.4f} plain/spread {ms(pl)/ms(sp)-1:+.2%}")
PY
