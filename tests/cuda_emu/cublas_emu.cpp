// cuBLAS of the emulator: SGEMM with the reference BLAS definition in column-major storage,
// float accumulation (the default math mode: true fp32), cuBLAS's argument checks, and a
// check that every operand a call touches lies inside one live device allocation.
#include "cublas_emu.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "emu_state.h"

struct cublasContext {
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

cublasStatus_t invalid(const char* call, const std::string& why) {
  std::fprintf(stderr, "cuda emulator: %s: %s\n", call, why.c_str());
  return CUBLAS_STATUS_INVALID_VALUE;
}

// Whether the rows x cols column-major matrices at p + b * stride (b < batch), leading
// dimension ld, lie inside one device allocation.
bool operand_in_device(const float* p, long long rows, long long cols, long long ld,
                       long long stride, long long batch) {
  if (rows == 0 || cols == 0 || batch == 0) return true;
  long long last = (cols - 1) * ld + rows - 1;  // of one matrix
  long long lo = std::min(0LL, stride * (batch - 1)),
            hi = std::max(0LL, stride * (batch - 1)) + last;
  return emu::detail::device_range(p + lo, static_cast<std::size_t>(hi - lo + 1) * sizeof(float));
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* A, int lda,
                                         long long stride_a, const float* B, int ldb,
                                         long long stride_b, const float* beta, float* C, int ldc,
                                         long long stride_c, int batch) {
  const char* call = "cublasSgemmStridedBatched";
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (transa == CUBLAS_OP_C || transb == CUBLAS_OP_C)
    return invalid(call, "CUBLAS_OP_C is not emulated");
  const bool ta = transa == CUBLAS_OP_T, tb = transb == CUBLAS_OP_T;
  if (m < 0 || n < 0 || k < 0 || batch < 0) return invalid(call, "negative size");
  const int rows_a = ta ? k : m, cols_a = ta ? m : k;  // A as stored
  const int rows_b = tb ? n : k, cols_b = tb ? k : n;
  if (lda < std::max(1, rows_a))
    return invalid(call, "lda " + std::to_string(lda) + " < rows of A " + std::to_string(rows_a));
  if (ldb < std::max(1, rows_b))
    return invalid(call, "ldb " + std::to_string(ldb) + " < rows of B " + std::to_string(rows_b));
  if (ldc < std::max(1, m))
    return invalid(call, "ldc " + std::to_string(ldc) + " < m " + std::to_string(m));
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const float a = *alpha, b = *beta;
  const bool reads_ab = k > 0 && a != 0.0f;
  if (reads_ab && !operand_in_device(A, rows_a, cols_a, lda, stride_a, batch))
    return invalid(call, "A (with lda, stride and batch) is not inside one device allocation");
  if (reads_ab && !operand_in_device(B, rows_b, cols_b, ldb, stride_b, batch))
    return invalid(call, "B (with ldb, stride and batch) is not inside one device allocation");
  if (!operand_in_device(C, m, n, ldc, stride_c, batch))
    return invalid(call, "C (with ldc, stride and batch) is not inside one device allocation");
  for (long long p = 0; p < batch; ++p) {
    const float* Ap = A + p * stride_a;
    const float* Bp = B + p * stride_b;
    float* Cp = C + p * stride_c;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        float acc = 0.0f;
        if (reads_ab)
          for (int l = 0; l < k; ++l) {
            const float av = ta ? Ap[l + static_cast<long long>(i) * lda]
                                : Ap[i + static_cast<long long>(l) * lda];
            const float bv = tb ? Bp[j + static_cast<long long>(l) * ldb]
                                : Bp[l + static_cast<long long>(j) * ldb];
            acc += av * bv;
          }
        float& c = Cp[i + static_cast<long long>(j) * ldc];
        c = b == 0.0f ? a * acc : a * acc + b * c;  // beta == 0: C is not read (may hold NaN)
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc) {
  return cublasSgemmStridedBatched(handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0,
                                   beta, C, ldc, 0, 1);
}
