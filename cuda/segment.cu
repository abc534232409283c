// Segment mean / max over a CSR neighbour list (the GraphSAGE aggregation): one warp per
// segment, lanes over the columns so neighbour rows are read coalesced; backward scatters
// with atomics (a node is the neighbour of many segments).
#include <cfloat>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// out (R,C) = mean over e in [row_ptr[r], row_ptr[r+1]) of x[col_idx[e], :]; empty -> 0.
__global__ void segment_mean_forward_kernel(float* out, const float* x, const int* row_ptr,
                                            const int* col_idx, int R, int C) {
  int r = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (r >= R) return;
  int e0 = row_ptr[r], e1 = row_ptr[r + 1];
  float inv = e1 > e0 ? 1.0f / (e1 - e0) : 0.0f;
  for (int c = lane; c < C; c += kWarp) {
    float acc = 0.0f;
    for (int e = e0; e < e1; ++e) acc += x[static_cast<std::size_t>(col_idx[e]) * C + c];
    out[static_cast<std::size_t>(r) * C + c] = acc * inv;
  }
}

// dx[col_idx[e], :] += dout (R,C) [r, :] / degree(r).
__global__ void segment_mean_backward_kernel(float* dx, const float* dout, const int* row_ptr,
                                             const int* col_idx, int R, int C) {
  int r = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (r >= R) return;
  int e0 = row_ptr[r], e1 = row_ptr[r + 1];
  if (e1 <= e0) return;
  float inv = 1.0f / (e1 - e0);
  for (int c = lane; c < C; c += kWarp) {
    float g = dout[static_cast<std::size_t>(r) * C + c] * inv;
    for (int e = e0; e < e1; ++e) atomicAdd(&dx[static_cast<std::size_t>(col_idx[e]) * C + c], g);
  }
}

// out (R,C) = max over the segment's rows, argmax (R,C) = the x row of the first maximum.
__global__ void segment_max_forward_kernel(float* out, int* argmax, const float* x,
                                           const int* row_ptr, const int* col_idx, int R, int C) {
  int r = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (r >= R) return;
  int e0 = row_ptr[r], e1 = row_ptr[r + 1];
  for (int c = lane; c < C; c += kWarp) {
    float m = -FLT_MAX;
    int a = -1;
    for (int e = e0; e < e1; ++e) {
      int nb = col_idx[e];
      float v = x[static_cast<std::size_t>(nb) * C + c];
      if (a < 0 || v > m) {
        m = v;
        a = nb;
      }
    }
    std::size_t o = static_cast<std::size_t>(r) * C + c;
    out[o] = a < 0 ? 0.0f : m;
    argmax[o] = a;
  }
}

// dx[argmax[r,c], c] += dout[r,c]; one thread per (r, c).
__global__ void segment_max_backward_kernel(float* dx, const float* dout, const int* argmax,
                                            std::size_t n, int C) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    int a = argmax[i];
    if (a >= 0) atomicAdd(&dx[static_cast<std::size_t>(a) * C + i % C], dout[i]);
  }
}

}  // namespace

void segment_mean_forward(float* out, const float* x, const int* row_ptr, const int* col_idx, int R,
                          int C) {
  if (R == 0 || C == 0) return;
  segment_mean_forward_kernel<<<rows_grid(R), kRowBlock>>>(out, x, row_ptr, col_idx, R, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void segment_mean_backward(float* dx, const float* dout, const int* row_ptr, const int* col_idx,
                           int R, int C) {
  if (R == 0 || C == 0) return;
  segment_mean_backward_kernel<<<rows_grid(R), kRowBlock>>>(dx, dout, row_ptr, col_idx, R, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void segment_max_forward(float* out, int* argmax, const float* x, const int* row_ptr,
                         const int* col_idx, int R, int C) {
  if (R == 0 || C == 0) return;
  segment_max_forward_kernel<<<rows_grid(R), kRowBlock>>>(out, argmax, x, row_ptr, col_idx, R, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void segment_max_backward(float* dx, const float* dout, const int* argmax, int R, int C) {
  std::size_t n = static_cast<std::size_t>(R) * C;
  if (n == 0) return;
  segment_max_backward_kernel<<<grid_for(n, 256), 256>>>(dx, dout, argmax, n, C);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace gdp::cuda
