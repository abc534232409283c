// Shared device-side helpers of the CUDA backend: error checks, launch sizes, warp sums.
// Included only by cuda/*.cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace gdp::cuda {

// Clears the runtime's last-error slot first (a failed cudaMalloc would otherwise be
// reported again by the next launch check), then throws with the call and its place.
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* what, const char* file,
                                          int line) {
  (void)cudaGetLastError();
  throw std::runtime_error(std::string("CUDA error in ") + what + " at " + file + ":" +
                           std::to_string(line) + ": " + cudaGetErrorString(err));
}

#define GDP_CUDA_CHECK(call)                                                            \
  do {                                                                                  \
    cudaError_t gdp_err_ = (call);                                                      \
    if (gdp_err_ != cudaSuccess) throw_cuda_error(gdp_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: reports bad launch configurations right away.
#define GDP_CUDA_CHECK_LAUNCH() GDP_CUDA_CHECK(cudaGetLastError())

inline unsigned int ceil_div(std::size_t a, std::size_t b) {
  return static_cast<unsigned int>((a + b - 1) / b);
}

// Grid for a grid-stride loop over n items: never more blocks than useful, capped so
// the grid size stays legal for any n.
inline unsigned int grid_for(std::size_t n, int block) {
  std::size_t g = (n + block - 1) / block;
  if (g > 65535u * 16u) g = 65535u * 16u;
  return g == 0 ? 1u : static_cast<unsigned int>(g);
}

constexpr int kWarp = 32;

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Warp-wide argmax: the largest value, ties to the smallest index; idx -1 loses.
__device__ inline void warp_argmax(float& v, int& idx) {
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, v, o);
    int oi = __shfl_xor_sync(0xffffffffu, idx, o);
    bool take = (oi >= 0) && (idx < 0 || ov > v || (ov == v && oi < idx));
    if (take) {
      v = ov;
      idx = oi;
    }
  }
}

// Launch geometry of the warp-per-row kernels: 8 warps per block, one row per warp.
constexpr int kRowBlock = 256;
inline unsigned int rows_grid(int N) {
  return ceil_div(static_cast<std::size_t>(N), kRowBlock / kWarp);
}

}  // namespace gdp::cuda
