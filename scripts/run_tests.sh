#!/usr/bin/env bash
# The README's test command: install dependencies, build, run the whole ctest suite.
# GPU tests (label gpu) report "skipped" where no GPU is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 1800
