#!/usr/bin/env bash
# The one GPU check of the CUDA backend (cuda/): on a machine with an NVIDIA GPU and CUDA,
# configure a fresh build, build only test_cuda and cuda_bench_kernels, run the `gpu`
# ctest label and the kernel ladder, and copy every log to "$OUT" (default ./gpu_check_out).
# Budget: about 6 minutes on 16 cores. Exit status 0 only when every step passed.
#
#   OUT=/path/to/logs scripts/gpu_check.sh
# Environment: BUILD_DIR (default build-gpu-check, wiped first), GDP_CUDA_ARCH (default 90,
# the H100/H200 architecture; one architecture keeps the build short), JOBS (default nproc),
# BUDGET_S (default 330: steps 4d and 5 run only with enough of it left).
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/gpu_check_out}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu-check}"
ARCH="${GDP_CUDA_ARCH:-90}"
JOBS="${JOBS:-$(nproc)}"
BUDGET_S="${BUDGET_S:-330}"  # leave a margin under 6 minutes (steps 4d and 5 use what is left)
LOG="$OUT/gpu_check"
mkdir -p "$LOG"
status=0
summary() { echo "$*" | tee -a "$LOG/summary.txt"; }
: > "$LOG/summary.txt"

summary "gpu_check: $(date -u +%FT%TZ) root=$ROOT build=$BUILD_DIR arch=$ARCH jobs=$JOBS"
{ nvidia-smi || echo "nvidia-smi failed"; } > "$LOG/nvidia-smi.txt" 2>&1
{ /usr/local/cuda/bin/nvcc --version || echo "no nvcc at /usr/local/cuda/bin"; } > "$LOG/nvcc.txt" 2>&1
(cd "$ROOT" && git log -1 --oneline 2>/dev/null) > "$LOG/commit.txt" 2>&1

# 1. configure (fresh). Google Benchmark is needed by bench/; if it is missing, configure
#    without bench/ and build the ladder with nvcc directly in step 2.
rm -rf "$BUILD_DIR"
bench_in_cmake=1
if ! cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DGDP_ENABLE_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$ARCH" > "$LOG/configure.log" 2>&1; then
  summary "configure with bench/ failed; retrying with GDP_BUILD_BENCH=OFF"
  bench_in_cmake=0
  rm -rf "$BUILD_DIR"
  if ! cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DGDP_ENABLE_CUDA=ON -DGDP_BUILD_BENCH=OFF \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >> "$LOG/configure.log" 2>&1; then
    summary "FAIL configure (see configure.log)"
    exit 1
  fi
fi
if ! grep -q "gdp: CUDA backend ON" "$LOG/configure.log"; then
  summary "FAIL configure: the CUDA backend is OFF (no nvcc?)"
  exit 1
fi
summary "ok   configure ($SECONDS s)"

# 2. build only the test and bench targets
targets=(test_cuda gdp)
[ "$bench_in_cmake" = 1 ] && targets+=(cuda_bench_kernels bench_nn_blocks)
if cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "$JOBS" > "$LOG/build.log" 2>&1; then
  summary "ok   build ${targets[*]} ($SECONDS s)"
else
  summary "FAIL build (see build.log)"
  exit 1
fi
BENCH="$BUILD_DIR/bench/cuda_bench_kernels"
if [ "$bench_in_cmake" = 0 ]; then
  BENCH="$BUILD_DIR/cuda_bench_kernels"
  if /usr/local/cuda/bin/nvcc -std=c++17 -O3 -arch=sm_"$ARCH" -I"$ROOT" "$ROOT/bench/cuda_bench_kernels.cu" \
       "$BUILD_DIR/cuda/libgdp_cuda.a" -lcublas -o "$BENCH" >> "$LOG/build.log" 2>&1; then
    summary "ok   build cuda_bench_kernels with nvcc ($SECONDS s)"
  else
    summary "FAIL build cuda_bench_kernels with nvcc (see build.log)"
    status=1
  fi
fi
grep -i "warning" "$LOG/build.log" > "$LOG/build_warnings.txt" && summary "note build warnings: see build_warnings.txt"

# 3. the GPU tests (each test case is one ctest test; 77 = skipped would mean no GPU)
if (cd "$BUILD_DIR" && timeout 200 ctest -L gpu --output-on-failure) > "$LOG/ctest.log" 2>&1; then
  if grep -q "Skipped" "$LOG/ctest.log"; then
    summary "FAIL ctest -L gpu: tests were SKIPPED (no GPU visible to the test binary)"
    status=1
  else
    summary "ok   ctest -L gpu: $(grep -E 'tests passed' "$LOG/ctest.log") ($SECONDS s)"
  fi
else
  summary "FAIL ctest -L gpu: $(grep -E 'tests passed|tests failed' "$LOG/ctest.log" | head -1) (see ctest.log)"
  status=1
fi
# The same tests in one process with Catch's own report (assertion counts, failure messages).
(cd "$ROOT" && timeout 90 "$BUILD_DIR/tests/test_cuda" --durations yes) > "$LOG/test_cuda.log" 2>&1

# 4. the kernel ladder
if [ -x "$BENCH" ]; then
  if (cd "$ROOT" && timeout 120 "$BENCH") > "$LOG/bench.log" 2>&1; then
    summary "ok   cuda_bench_kernels ($SECONDS s)"
  else
    summary "FAIL cuda_bench_kernels (see bench.log)"
    status=1
  fi
fi

