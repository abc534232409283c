#!/usr/bin/env bash
# Fuzzes the file readers (fuzz/; docs/formats.md, "Fuzzing the readers"): builds ./build-fuzz
# with clang (-DGDP_FUZZ=ON: libFuzzer + ASan + UBSan), writes the seed corpus from the
# generators (gdp_fuzz_seeds), checks the committed seeds (fuzz/seeds), then runs each target
# for a bounded time. Fails at any finding (a crash, a sanitizer report, a reader failing other
# than by InputError, the fast and reference graph readers disagreeing, a round trip that
# changes something); the input is kept in build-fuzz/artifacts/TARGET/. Prints "skipped" and
# exits 0 where clang++ or libFuzzer is missing. Run by scripts/run_tests.sh after the ASan suite.
#   scripts/run_fuzz.sh [--seconds N] [--runs N] [TARGET...]  (graph pipedream cluster placement)
# Defaults: 20 s and at most 1,000,000 inputs per target, every target (or FUZZ_SECONDS,
# FUZZ_RUNS); FUZZ_CXX names the compiler (clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
runs=${FUZZ_RUNS:-1000000}
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    graph|pipedream|cluster|placement) targets+=("$1"); shift ;;
    *) echo "usage: scripts/run_fuzz.sh [--seconds N] [--runs N] [graph|pipedream|cluster|placement ...]" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(graph pipedream cluster placement)
jobs=$(nproc 2>/dev/null || echo 2)

cxx=${FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null; then
  echo "run_fuzz: skipped: clang not found (apt-get install clang libclang-rt-dev)"
  exit 0
fi

# A fuzz target must link and run here: where LeakSanitizer cannot stop the threads (ptrace
# denied) leaks go unchecked; where address-space randomisation breaks ASan, it runs off.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <cstddef>\n#include <cstdint>\n#include <vector>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) { std::vector<uint8_t> v(d, d + n); return 0; }\n' >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "run_fuzz: skipped: $cxx cannot link libFuzzer (apt-get install libclang-rt-dev): $(head -c 300 "$probe/err")"
  exit 0
fi
run=()
leaks=""
for norandom in 0 1; do
  for detect in 1 0; do
    try=()
    [ "$norandom" -eq 1 ] && try=(setarch "$(uname -m)" -R)
    if ASAN_OPTIONS="detect_leaks=$detect" "${try[@]}" "$probe/p" -runs=100 \
      -detect_leaks="$detect" >/dev/null 2>&1; then
      run=("${try[@]}")
      leaks=$detect
      export ASAN_OPTIONS="detect_leaks=$detect${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
      break 2
    fi
  done
done
if [ -z "$leaks" ]; then
  echo "run_fuzz: SKIPPED: programs built with -fsanitize=fuzzer,address,undefined do not run on this machine" >&2
  exit 0
fi
[ "$leaks" -eq 0 ] && echo "run_fuzz: LeakSanitizer does not run here; leaks are not checked" >&2
[ ${#run[@]} -gt 0 ] && echo "run_fuzz: running with address-space randomisation off" >&2
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# Debug: the readers get -O1 from fuzz/CMakeLists.txt; the seed writer compiles fastest.
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Debug -DGDP_FUZZ=ON \
  -DGDP_ENABLE_CUDA=OFF -DGDP_ENABLE_MPI=OFF -DGDP_ENABLE_PYTHON=OFF -DGDP_BUILD_TESTS=OFF \
  -DGDP_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target gdp_fuzz_seeds "${targets[@]/#/fuzz_}" >/dev/null

# The seed corpus, written afresh; the working corpus (build-fuzz/corpus) grows from run to run.
rm -rf build-fuzz/seeds
build-fuzz/fuzz/gdp_fuzz_seeds build-fuzz/seeds >/dev/null
build-fuzz/fuzz/gdp_fuzz_seeds --check fuzz/seeds

# -timeout: an input that runs 30 s is a finding (a hang); the slowest valid ones, presets of
# 1,024 devices, take 4 s under the sanitizers.
rc=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t" build-fuzz/logs
  log="build-fuzz/logs/$t.log"
  start=$SECONDS
  if (cd build-fuzz && "${run[@]}" "fuzz/fuzz_$t" "corpus/$t" "seeds/$t" "../fuzz/seeds/$t" \
        -dict="../fuzz/dicts/$t.dict" -max_total_time="$seconds" -runs="$runs" -timeout=30 \
        -rss_limit_mb=2048 -max_len=65536 -detect_leaks="$leaks" -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/") >"$log" 2>&1; then
    # e.g. "#181532 DONE cov: 2470 ft: 9051 corp: 612/181Kb exec/s: 9074 rss: 521Mb"
    echo "run_fuzz: $t: ok in $((SECONDS - start)) s: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | tr -s ' \t' ' ')"
  else
    rc=1
    echo "run_fuzz: $t: FAILED (log $log; inputs in build-fuzz/artifacts/$t/; reproduce:" \
      "build-fuzz/fuzz/fuzz_$t FILE):" >&2
    grep -E 'FUZZ FINDING|ERROR: |runtime error|SUMMARY|Test unit written|==ERROR|terminate called|what\(\)' \
      "$log" | head -20 >&2 || tail -40 "$log" >&2
  fi
done
exit "$rc"
