// Micro-benchmarks of this machine's GPUs as a device kind, for `gdp calibrate --backend cuda`:
// op samples of every class through the kernels of cuda/kernels.h on the first GPU (cuBLAS
// GEMMs, convolutions as the GEMM of their im2col shape, element-wise, reductions, softmax,
// layer norm, transpose, device-to-device copies), the launch overhead, host<->device copies,
// and peer copies between every ordered pair of GPUs. Times with CUDA events on the stream:
// warm-up, then the median of repeats. Compiled with the CUDA backend only (GDP_HAVE_CUDA);
// the header itself has no CUDA type.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calib/cpu_bench.h"
#include "calib/fit.h"

namespace gdp::calib {

struct CudaBenchOptions {
  BenchSize size = BenchSize::full;
  int device = 0;     // the GPU whose ops are measured
  bool peers = true;  // measure peer copies between every ordered pair of GPUs
  std::function<void(const std::string&)> progress;  // one line per measurement; may be empty
};

// Copies from GPU `src` to GPU `dst` (peer copies, or host round trips without peer access).
struct PeerCopies {
  int src = 0, dst = 0;
  bool direct = false;  // peer access was enabled (else staged through pinned host memory)
  std::vector<CopySample> copies;
};

struct CudaBenchResult {
  int gpus = 0;                       // visible GPUs
  int device = 0;                     // the GPU whose ops were measured
  std::vector<std::string> names;     // (gpus) cuda device names
  std::vector<int64_t> memory_bytes;  // (gpus)
  int sm_count = 0;                   // of `device`
  double sm_clock_hz = 0;             // of `device`, 0 when unknown
  std::vector<OpSample> ops;          // every class but `other`
  std::vector<CopySample> h2d, d2h;   // pinned host <-> `device`
  std::vector<PeerCopies> peers;      // every ordered pair of GPUs (when options.peers)
  double peak_flops = 0;              // best GEMM flop/s observed
  std::string peak_from;
  double bandwidth_Bps = 0;  // best device-to-device copy (bytes read + written / s)
  std::string bandwidth_from;
  double launch_s = 0;  // a 1-element scale kernel, back to back (the launch rate)
  double wall_s = 0;
};

CudaBenchResult run_cuda_benchmarks(const CudaBenchOptions& opt);

}  // namespace gdp::calib
