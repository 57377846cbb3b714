#!/usr/bin/env bash
# Compiles the compile-only spikes of kernels/spikes/ for sm_90a and fails on register spills and on a build
# without HGMMA (a silent fallback from wgmma). Needs nvcc and cuobjdump on PATH (.ci/run installs both from
# PyPI). CUTLASS headers: $CUTLASS_INCLUDE, or the nvidia-cutlass==4.2.0.0 wheel unpacked into target/cutlass
# (needs the package index once).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
include="${CUTLASS_INCLUDE:-$root/target/cutlass/cutlass_library/source/include}"
if [[ ! -d "$include/cute" ]]; then
  python3 -m pip download --quiet --no-deps nvidia-cutlass==4.2.0.0 -d "$root/target/cutlass-wheel"
  python3 -m zipfile -e "$root"/target/cutlass-wheel/nvidia_cutlass-4.2.0.0-py3-none-any.whl "$root/target/cutlass"
fi
command -v cuobjdump > /dev/null || { echo "cuobjdump not on PATH (pip install nvidia-cuda-cuobjdump)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for src in "$root"/kernels/spikes/*.cu; do
  name="$(basename "$src" .cu)"
  nvcc -std=c++17 --expt-relaxed-constexpr -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v \
    -I"$include" -c -o "$out/$name.o" "$src" > "$out/$name.log" 2>&1 || { cat "$out/$name.log"; exit 1; }
  spills="$(grep -o '[0-9]* bytes spill stores' "$out/$name.log" | awk '{ s += $1 } END { print s + 0 }')"
  verdict="ok"
  [[ "$spills" -eq 0 ]] || { verdict="SPILLS"; status=1; }
  hgmma="$(cuobjdump -sass "$out/$name.o" | grep -c HGMMA || true)"
  [[ "$hgmma" -gt 0 ]] || { verdict="NO HGMMA"; status=1; }
  printf '%-28s sm_90a  spill_st %-5s hgmma %-4s %s\n' "$name" "$spills" "$hgmma" "$verdict"
done
exit $status
