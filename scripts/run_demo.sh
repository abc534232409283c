#!/usr/bin/env bash
# The README's main job: install dependencies, build, place the shipped smoke suite with the
# built-in methods (human, the algorithmic baselines, random, annealing, the shipped
# pre-trained GDP policy zero-shot and annealing guided by it, at 1,000 samples; other
# arguments replace these) and print the comparison of simulated step times.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
if [ $# -eq 0 ]; then
  set -- --methods human,metis,m-topo,m-etf,m-sct,random,anneal,gdp,gdp-anneal --samples 1000 \
    --baseline human
fi
./build/gdp compare --suite datasets/suites/smoke.json "$@"
