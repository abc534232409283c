// The emulator's own semantics, with exact answers: shuffles exchange between lanes,
// __syncthreads waits for the whole block (exited threads count as arrived), deadlocks and
// shuffles naming exited lanes are launch failures, atomics add up, launch checks, and
// cuBLAS SGEMM in column-major storage (op, ld, alpha, beta; beta == 0 never reads C).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "cublas_emu.h"
#include "cuda_emu.h"

namespace {

template <class F>
void run(bool barriers, dim3 grid, dim3 block, F f) {
  static const emu::KernelSite site{"test_kernel", __FILE__, __LINE__, true};
  static const emu::KernelSite plain{"test_kernel", __FILE__, __LINE__, false};
  emu::launch(barriers ? site : plain, grid, block, f);
}

template <class T>
T* dev(std::size_t n) {
  T* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  return p;
}

}  // namespace

TEST_CASE("cuda_emu/shuffle xor exchanges values between lanes", "[cuda_emu]") {
  int* out = dev<int>(64 * 5);
  float* fout = dev<float>(64);
  run(true, 1, 64, [=] {
    int t = threadIdx.x;
    for (int k = 0; k < 5; ++k) out[t * 5 + k] = __shfl_xor_sync(0xffffffffu, t * 10, 1 << k);
    float v = static_cast<float>(t % 32);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    fout[t] = v;
  });
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (int t = 0; t < 64; ++t) {
    for (int k = 0; k < 5; ++k) CHECK(out[t * 5 + k] == (t ^ (1 << k)) * 10);
    CHECK(fout[t] == 496.0f);  // 0 + 1 + ... + 31 in every lane
  }
  cudaFree(out);
  cudaFree(fout);
}

TEST_CASE("cuda_emu/syncthreads waits for the block, exited threads count as arrived",
          "[cuda_emu]") {
  float* out = dev<float>(3 * 100);
  run(true, 3, 100, [=] {
    __shared__ float buf[100];
    int t = threadIdx.x;
    buf[t] = static_cast<float>(blockIdx.x * 1000 + t);
    __syncthreads();
    if (t >= 50) return;  // half the block leaves before the second barrier
    float v = buf[99 - t];
    __syncthreads();
    buf[t] = v;
    __syncthreads();
    out[blockIdx.x * 100 + t] = buf[t];
  });
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 50; ++t) CHECK(out[b * 100 + t] == static_cast<float>(b * 1000 + 99 - t));
  cudaFree(out);
}

TEST_CASE("cuda_emu/shared memory is fresh (NaN) in every block", "[cuda_emu]") {
  float* out = dev<float>(2 * 64);
  run(true, 2, 64, [=] {
    __shared__ float buf[64];
    emu::detail::fresh_shared(buf,
                              sizeof(buf));  // what rewrite.py adds after a __shared__ declaration
    int t = threadIdx.x;
    if (blockIdx.x == 0 || t % 2 == 0) buf[t] = 1.0f;  // block 1 writes only the even elements
    __syncthreads();
    out[blockIdx.x * 64 + t] = buf[t];
  });
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (int t = 0; t < 64; ++t) {
    CHECK(out[t] == 1.0f);
    CHECK((t % 2 == 0 ? out[64 + t] == 1.0f : std::isnan(out[64 + t])));
  }
  cudaFree(out);
}

TEST_CASE("cuda_emu/deadlocks and shuffles naming exited lanes fail the launch", "[cuda_emu]") {
  run(true, 1, 64, [] {  // half a warp at a barrier, the other half in a full-warp shuffle
    if (threadIdx.x < 16)
      __syncthreads();
    else
      (void)__shfl_xor_sync(0xffffffffu, 1, 1);
  });
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  run(true, 1, 32, [] {
    if (threadIdx.x == 5) return;
    (void)__shfl_xor_sync(0xffffffffu, 1.0f, 1);
  });
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  run(true, 1, 48, [] { (void)__shfl_xor_sync(0xffffffffu, 1.0f, 16); });  // warp 1 has 16 lanes
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  // the emulator is usable afterwards
  int* out = dev<int>(32);
  run(true, 1, 32,
      [=] { out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 31); });
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (int t = 0; t < 32; ++t) CHECK(out[t] == 31 - t);
  cudaFree(out);
}

