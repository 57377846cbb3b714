#!/usr/bin/env bash
# Reassembles the parked FA4 wheels (/tmp/fa4park/park.* + .fa4C) and installs them into /tmp/site.
set -uo pipefail
if [ ! -f /tmp/site/.installed ]; then
  W=/tmp/fa4; mkdir -p $W/w
  cp .fa4park/park.* /tmp/fa4park/ 2>/dev/null
  cat /tmp/fa4park/park.* | tar xf - -C $W || echo "UNTAR FAILED"
  cat $W/A/cu13part.aa $W/B/cu13part.ab > $W/w/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
  cp .fa4C/*.whl $W/w/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $W/w/*.whl 2>&1 | tail -3
  touch /tmp/site/.installed
fi
