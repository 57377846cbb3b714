#!/usr/bin/env bash
# A/B of the split tail with and without the spread over heads, causal hd128 s512/1024/2048, persistent launch.
set -u
export PATH=/usr/local/cuda/bin:$PATH
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh >/dev/null || exit 2
D=target/dashc-dev; F=target/abfiles; R=$OUT/ab; mkdir -p $R
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee $R/device.txt
$D --version | tee -a $R/device.txt
for round in 1 2; do
  for s in 512 1024 2048; do
    b=$((16384 / s))
    shape="--arch sm90 --launch persistent --batch $b --heads 16 --seqlen $s --head-dim 128 --mask causal --reps 20"
    chk=""; [ $round = 2 ] && chk="--no-check"
    arms="builtin ns-symmetric-shift ns-spread-symmetric-shift"
    [ $round = 2 ] && arms="ns-spread-symmetric-shift ns-symmetric-shift builtin"
    for a in $arms; do
      if [ $a = builtin ]; then
        $D run $shape $chk --schedule symmetric-shift,spread-symmetric-shift --split-tail --json > $R/r$round-s$s-$a.json 2> $R/r$round-s$s-$a.err
      else
        $D run $shape $chk --schedule-file $F/$a-$s.json --json > $R/r$round-s$s-$a.json 2> $R/r$round-s$s-$a.err
      fi
      echo "round $round s$s $a rc=$? at ${SECONDS}s"
    done
  done
done
python3 - $R <<'PY'
import json, glob, sys, os
for f in sorted(glob.glob(sys.argv[1] + "/r*.json")):
    try: d = json.load(open(f))
    except Exception as e: print(os.path.basename(f), "no json", e); continue
    for r in d["results"]:
        det = r["deterministic"]; t = det["time_ms"]; c = det["check"]
        print(os.path.basename(f), r["schedule"], "main", t["main_median"], "total", t["total_median"], det["status"], "rep", det["repeatable"], "l2", c.get("rel_l2_dq"))
PY
tar czf $OUT/ab.tgz -C $OUT ab && rm -rf $R
