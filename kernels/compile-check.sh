#!/usr/bin/env bash
# Compile check of every generated kernel variant, no GPU needed.
#
# Renders the sources of head dim {64, 128} x mask {full, causal} x {det, nondet, trace} (tile sizes as the
# analyzer picks them by default: 128x128 for head dim 64, 64x128 for head dim 128; and the sm90 loop's 80x128 at
# head dim 128 on full masks; EXTRA_VARIANTS adds
# more, as "HD BM BN MASK DET" lines) for both main loops: the portable one compiled for sm_80 and sm_90a, the
# Hopper one (sm90_ variants) for sm_90a with the CUTLASS headers (kernels/fetch-cutlass.sh, or
# $CUTLASS_INCLUDE). Every build runs with `-Xptxas -v`; the check reads the ptxas report of the backward
# main-loop kernel and fails (exit 1) when it spills in a variant that kernels/spill-allowlist.txt does not
# list with a reason, or spills more than the listed bound. Hopper builds must also contain HGMMA (a build
# that fell back from wgmma fails); their report shows the highest register the SASS uses, since ptxas prints
# only the 168 of the launch bound there (setmaxnreg raises the consumers' budget to 240). Needs cuobjdump on
# PATH for that (.ci/run installs it from PyPI); without it (SKIP_SASS=1) the HGMMA check is skipped.
#
# Rendering goes through the codegen crate's `render` example. nvcc is taken from PATH, else from
# $CUDA_HOME/bin. Output: $OUT_DIR (default target/compile-check), one folder per variant with the ptxas
# logs, and report.txt.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT_DIR:-$root/target/compile-check}"
allowlist="$root/kernels/spill-allowlist.txt"
jobs="${JOBS:-$(nproc)}"

if ! command -v nvcc >/dev/null 2>&1; then
  if [[ -n "${CUDA_HOME:-}" && -x "$CUDA_HOME/bin/nvcc" ]]; then
    export PATH="$CUDA_HOME/bin:$PATH"
  else
    echo "compile-check: nvcc not found (PATH or \$CUDA_HOME/bin)" >&2
    exit 3
  fi
fi

variants="64 128 128 full det
64 128 128 full nondet
64 128 128 causal det
64 128 128 causal nondet
128 64 128 full det
128 64 128 full nondet
128 64 128 causal det
128 64 128 causal nondet
64 128 128 full trace
64 128 128 causal trace
128 64 128 full trace
128 64 128 causal trace
128 80 128 full det
128 80 128 full nondet
128 80 128 full trace
${EXTRA_VARIANTS:-}"

cutlass="${CUTLASS_INCLUDE:-$("$root/kernels/fetch-cutlass.sh")}"
if [[ "${SKIP_SASS:-0}" != 1 ]] && ! command -v cuobjdump >/dev/null 2>&1; then
  echo "compile-check: cuobjdump not on PATH (pip install nvidia-cuda-cuobjdump, or SKIP_SASS=1)" >&2
  exit 3
fi

mkdir -p "$out"
(cd "$root" && cargo build --quiet -p codegen --example render)
# The example lands in cargo's target directory, which CARGO_TARGET_DIR may move.
target_dir="$(cd "$root" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
render="$target_dir/debug/examples/render"

# Render every variant for both main loops, then compile all (variant, arch) pairs in parallel.
pairs=()
while read -r hd bm bn mask det; do
  [[ -z "${hd:-}" ]] && continue
  name="hd${hd}_m${bm}_n${bn}_${mask}_${det}"
  # 80-row tiles (head dim 128, full masks) exist only in the sm90 main loop.
  if [[ "$bm" != 80 ]]; then
    "$render" "$out/$name" "$hd" "$bm" "$bn" "$mask" "$det" sm80
    pairs+=("$name 80" "$name 90a")
  fi
  # The sm90 main loop's warpgroups split 128 KV rows: other tiles have no sm90 build.
  if [[ "$bn" == 128 ]]; then
    "$render" "$out/sm90_$name" "$hd" "$bm" "$bn" "$mask" "$det" sm90
    pairs+=("sm90_$name 90a")
  fi
done <<< "$variants"

