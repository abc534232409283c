#!/usr/bin/env bash
# Configures and builds gdp in ./build (Release; CUDA backend when nvcc is found). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$jobs"
