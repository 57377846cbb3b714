#!/usr/bin/env bash
# Builds the dashc binary that the device scripts run (target/dashc-dev), stripped of debug info: the release
# profile keeps it (35 MB), and with it the working tree no longer fits the device's 64 MiB carry limit.
# Usage, here: bash bench/scripts/prepare-carry.sh; then run a device script with carry ["target/dashc-dev"].
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p dashc
strip -o target/dashc-dev target/release/dashc
echo "target/dashc-dev: $(du -h target/dashc-dev | cut -f1), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo +wip)"
