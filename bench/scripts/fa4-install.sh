#!/usr/bin/env bash
# Installs FlashAttention-4 into /tmp/site on the device machine, once per machine, from the wheels of
# shared/bench/fa4-wheels.sh: part A parked in /tmp/fa4park by `PART=park bash bench/scripts/fa4-bench-run.sh`,
# part B carried as target/fa4B. Sourced by fa4-bench-run.sh and fa4-interleaved-run.sh; returns 1 when part A
# is not parked.
if [ ! -f /tmp/site/.installed ]; then
  [ -f /tmp/fa4park/cu13part.aa ] || { echo "part A is not parked in /tmp/fa4park (run PART=park first)"; return 1; }
  mkdir -p /tmp/fa4/w
  cat /tmp/fa4park/cu13part.aa target/fa4B/cu13part.ab \
    > /tmp/fa4/w/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
  cp /tmp/fa4park/*.whl /tmp/fa4/w/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    /tmp/fa4/w/*.whl 2>&1 | tail -3
  touch /tmp/site/.installed
fi
