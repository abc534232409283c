#!/usr/bin/env bash
# The CPU modules under AddressSanitizer + UBSan: builds ./build-asan (Debug, GDP_SANITIZE=ON,
# without MPI: OpenMPI's own allocations would read as leaks; cli/suite-mpi skips there:
# any finding aborts the program) with only the targets core, sim, datasets, place, eval and
# the gdp binary need, and runs their ctest tests (the cli tests run build-asan/gdp). nn and the CUDA code are
# left out: nn is slow without optimization, and the CUDA kernels already run sanitized under
# the emulator (label cuda-emu). Idempotent; run by scripts/run_tests.sh after the main suite.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

# A sanitized program must start here. Where LeakSanitizer cannot stop the threads (ptrace
# denied) leaks go unchecked; where the kernel's address-space randomisation breaks GCC 12's
# ASan, everything runs with it off (setarch -R). If nothing works, say so loudly and skip.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <vector>\nint main() { std::vector<int> v(3, 1); return v[2] - 1; }\n' >"$probe/p.cpp"
"${CXX:-c++}" -fsanitize=address,undefined "$probe/p.cpp" -o "$probe/p"
run=()
found=0
for norandom in 0 1; do
  for leaks in 1 0; do
    try=()
    [ "$norandom" -eq 1 ] && try=(setarch "$(uname -m)" -R)
    if ASAN_OPTIONS="detect_leaks=$leaks" "${try[@]}" "$probe/p" >/dev/null 2>&1; then
      run=("${try[@]}")
      export ASAN_OPTIONS="detect_leaks=$leaks${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
      found=1
      break 2
    fi
  done
done
if [ "$found" -eq 0 ]; then
  echo "run_asan_tests: SKIPPED: programs built with -fsanitize=address,undefined do not run on this machine" >&2
  exit 0
fi
[ "${ASAN_OPTIONS#detect_leaks=0}" != "$ASAN_OPTIONS" ] &&
  echo "run_asan_tests: LeakSanitizer does not run here; leaks are not checked" >&2
[ ${#run[@]} -gt 0 ] && echo "run_asan_tests: running with address-space randomisation off" >&2
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DGDP_ENABLE_CUDA=OFF -DGDP_BUILD_BENCH=OFF -DGDP_ENABLE_MPI=OFF \
  -DGDP_SANITIZE=ON >/dev/null
# The build runs the test executables to list their tests: under the same conditions.
"${run[@]}" cmake --build build-asan -j"$jobs" --target gdp test_core test_sim test_datasets test_place test_eval
cd build-asan
"${run[@]}" ctest --output-on-failure -j"$jobs" --timeout 1800 -R '^(core|sim|datasets|place|eval|cli)/' \
  -E '^cli/train$'  # gdp train runs nn, which at -O0 under ASan is minutes per run: Release covers it
