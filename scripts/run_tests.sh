#!/usr/bin/env bash
# The README's test command: install dependencies, build, run the whole ctest suite, then the
# CPU modules (core, sim, datasets, cli) again under AddressSanitizer + UBSan
# (scripts/run_asan_tests.sh, ./build-asan), then a short fuzzing run of the file readers
# (scripts/run_fuzz.sh, ./build-fuzz: 20 s per reader; "skipped" without clang). GPU tests
# (label gpu) report "skipped" where no GPU is visible. Fails when any of the three fails; all
# three run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
rc=0
(cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 1800) || rc=1
bash scripts/run_asan_tests.sh || rc=1
bash scripts/run_fuzz.sh || rc=1
exit "$rc"
