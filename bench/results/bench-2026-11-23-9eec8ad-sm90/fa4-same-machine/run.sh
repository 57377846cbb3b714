#!/usr/bin/env bash
# FA4 anchors on this machine: reassemble the parked wheels, install into /tmp/site, time FA4 det and non-det.
set -uo pipefail
W=/tmp/fa4; mkdir -p $W/w
cp .fa4park/park.ad /tmp/fa4park/
cat /tmp/fa4park/park.* | tar xf - -C $W
cp .fa4C/*.whl $W/w/
cat $W/.fa4A/cu13part.aa $W/.fa4B/cu13part.ab > $W/w/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
cp $W/.fa4B/*.whl $W/w/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $W/w/*.whl 2>&1 | tail -3
nvidia-smi --query-gpu=name,uuid,compute_cap,driver_version,clocks.max.sm --format=csv,noheader
cd $OUT && PROVIDERS=${PROVIDERS:-fa4-det,fa4} REPS=20 RESULTS_DIR=$OUT timeout ${LIMIT:-540} python3 -c "import site,runpy; site.addsitedir('/tmp/site'); runpy.run_path('$OLDPWD/.fa4C/anchors.py', run_name='__main__')" 2>&1 | tee $OUT/fa4.log | grep -v "^{" | tail -60
