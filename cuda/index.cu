// Rows by index: gather, scatter-add (atomics) and the embedding lookup built on them.
#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

// out (M,C) = x[idx[m], :]; one thread per output element.
__global__ void gather_rows_kernel(float* out, const float* x, const int* idx, std::size_t n, int C) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t m = i / C, c = i % C;
    out[i] = x[static_cast<std::size_t>(idx[m]) * C + c];
  }
}

// out[idx[m], :] += src (M,C); atomics because indices repeat.
__global__ void scatter_add_rows_kernel(float* out, const float* src, const int* idx, std::size_t n, int C) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::size_t m = i / C, c = i % C;
    atomicAdd(&out[static_cast<std::size_t>(idx[m]) * C + c], src[i]);
  }
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

}  // namespace gdp::cuda
