// Reductions over the last dim (sum, mean, max with argmax; one warp per row) and the
// full sum (block partials combined with atomics), with their backward broadcasts.
#include <cfloat>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// out (N) = sum_j x (N,C) [row, j] * mul; one warp per row, lanes stride the columns.
__global__ void row_sum_kernel(float* out, const float* x, int N, int C, float mul) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* xr = x + static_cast<std::size_t>(row) * C;
  float s = 0.0f;
  for (int j = lane; j < C; j += kWarp) s += xr[j];
  s = warp_sum(s);
  if (lane == 0) out[row] = s * mul;
}

// out (N) = max_j x[row, j], argmax (N) = its first column; C == 0 gives 0 and -1.
__global__ void row_max_kernel(float* out, int* argmax, const float* x, int N, int C) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* xr = x + static_cast<std::size_t>(row) * C;
  float m = -FLT_MAX;
  int idx = -1;
  for (int j = lane; j < C; j += kWarp) {
    float v = xr[j];
    if (idx < 0 || v > m) {  // a lane sees its columns in increasing order: keep the first
      m = v;
      idx = j;
    }
  }
  warp_argmax(m, idx);
  if (lane == 0) {
    out[row] = idx < 0 ? 0.0f : m;
    argmax[row] = idx;
  }
}

// dx (N,C) += dout (N) [row] * mul.
__global__ void row_broadcast_backward_kernel(float* dx, const float* dout, std::size_t n, int C,
                                              float mul) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dx[i] += dout[i / C] * mul;
}

// dx (N,C) [row, argmax[row]] += dout[row]; one thread per row.
__global__ void row_max_backward_kernel(float* dx, const float* dout, const int* argmax, int N,
                                        int C) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= N) return;
  int j = argmax[row];
  if (j >= 0) dx[static_cast<std::size_t>(row) * C + j] += dout[row];
}

// out[0] += sum of x (n): block-wide sum, then one atomicAdd per block.
__global__ void sum_all_kernel(float* out, const float* x, std::size_t n) {
  __shared__ float warp_part[32];
  float s = 0.0f;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    s += x[i];
  s = warp_sum(s);
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) warp_part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < static_cast<int>(blockDim.x / kWarp) ? warp_part[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) atomicAdd(out, s);
  }
}

// dx (n) += dout[0].
__global__ void sum_all_backward_kernel(float* dx, const float* dout, std::size_t n) {
  float g = dout[0];
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dx[i] += g;
}

void row_sum(float* out, const float* x, int N, int C, float mul) {
  if (N == 0) return;
  row_sum_kernel<<<rows_grid(N), kRowBlock>>>(out, x, N, C, mul);
  GDP_CUDA_CHECK_LAUNCH();
}

void row_broadcast_backward(float* dx, const float* dout, int N, int C, float mul) {
  std::size_t n = static_cast<std::size_t>(N) * C;
  if (n == 0) return;
  row_broadcast_backward_kernel<<<grid_for(n, 256), 256>>>(dx, dout, n, C, mul);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace

void sum_forward(float* out, const float* x, int N, int C) { row_sum(out, x, N, C, 1.0f); }
void mean_forward(float* out, const float* x, int N, int C) {
  row_sum(out, x, N, C, C > 0 ? 1.0f / C : 0.0f);
}
void sum_backward(float* dx, const float* dout, int N, int C) {
  row_broadcast_backward(dx, dout, N, C, 1.0f);
}
void mean_backward(float* dx, const float* dout, int N, int C) {
  row_broadcast_backward(dx, dout, N, C, C > 0 ? 1.0f / C : 0.0f);
}

void max_forward(float* out, int* argmax, const float* x, int N, int C) {
  if (N == 0) return;
  row_max_kernel<<<rows_grid(N), kRowBlock>>>(out, argmax, x, N, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void max_backward(float* dx, const float* dout, const int* argmax, int N, int C) {
  if (N == 0) return;
  row_max_backward_kernel<<<ceil_div(N, 256), 256>>>(dx, dout, argmax, N, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void sum_all_forward(float* out, const float* x, std::size_t n) {
  GDP_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float)));
  if (n == 0) return;
  unsigned int grid = grid_for(n, 256);
  if (grid > 1024) grid = 1024;
  sum_all_kernel<<<grid, 256>>>(out, x, n);
  GDP_CUDA_CHECK_LAUNCH();
}

void sum_all_backward(float* dx, const float* dout, std::size_t n) {
  if (n == 0) return;
  sum_all_backward_kernel<<<grid_for(n, 256), 256>>>(dx, dout, n);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace gdp::cuda
