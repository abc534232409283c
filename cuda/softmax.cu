// Softmax and log-softmax over the last dim: one warp per row, an online max/sum pass
// (numerically stable) then a write pass; backward is one dot product per row.
#include <cfloat>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// Online (max, sum exp) over one row split across a warp: returns both warp-wide.
// -FLT_MAX (not -inf) as the start keeps exp(m_old - m_new) finite for empty lanes.
__device__ inline void warp_online_softmax(const float* xr, int C, int lane, float& m, float& s) {
  m = -FLT_MAX;
  s = 0.0f;
  for (int j = lane; j < C; j += kWarp) {
    float v = xr[j];
    if (v > m) {
      s *= expf(m - v);
      m = v;
    }
    s += expf(v - m);
  }
  float wm = warp_max(m);
  s = warp_sum(s * expf(m - wm));
  m = wm;
}

// out (N,C) = softmax or log_softmax of x (N,C) along C.
template <bool kLog>
__global__ void softmax_forward_kernel(float* out, const float* x, int N, int C) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* xr = x + static_cast<std::size_t>(row) * C;
  float* yr = out + static_cast<std::size_t>(row) * C;
  float m, s;
  warp_online_softmax(xr, C, lane, m, s);
  if constexpr (kLog) {
    float lse = m + logf(s);
    for (int j = lane; j < C; j += kWarp) yr[j] = xr[j] - lse;
  } else {
    float inv = s > 0.0f ? 1.0f / s : 0.0f;  // an all -inf row gives zeros, not NaN
    for (int j = lane; j < C; j += kWarp) yr[j] = expf(xr[j] - m) * inv;
  }
}

// dx (N,C) += y (dout - <dout, y>)  or, for log-softmax, dout - exp(y) sum(dout).
template <bool kLog>
__global__ void softmax_backward_kernel(float* dx, const float* dout, const float* y, int N,
                                        int C) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  std::size_t off = static_cast<std::size_t>(row) * C;
  const float* gr = dout + off;
  const float* yr = y + off;
  float* dr = dx + off;
  float acc = 0.0f;
  for (int j = lane; j < C; j += kWarp) acc += kLog ? gr[j] : gr[j] * yr[j];
  acc = warp_sum(acc);
  for (int j = lane; j < C; j += kWarp) {
    if constexpr (kLog)
      dr[j] += gr[j] - expf(yr[j]) * acc;
    else
      dr[j] += yr[j] * (gr[j] - acc);
  }
}

template <bool kLog>
void launch_forward(float* out, const float* x, int N, int C) {
  if (N == 0 || C == 0) return;
  softmax_forward_kernel<kLog><<<rows_grid(N), kRowBlock>>>(out, x, N, C);
  GDP_CUDA_CHECK_LAUNCH();
}

template <bool kLog>
void launch_backward(float* dx, const float* dout, const float* out, int N, int C) {
  if (N == 0 || C == 0) return;
  softmax_backward_kernel<kLog><<<rows_grid(N), kRowBlock>>>(dx, dout, out, N, C);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void softmax_forward(float* out, const float* x, int N, int C) {
  launch_forward<false>(out, x, N, C);
}
void log_softmax_forward(float* out, const float* x, int N, int C) {
  launch_forward<true>(out, x, N, C);
}
void softmax_backward(float* dx, const float* out, const float* dout, int N, int C) {
  launch_backward<false>(dx, dout, out, N, C);
}
void log_softmax_backward(float* dx, const float* out, const float* dout, int N, int C) {
  launch_backward<true>(dx, dout, out, N, C);
}

}  // namespace gdp::cuda
