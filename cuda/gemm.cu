// Row-major GEMM on cuBLAS (which is column-major): a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so the operands swap and nothing is copied.
#include <cublas_v2.h>

#include "cuda/common.cuh"
#include "cuda/kernels.h"

namespace gdp::cuda {

namespace {

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error in ") + what + ": " +
                             cublasGetStatusString(st));
}

// One handle for the process, created on first use on the current device and never
// destroyed (destroying it after the CUDA context is torn down at exit would fail).
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    check_cublas(cublasCreate(&created), "cublasCreate");
    check_cublas(cublasSetMathMode(created, CUBLAS_DEFAULT_MATH),
                 "cublasSetMathMode");  // true fp32
    return created;
  }();
  return h;
}

}  // namespace

void gemm_strided_batched(float* C, const float* A, const float* B, int batch, int M, int N, int K,
                          bool trans_a, bool trans_b, float alpha, float beta, long long stride_a,
                          long long stride_b, long long stride_c) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  int lda = trans_a ? M : K;  // A stored (K,M) when transposed, else (M,K)
  int ldb = trans_b ? K : N;  // B stored (N,K) when transposed, else (K,N)
  cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_cublas(cublasSgemmStridedBatched(handle(), op_b, op_a, N, M, K, &alpha, B,
                                         ldb > 0 ? ldb : 1, stride_b, A, lda > 0 ? lda : 1,
                                         stride_a, &beta, C, N, stride_c, batch),
               "cublasSgemmStridedBatched");
}

void gemm(float* C, const float* A, const float* B, int M, int N, int K, bool trans_a, bool trans_b,
          float alpha, float beta) {
  gemm_strided_batched(C, A, B, 1, M, N, K, trans_a, trans_b, alpha, beta, 0, 0, 0);
}

}  // namespace gdp::cuda
