#!/usr/bin/env bash
# Fetches the CUTLASS/CuTe headers the sm90 main loop includes: the nvidia-cutlass 4.2.0.0 wheel from the Python
# package index (6.4 MB; headers only are used), unpacked into target/cutlass/ of the repository. dashc finds them
# there when run from the repository root; elsewhere, set CUTLASS_INCLUDE to the folder this script prints.
# With WHEEL=path/to/nvidia_cutlass-4.2.0.0-py3-none-any.whl it unpacks that file instead (no network needed).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/target/cutlass"
include="$dest/cutlass_library/source/include"
if [[ ! -f "$include/cute/tensor.hpp" ]]; then
  wheel="${WHEEL:-}"
  if [[ -z "$wheel" ]]; then
    python3 -m pip download --quiet --no-deps nvidia-cutlass==4.2.0.0 -d "$root/target/cutlass-wheel"
    wheel="$root/target/cutlass-wheel/nvidia_cutlass-4.2.0.0-py3-none-any.whl"
  fi
  rm -rf "$dest"
  python3 -m zipfile -e "$wheel" "$dest"
fi
echo "$include"
