#!/usr/bin/env bash
# Regenerates every committed validation report in docs/ from the raw measurements and costs it was written from
# (each report's first lines name them), with the dashc built here: run after a change to `validate`'s report or
# to the charts it draws, so that docs/ shows what the tool writes now. No GPU needed.
# Usage: bash bench/scripts/regen-validation-docs.sh [DASHC]   (default target/release/dashc, built if missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${1:-target/release/dashc}
[ -x "$D" ] || cargo build --release -p dashc
R=bench/results
regen() {  # doc name, statistic, costs file, raw files...
  local doc=$1 statistic=$2 costs=$3
  shift 3
  local raws=()
  for r in "$@"; do raws+=(--from-raw "$r"); done
  "$D" validate --costs "$costs" "${raws[@]}" --statistic "$statistic" --doc "docs/$doc.md" > /dev/null
  echo "docs/$doc.md"
}
regen validation median $R/validate-2026-11-22-c39d5c2/costs.json $R/validate-2026-11-22-c39d5c2/validate-raw.json
V=$R/validate-2026-11-26-8a48641-sm90
regen validation-sm90 median ${V}-persistent/calibrate/costs.json ${V}-inorder/round{1,2,3,4}/validate-raw.json
regen validation-sm90-persistent median ${V}-persistent/calibrate/costs.json ${V}-persistent/round{1,2,3,4}/validate-raw.json
V=$R/validate-2026-11-27-b357e26-sm90-split-h200
regen validation-sm90-split fastest $V/calibrate/costs-kv-load-overlap.json $V/round{1,2,3}/validate-raw.json
V=$R/validate-2026-11-27-4d4e81c-sm90-split-h100-roof
regen validation-sm90-split-h100 fastest $V/calibrate/costs.json $V/round{1,2,3}/validate-raw.json
V=$R/validate-2026-11-27-4d4e81c-sm90-split-h200-roof
regen validation-sm90-split-h200-roof fastest $V/calibrate/costs.json $V/round{1,2,3}/validate-raw.json
