#!/usr/bin/env bash
# Zero-shot transfer of a pre-trained GDP policy, with its controls, on the held-out suites:
#   scripts/transfer_eval.sh CHECKPOINT [OUT_DIR] [SUITES...]
# CHECKPOINT: a `gdp train --suite` run directory (or "pretrained", the shipped policy).
# For each suite (default: holdout, smoke, pipedream, torchvision where its graphs exist) it
# runs `gdp compare` with human, the stage-cut control, anneal at 2,000 samples, the policy's
# greedy placement alone (zsg) and the best of greedy + 63 samples (zs), and writes
# OUT_DIR/<suite>.txt (the table) and OUT_DIR/<suite>.json (the records). Each zero-shot
# candidate is the network's own output (repaired only when none fits: docs/placement.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ckpt=${1:?usage: scripts/transfer_eval.sh CHECKPOINT [OUT_DIR] [SUITES...]}
out=${2:-runs/transfer_eval}
shift $(( $# >= 2 ? 2 : 1 ))
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(holdout smoke pipedream torchvision)
GDP=${GDP:-./build/gdp}
ANNEAL=${GDP_EVAL_ANNEAL:-1}  # 0: skip the anneal column (it dominates the time)
mkdir -p "$out"
methods="human,stage-cut"
[ "$ANNEAL" = 1 ] && methods="$methods,anneal"
methods="$methods,zsg=gdp,zs=gdp"
opts=$(printf '{"zs": {"checkpoint": "%s", "samples": 63}, "zsg": {"checkpoint": "%s", "samples": 0}}' \
  "$ckpt" "$ckpt")
for s in "${suites[@]}"; do
  if ! "$GDP" compare --suite "datasets/suites/$s.json" --methods human > /dev/null 2>&1; then
    echo "transfer_eval: skipping $s (its graphs are not available here)"
    continue
  fi
  "$GDP" compare --suite "datasets/suites/$s.json" --baseline human --methods "$methods" \
    --samples 2000 --options "$opts" --records "$out/$s.json" | tee "$out/$s.txt"
done