TEST_CASE("cuda_emu/atomics, grids in three dims and launch checks", "[cuda_emu]") {
  float* sum = dev<float>(1);
  int* count = dev<int>(1);
  REQUIRE(cudaMemset(sum, 0, sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemset(count, 0, sizeof(int)) == cudaSuccess);
  run(false, dim3(3, 2, 2), dim3(4, 3, 2), [=] {
    atomicAdd(sum, 0.5f);
    atomicAdd(count, static_cast<int>(blockIdx.z * 100 + threadIdx.z));
  });
  REQUIRE(cudaGetLastError() == cudaSuccess);
  CHECK(*sum == 0.5f * 12 * 24);
  CHECK(*count ==
        6 * 24 * 100 + 12 * 12);  // 6 of 12 blocks have z = 1; 12 of 24 threads have z = 1
  run(false, 1, 1025, [] {});
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  run(false, dim3(1, 65536), 32, [] {});
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  void* big = nullptr;
  CHECK(cudaMalloc(&big, std::size_t{1} << 50) == cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError() == cudaSuccess);
  std::vector<float> host(4);
  CHECK(cudaMemcpy(host.data(), sum, 2 * sizeof(float), cudaMemcpyDeviceToHost) ==
        cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaFree(sum);
  cudaFree(count);
}

TEST_CASE("cuda_emu/cublas sgemm is column-major with op, ld, alpha and beta", "[cuda_emu]") {
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
  // column-major A (2x3, lda 3: one padding row), B^T stored (2x3) for op(B) (3x2), C (2x2, ldc 2)
  std::vector<float> A = {1, 2, -9, 3, 4, -9, 5, 6, -9};  // A = [1 3 5; 2 4 6]
  std::vector<float> Bt = {1, 2, 0,
                           1, 1, 0};  // stored (2x3) col-major: op(B) = Bt^T = [1 2; 0 1; 1 0]
  float* dA = dev<float>(9);
  float* dB = dev<float>(6);
  float* dC = dev<float>(4);
  cudaMemcpy(dA, A.data(), 9 * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dB, Bt.data(), 6 * sizeof(float), cudaMemcpyHostToDevice);
  std::vector<float> C0 = {std::numeric_limits<float>::quiet_NaN(), 1, 1, 1};
  cudaMemcpy(dC, C0.data(), 4 * sizeof(float), cudaMemcpyHostToDevice);
  float alpha = 2.0f, beta = 0.0f;
  REQUIRE(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 2, 3, &alpha, dA, 3, dB, 2, &beta, dC, 2) ==
          CUBLAS_STATUS_SUCCESS);
  std::vector<float> C(4);
  cudaMemcpy(C.data(), dC, 4 * sizeof(float), cudaMemcpyDeviceToHost);
  // A op(B) = [1+5, 2+3; 2+6, 4+4] = [6 5; 8 8], times 2, column-major; the NaN in C is not read
  CHECK(C == std::vector<float>{12, 16, 10, 16});
  beta = 0.5f;
  REQUIRE(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 2, 3, &alpha, dA, 3, dB, 2, &beta, dC, 2) ==
          CUBLAS_STATUS_SUCCESS);
  cudaMemcpy(C.data(), dC, 4 * sizeof(float), cudaMemcpyDeviceToHost);
  CHECK(C == std::vector<float>{18, 24, 15, 24});
  CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 2, 3, &alpha, dA, 1, dB, 2, &beta, dC, 2) ==
        CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 2, 2, 4, &alpha, dA, 3, dB, 2, &beta, dC, 2) ==
        CUBLAS_STATUS_INVALID_VALUE);  // k = 4 reads past the end of B
  cublasDestroy(h);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
}
