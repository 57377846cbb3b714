#!/usr/bin/env bash
# Builds the dashc binary that the device scripts run (target/dashc-dev), stripped of debug info: the release
# profile keeps it (35 MB), and with it the working tree no longer fits the device's 64 MiB carry limit. Also
# fetches the CUTLASS wheel (target/cutlass-wheel, 6.4 MB) that the sm90 main loop's headers come from: the
# device machine has no network.
# Usage, here: bash bench/scripts/prepare-carry.sh; then run a device script with
# carry ["target/dashc-dev", "target/cutlass-wheel"].
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p dashc
strip -o target/dashc-dev target/release/dashc
[ -f target/cutlass-wheel/nvidia_cutlass-4.2.0.0-py3-none-any.whl ] ||
  python3 -m pip download --quiet --no-deps nvidia-cutlass==4.2.0.0 -d target/cutlass-wheel
echo "target/dashc-dev: $(du -h target/dashc-dev | cut -f1), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo +wip)"
