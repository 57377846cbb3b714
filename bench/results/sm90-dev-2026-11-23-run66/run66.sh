#!/usr/bin/env bash
# scratch: side-by-side Nsight Compute of dashc's sm90 main loop and FA4's sm90 backward, same shapes (16384 tokens)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
bash .devgpu/fa4install.sh
WHEEL=$(ls target/cutlass-wheel/nvidia_cutlass-*.whl) kernels/fetch-cutlass.sh > /dev/null
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
D=target/dashc-dev; S=/tmp/prof; mkdir -p $S
shapes=(
  "d128c:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift"
  "a128c:--seqlen 16384 --heads 16 --head-dim 128 --mask causal --schedule symmetric-shift --nondeterministic"
  "d128f:--seqlen 16384 --heads 16 --head-dim 128 --mask full --schedule shift"
  "a64f:--seqlen 16384 --heads 32 --head-dim 64 --mask full --schedule shift --nondeterministic"
)
for e in "${shapes[@]}"; do $D codegen ${e#*:} --arch sm90a -o $S/${e%%:*} > /dev/null || echo "codegen failed $e"; done
ls -d $S/* | xargs -P 8 -I{} sh -c 'cd {} && sh nvcc-command.txt > ptxas.log 2>&1 || echo "BUILD FAILED {}"'
echo built $SECONDS
prof() { # name, command...
  local n=$1; shift
  ncu --clock-control none -k "$KREGEX" -c ${NCOUNT:-1} --set full --import-source yes -o $S/$n "$@" > $OUT/$n-ncu.log 2>&1 || echo "NCU FAILED $n"
  ncu -i $S/$n.ncu-rep --page details > $OUT/$n-details.txt 2>&1
  ncu -i $S/$n.ncu-rep --page raw --csv > $OUT/$n-raw.csv 2>&1
  ncu -i $S/$n.ncu-rep --page source --csv --print-source sass > $OUT/$n-source.csv 2>&1
  echo "$n profiled $SECONDS"
}
for e in "${shapes[@]}"; do
  n=${e%%:*}
  (cd $S/$n && ./harness schedule.txt --no-check --reps 20 > $OUT/$n-time.json 2>&1; python3 -c "import json;d=json.load(open('$OUT/$n-time.json'));print('$n',d['tflops'])")
  KREGEX=regex:bwd_main_kernel; (cd $S/$n && prof $n ./harness schedule.txt --reps 1 --warmup 0 --repeat-runs 2 --no-check)
done
# FA4: time first (PROVIDERS run of the two shapes), then profile non-det and det
(cd $OUT && HDIMS=128,64 SEQLENS=16384 PROVIDERS=fa4,fa4-det REPS=20 RESULTS_DIR=$OUT timeout 300 python3 -c "import site,runpy; site.addsitedir('/tmp/site'); runpy.run_path('$PWD/.fa4C/anchors.py', run_name='__main__')" 2>&1 | grep -v "^{" | tail -12)
echo fa4 timed $SECONDS
KREGEX="regex:(?i)bwd"; NCOUNT=6
prof f128c python3 .devgpu/fa4prof.py 128 1 0
prof f128f python3 .devgpu/fa4prof.py 128 0 0
prof f64f python3 .devgpu/fa4prof.py 64 0 0
prof g128c python3 .devgpu/fa4prof.py 128 1 1
cd $OUT && gzip *-raw.csv *-source.csv && tar cf prof.tar *.txt *.csv.gz *.log *.json && rm -f *.txt *.csv.gz *.log *.json && ls -la