# 4b. the policy's blocks (GraphSAGE, Transformer-XL over 50k nodes) forward + backward on the
#     device (the cpu figures are measured elsewhere; see docs/performance.md)
if [ -x "$BUILD_DIR/bench/bench_nn_blocks" ]; then
  if (cd "$ROOT" && timeout 90 "$BUILD_DIR/bench/bench_nn_blocks" --benchmark_filter=_cuda \
        --benchmark_min_time=1) > "$LOG/bench_nn_blocks.log" 2>&1; then
    summary "ok   bench_nn_blocks on the device ($SECONDS s)"
  else
    summary "FAIL bench_nn_blocks on the device (see bench_nn_blocks.log)"
    status=1
  fi
fi

# 4c. PPO iterations of the GDP policy on GNMT-8 (53k ops, 8 devices) with the policy on the
#     device (gdp train --device cuda); the per-iteration lines give samples/s (issue 9)
if [ -x "$BUILD_DIR/gdp" ]; then
  if (cd "$OUT" && timeout 120 "$BUILD_DIR/gdp" gen gnmt --layers 8 -o gnmt8.json &&
        timeout 120 "$BUILD_DIR/gdp" train --graph gnmt8.json --cluster v100x8-nvlink \
          --device cuda --iterations 5 --out train_gnmt8_cuda) > "$LOG/train_gnmt8_cuda.log" 2>&1; then
    summary "ok   gdp train --device cuda, 5 PPO iterations on GNMT-8 ($SECONDS s)"
  else
    summary "FAIL gdp train --device cuda on GNMT-8 (see train_gnmt8_cuda.log)"
    status=1
  fi
fi

# 4d. GPU calibration and validation (issue 13): `gdp calibrate --backend cuda --quick` writes
#     a profile and a cluster of this machine's GPUs with the measured links; then `gdp validate
#     --backend cuda` runs two smoke graphs (datasets/suites/smoke.json options, round-robin
#     placement) on that cluster with that profile; JSON reports and both traces under $OUT.
left=$((BUDGET_S - SECONDS))
GDP="$BUILD_DIR/gdp"
if [ ! -x "$GDP" ]; then
  summary "note gpu calibrate/validate skipped (no gdp binary)"
elif [ "$left" -lt 75 ]; then
  summary "note gpu calibrate/validate skipped (${left}s left of the ${BUDGET_S}s budget)"
else
  if (cd "$OUT" && timeout 150 "$GDP" calibrate --backend cuda --quick --out "$OUT/gpu_profile.json" \
        --cluster-out "$OUT/gpu_cluster.json") > "$LOG/calibrate_cuda.log" 2>&1; then
    summary "ok   gdp calibrate --backend cuda --quick ($SECONDS s)"
    val_ok=1
    for spec in "rnnlm_small rnnlm --layers 2 --batch 8 --seq-len 6 --hidden 64 --vocab 200" \
                "transformer_xl_small transformer_xl --layers 2 --batch 2 --seq-len 16 --hidden 64 --heads 4 --vocab 100"; do
      set -- $spec
      name=$1; shift
      if (cd "$OUT" && timeout 60 "$GDP" gen "$@" -o "$OUT/$name.json" &&
            timeout 60 "$GDP" place --method round-robin --graph "$OUT/$name.json" \
              --cluster "$OUT/gpu_cluster.json" --profile "$OUT/gpu_profile.json" \
              -o "$OUT/${name}_rr.json" &&
            timeout 90 "$GDP" validate --backend cuda --graph "$OUT/$name.json" \
              --placement "$OUT/${name}_rr.json" --cluster "$OUT/gpu_cluster.json" \
              --profile "$OUT/gpu_profile.json" --trace-out "$OUT/${name}_gpu_trace.json" \
              --sim-trace-out "$OUT/${name}_sim_trace.json" --json > "$OUT/${name}_validate.json" &&
            cat "$OUT/${name}_validate.json") \
            >> "$LOG/validate_cuda.log" 2>&1; then
        :
      else
        val_ok=0
        echo "FAILED: $name" >> "$LOG/validate_cuda.log"
      fi
    done
    if [ "$val_ok" = 1 ]; then
      summary "ok   gdp validate --backend cuda on rnnlm_small, transformer_xl_small ($SECONDS s)"
    else
      summary "FAIL gdp validate --backend cuda (see validate_cuda.log)"
      status=1
    fi
  else
    summary "FAIL gdp calibrate --backend cuda --quick (see calibrate_cuda.log)"
    status=1
  fi
fi

# 5. with the time left, the tests once more under compute-sanitizer memcheck (out-of-bounds
#    and misaligned accesses the value checks cannot see). Informational when it times out.
left=$((BUDGET_S - SECONDS))
SAN=/usr/local/cuda/bin/compute-sanitizer
if [ -x "$SAN" ] && [ "$left" -gt 45 ]; then
  (cd "$ROOT" && timeout "$left" "$SAN" --tool memcheck --leak-check no --error-exitcode 3 \
      "$BUILD_DIR/tests/test_cuda") > "$LOG/memcheck.log" 2>&1
  rc=$?
  case $rc in
    0) summary "ok   compute-sanitizer memcheck ($SECONDS s)" ;;
    124) summary "note compute-sanitizer memcheck timed out after ${left}s (partial log in memcheck.log)" ;;
    *) summary "FAIL compute-sanitizer memcheck rc=$rc (see memcheck.log)"; status=1 ;;
  esac
else
  summary "note compute-sanitizer skipped (missing or ${left}s left)"
fi

summary "gpu_check: done in $SECONDS s, status $status"
exit $status
