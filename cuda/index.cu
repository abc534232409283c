// Rows by index: gather, scatter-add (atomics) and the embedding lookup built on them;
// one column per row by index (take-along-last).
#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// out (M,C) = x[idx[m], :]; one thread per output element.
__global__ void gather_rows_kernel(float* out, const float* x, const int* idx, std::size_t n,
                                   int C) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t m = i / C, c = i % C;
    out[i] = x[static_cast<std::size_t>(idx[m]) * C + c];
  }
}

// out[idx[m], :] += src (M,C); atomics because indices repeat.
__global__ void scatter_add_rows_kernel(float* out, const float* src, const int* idx, std::size_t n,
                                        int C) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t m = i / C, c = i % C;
    atomicAdd(&out[static_cast<std::size_t>(idx[m]) * C + c], src[i]);
  }
}

// out (N) = x (N,C) [n, idx[n]]; one thread per row.
__global__ void take_along_last_forward_kernel(float* out, const float* x, const int* idx, int N,
                                               int C) {
  for (std::size_t n = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       n < static_cast<std::size_t>(N); n += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[n] = x[n * C + idx[n]];
}

// dx[n, idx[n]] += dout[n]; each row has its own target, so no atomics.
__global__ void take_along_last_backward_kernel(float* dx, const float* dout, const int* idx, int N,
                                                int C) {
  for (std::size_t n = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       n < static_cast<std::size_t>(N); n += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dx[n * C + idx[n]] += dout[n];
}

}  // namespace

void gather_rows(float* out, const float* x, const int* idx, int M, int C) {
  std::size_t n = static_cast<std::size_t>(M) * C;
  if (n == 0) return;
  gather_rows_kernel<<<grid_for(n, 256), 256>>>(out, x, idx, n, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void scatter_add_rows(float* out, const float* src, const int* idx, int M, int C) {
  std::size_t n = static_cast<std::size_t>(M) * C;
  if (n == 0) return;
  scatter_add_rows_kernel<<<grid_for(n, 256), 256>>>(out, src, idx, n, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void embedding_forward(float* out, const float* table, const int* idx, int M, int C) {
  gather_rows(out, table, idx, M, C);
}

void embedding_backward(float* dtable, const float* dout, const int* idx, int M, int C) {
  scatter_add_rows(dtable, dout, idx, M, C);
}

void take_along_last_forward(float* out, const float* x, const int* idx, int N, int C) {
  if (N <= 0 || C <= 0) return;
  take_along_last_forward_kernel<<<grid_for(static_cast<std::size_t>(N), 256), 256>>>(out, x, idx,
                                                                                      N, C);
  GDP_CUDA_CHECK_LAUNCH();
}

void take_along_last_backward(float* dx, const float* dout, const int* idx, int N, int C) {
  if (N <= 0 || C <= 0) return;
  take_along_last_backward_kernel<<<grid_for(static_cast<std::size_t>(N), 256), 256>>>(dx, dout,
                                                                                       idx, N, C);
  GDP_CUDA_CHECK_LAUNCH();
}

}  // namespace gdp::cuda
