#!/usr/bin/env bash
# Writes a PipeDream profile of N+1 layers where layers 1..N all feed layer N+1: the import's
# worst case for per-consumer work (docs/performance.md, "PipeDream import").
# usage: scripts/pipedream_fanin.sh N OUT.txt
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 N OUT.txt" >&2; exit 2; }
awk -v n="$1" 'BEGIN {
  for (k = 1; k <= n + 1; ++k)
    printf "node%d -- Linear(in_features=4, out_features=4) -- forward_compute_time=0.010, backward_compute_time=0.020, activation_size=64.0, parameter_size=80.000\n", k
  for (k = 1; k <= n; ++k) printf "\tnode%d -- node%d\n", k, n + 1
}' > "$2"
