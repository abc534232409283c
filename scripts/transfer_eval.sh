#!/usr/bin/env bash
# Zero-shot transfer of a pre-trained GDP policy, with its controls, on the held-out suites:
#   scripts/transfer_eval.sh CHECKPOINT [OUT_DIR] [SUITES...]
# CHECKPOINT: a `gdp train --suite` run directory (or "pretrained", the shipped policy).
# For each suite (default: holdout, smoke, pipedream, torchvision where its graphs exist;
# "outside" is runs/outside/suite.json, made by scripts/scrub_suite.py) it runs `gdp compare`
# with human, the stage-cut control, anneal at 2,000 samples, and the policy zero-shot four
# ways: its own greedy placement alone (zsg), the greedy placements of every decoding, per op,
# per stage and, with a cut head, per cut (zsgb), the best of 64 candidates under its own
# decisions (own) and the best of 64 under every decoding (zs, decode "all", the default of the
# gdp method; for a policy without a cut head the same as "both"), and writes OUT_DIR/<suite>.txt (the
# table) and OUT_DIR/<suite>.json (the records). Each zero-shot candidate is the network's own
# output (repaired only when none fits: docs/placement.md). GDP_EVAL_ANNEAL=0 and
# GDP_EVAL_STAGECUT=0 leave those columns out.
set -euo pipefail
cd "$(dirname "$0")/.."
ckpt=${1:?usage: scripts/transfer_eval.sh CHECKPOINT [OUT_DIR] [SUITES...]}
out=${2:-runs/transfer_eval}
shift $(( $# >= 2 ? 2 : 1 ))
suites=("$@")
[ ${#suites[@]} -eq 0 ] && suites=(holdout smoke pipedream torchvision)
GDP=${GDP:-./build/gdp}
ANNEAL=${GDP_EVAL_ANNEAL:-1}  # 0: skip the anneal column (it dominates the time)
STAGECUT=${GDP_EVAL_STAGECUT:-1}
mkdir -p "$out"
methods="human"
[ "$STAGECUT" = 1 ] && methods="$methods,stage-cut"
[ "$ANNEAL" = 1 ] && methods="$methods,anneal"
methods="$methods,zsg=gdp,zsgb=gdp,own=gdp,zs=gdp"
opts=$(printf '{"zsg": {"checkpoint": "%s", "samples": 0, "decode": "own"},
  "zsgb": {"checkpoint": "%s", "samples": 0, "decode": "all"},
  "own": {"checkpoint": "%s", "samples": 63, "decode": "own"},
  "zs": {"checkpoint": "%s", "samples": 63, "decode": "all"}}' "$ckpt" "$ckpt" "$ckpt" "$ckpt")
for s in "${suites[@]}"; do
  f="datasets/suites/$s.json"
  [ "$s" = outside ] && f=runs/outside/suite.json
  if ! "$GDP" compare --suite "$f" --methods human > /dev/null 2>&1; then
    echo "transfer_eval: skipping $s (its graphs are not available here)"
    continue
  fi
  "$GDP" compare --suite "$f" --baseline human --methods "$methods" \
    --samples 2000 --options "$opts" --records "$out/$s.json" | tee "$out/$s.txt"
done