compile_one() {
  local name="$1" arch="$2" dir="$3/$1" cutlass="$4"
  local extra=()
  [[ "$name" == sm90_* ]] && extra=(--expt-relaxed-constexpr "-I$cutlass")
  if nvcc -std=c++17 -O3 "${extra[@]}" -gencode=arch=compute_${arch},code=sm_${arch} -Xptxas -v -cubin \
      -o "$dir/harness_sm${arch}.cubin" "$dir/harness.cu" > "$dir/ptxas_sm${arch}.log" 2>&1; then
    echo "ok" > "$dir/status_sm${arch}"
  else
    echo "failed" > "$dir/status_sm${arch}"
  fi
}
export -f compile_one
printf '%s\n' "${pairs[@]}" | xargs -P "$jobs" -L 1 bash -c 'compile_one "$0" "$1" "'"$out"'" "'"$cutlass"'"'

# Registers and spills of the main-loop kernel, from ptxas' report:
#   ptxas info : Compiling entry function '_ZN5dashc15bwd_main_kernel...' for 'sm_90a'
#   ptxas info : Function properties for _ZN5dashc15bwd_main_kernel...
#       24 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads
#   ptxas info : Used 255 registers, ...
main_kernel_stats() {
  awk '
    /Compiling entry function .*bwd_main_kernel/ { on = 1; next }
    on && /bytes spill stores/ { for (i = 1; i <= NF; i++) { if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "stores,") st = $i; if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "loads") ld = $i } }
    on && /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") regs = $(i+1); on = 0 }
    END { if (regs == "") print "? ? ?"; else print regs, st + 0, ld + 0 }
  ' "$1"
}

# Allowlist lines: VARIANT ARCH MAX_SPILL_STORE_BYTES REASON...  ('#' starts a comment).
allowed_bytes() {
  [[ -f "$allowlist" ]] || { echo -1; return; }
  awk -v v="$1" -v a="$2" '!/^#/ && $1 == v && $2 == a && NF >= 4 { print $3; found = 1; exit } END { if (!found) print -1 }' "$allowlist"
}

# Hopper builds: HGMMA instructions and the highest register index of the main-loop kernel in the SASS.
sass_stats() {
  cuobjdump -sass "$1" | awk '
    /Function :/ { on = ($3 ~ /bwd_main_kernel/) }
    on && /HGMMA/ { h++ }
    on { while (match($0, /R[0-9]+/)) { r = substr($0, RSTART + 1, RLENGTH - 1) + 0; if (r > m) m = r; $0 = substr($0, RSTART + RLENGTH) } }
    END { print h + 0, m + 0 }'
}

fail=0
report="$out/report.txt"
printf '%-38s %-7s %5s %7s %7s %6s %6s  %s\n' variant arch regs spill_st spill_ld hgmma max_R verdict > "$report"
for pair in "${pairs[@]}"; do
  read -r name arch <<< "$pair"
  dir="$out/$name"
  arch_name="sm_${arch}"
  if [[ "$(cat "$dir/status_sm${arch}")" != ok ]]; then
    printf '%-38s %-7s %5s %7s %7s %6s %6s  %s\n' "$name" "$arch_name" - - - - - "COMPILE FAILED (see $dir/ptxas_sm${arch}.log)" >> "$report"
    fail=1
    continue
  fi
  read -r regs st ld <<< "$(main_kernel_stats "$dir/ptxas_sm${arch}.log")"
  hgmma=- maxr=-
  if [[ "$name" == sm90_* && "${SKIP_SASS:-0}" != 1 ]]; then
    read -r hgmma maxr <<< "$(sass_stats "$dir/harness_sm${arch}.cubin")"
  fi
  verdict=ok
  if [[ "$regs" == "?" ]]; then
    verdict="NO REPORT for bwd_main_kernel"
    fail=1
  elif (( st > 0 )); then
    limit="$(allowed_bytes "$name" "$arch_name")"
    if (( limit < 0 )); then
      verdict="SPILLS (not on the allowlist)"
      fail=1
    elif (( st > limit )); then
      verdict="SPILLS beyond the allowlisted $limit bytes"
      fail=1
    else
      verdict="spills, allowlisted (<= $limit bytes)"
    fi
  fi
  if [[ "$hgmma" == 0 ]]; then
    verdict="NO HGMMA (the wgmma path was not compiled)"
    fail=1
  fi
  [[ "$maxr" != - ]] && maxr="R$maxr"
  printf '%-38s %-7s %5s %7s %7s %6s %6s  %s\n' "$name" "$arch_name" "$regs" "$st" "$ld" "$hgmma" "$maxr" "$verdict" >> "$report"
done
cat "$report"
exit "$fail"
