// Layer norm over the last dim: one warp per row for the forward and for dx; the weight
// and bias gradients are column sums done by (32 columns x 8 row-lanes) blocks.
#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// out (N,C), mean (N), rstd (N) from x (N,C), weight (C), bias (C). Two passes over the
// row for the variance (no E[x^2]-E[x]^2 cancellation).
__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* x,
                                         const float* w, const float* b, int N, int C, float eps) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* xr = x + static_cast<std::size_t>(row) * C;
  float* yr = out + static_cast<std::size_t>(row) * C;
  float s = 0.0f;
  for (int j = lane; j < C; j += kWarp) s += xr[j];
  float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int j = lane; j < C; j += kWarp) {
    float d = xr[j] - m;
    v += d * d;
  }
  float rs = rsqrtf(warp_sum(v) / C + eps);
  for (int j = lane; j < C; j += kWarp) yr[j] = (xr[j] - m) * rs * w[j] + b[j];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = rs;
  }
}

// dx (N,C) += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight.
__global__ void layernorm_backward_dx_kernel(float* dx, const float* dout, const float* x,
                                             const float* w, const float* mean, const float* rstd,
                                             int N, int C) {
  int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  std::size_t off = static_cast<std::size_t>(row) * C;
  const float* xr = x + off;
  const float* gr = dout + off;
  float m = mean[row], rs = rstd[row];
  float sg = 0.0f, sgx = 0.0f;
  for (int j = lane; j < C; j += kWarp) {
    float g = gr[j] * w[j];
    sg += g;
    sgx += g * (xr[j] - m) * rs;
  }
  sg = warp_sum(sg) / C;
  sgx = warp_sum(sgx) / C;
  float* dr = dx + off;
  for (int j = lane; j < C; j += kWarp) {
    float xhat = (xr[j] - m) * rs;
    dr[j] += rs * (gr[j] * w[j] - sg - xhat * sgx);
  }
}

// dweight (C) += sum_rows dout * xhat; dbias (C) += sum_rows dout. Either may be nullptr.
__global__ void layernorm_backward_dwdb_kernel(float* dw, float* db, const float* dout,
                                               const float* x, const float* mean, const float* rstd,
                                               int N, int C) {
  __shared__ float part_w[8][33];
  __shared__ float part_b[8][33];
  int col = blockIdx.x * 32 + threadIdx.x;
  float aw = 0.0f, ab = 0.0f;
  if (col < C) {
    for (int r = blockIdx.y * 8 + threadIdx.y; r < N; r += gridDim.y * 8) {
      std::size_t i = static_cast<std::size_t>(r) * C + col;
      float g = dout[i];
      aw += g * (x[i] - mean[r]) * rstd[r];
      ab += g;
    }
  }
  part_w[threadIdx.y][threadIdx.x] = aw;
  part_b[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && col < C) {
    float sw = 0.0f, sb = 0.0f;
    for (int y = 0; y < 8; ++y) {
      sw += part_w[y][threadIdx.x];
      sb += part_b[y][threadIdx.x];
    }
    if (dw) atomicAdd(&dw[col], sw);
    if (db) atomicAdd(&db[col], sb);
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* weight,
                       const float* bias, int N, int C, float eps) {
  if (N == 0 || C == 0) return;
  layernorm_forward_kernel<<<rows_grid(N), kRowBlock>>>(out, mean, rstd, x, weight, bias, N, C,
                                                        eps);
  GDP_CUDA_CHECK_LAUNCH();
}

void layernorm_backward(float* dx, float* dweight, float* dbias, const float* dout, const float* x,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  if (N == 0 || C == 0) return;
  if (dx) {
    layernorm_backward_dx_kernel<<<rows_grid(N), kRowBlock>>>(dx, dout, x, weight, mean, rstd, N,
                                                              C);
    GDP_CUDA_CHECK_LAUNCH();
  }
  if (dweight || dbias) {
    unsigned int gy = ceil_div(static_cast<std::size_t>(N), 8 * 32);
    if (gy > 256) gy = 256;
    dim3 grid(ceil_div(static_cast<std::size_t>(C), 32), gy);
    layernorm_backward_dwdb_kernel<<<grid, dim3(32, 8)>>>(dweight, dbias, dout, x, mean, rstd, N,
                                                          C);
    GDP_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gdp::cuda
