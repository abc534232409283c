#!/usr/bin/env bash
# The README's main job: install dependencies, build, place the shipped smoke suite with the
# built-in methods and print the comparison of simulated step times.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
./build/gdp compare --suite datasets/suites/smoke.json "$@"
