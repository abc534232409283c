// The row-major cuBLAS GEMM wrapper against a CPU triple loop: every transpose
// combination, alpha/beta, odd sizes, and strided batches with padded strides.
#include <tuple>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

// C (batch,M,N) = alpha op(A) op(B) + beta C, row-major, double accumulation.
std::vector<float> gemm_ref(const std::vector<float>& A, const std::vector<float>& B,
                            const std::vector<float>& C0, int batch, int M, int N, int K, bool ta,
                            bool tb, float alpha, float beta, std::size_t sa, std::size_t sb,
                            std::size_t sc) {
  std::vector<float> C(C0);
  for (int p = 0; p < batch; ++p)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) {
          float a = ta ? A[p * sa + std::size_t(k) * M + i] : A[p * sa + std::size_t(i) * K + k];
          float b = tb ? B[p * sb + std::size_t(j) * K + k] : B[p * sb + std::size_t(k) * N + j];
          s += double(a) * b;
        }
        float& c = C[p * sc + std::size_t(i) * N + j];
        c = float(alpha * s + double(beta) * c);
      }
  return C;
}

}  // namespace

TEST_CASE("cuda/gemm row-major vs cpu", "[cuda]") {
  std::mt19937 rng(60);
  std::vector<std::tuple<int, int, int>> shapes;
  for (int M : {1, 7, 33, 127})
    for (int N : {1, 7, 33, 127})
      for (int K : {1, 7, 127}) shapes.push_back({M, N, K});
  shapes.push_back({257, 1000, 129});
  for (auto [M, N, K] : shapes) {
    for (int t = 0; t < 4; ++t) {
      bool ta = t & 1, tb = t & 2;
      float alpha = 0.5f + t, beta = (t % 2) ? 0.0f : -0.75f;
      auto A = random_vec(std::size_t(M) * K, rng), B = random_vec(std::size_t(K) * N, rng);
      auto C0 = random_vec(std::size_t(M) * N, rng);
      auto d_A = to_device(A), d_B = to_device(B), d_C = to_device(C0);
      gemm(d_C.data(), d_A.data(), d_B.data(), M, N, K, ta, tb, alpha, beta);
      auto ref = gemm_ref(A, B, C0, 1, M, N, K, ta, tb, alpha, beta, 0, 0, 0);
      std::string what = "M=" + std::to_string(M) + " N=" + std::to_string(N) +
                         " K=" + std::to_string(K) + " ta=" + std::to_string(ta) +
                         " tb=" + std::to_string(tb);
      check_close(to_host(d_C), ref, 1e-4f, 1e-4f, "gemm " + what);
    }
  }
}

TEST_CASE("cuda/gemm strided batched vs cpu", "[cuda]") {
  std::mt19937 rng(61);
  for (auto [batch, M, N, K] : std::vector<std::tuple<int, int, int, int>>{
           {1, 7, 5, 3}, {4, 33, 17, 64}, {3, 256, 512, 32}}) {
    for (int t = 0; t < 4; ++t) {
      bool ta = t & 1, tb = t & 2;
      // padded strides: matrices do not touch, and the padding must stay untouched
      std::size_t sa = std::size_t(M) * K + 3, sb = std::size_t(K) * N + 5,
                  sc = std::size_t(M) * N + 7;
      auto A = random_vec(sa * batch, rng), B = random_vec(sb * batch, rng),
           C0 = random_vec(sc * batch, rng);
      auto d_A = to_device(A), d_B = to_device(B), d_C = to_device(C0);
      gemm_strided_batched(d_C.data(), d_A.data(), d_B.data(), batch, M, N, K, ta, tb, 1.25f, 0.5f,
                           (long long)sa, (long long)sb, (long long)sc);
      auto ref = gemm_ref(A, B, C0, batch, M, N, K, ta, tb, 1.25f, 0.5f, sa, sb, sc);
      check_close(to_host(d_C), ref, 1e-4f, 1e-4f,
                  "batched gemm batch=" + std::to_string(batch) + " M=" + std::to_string(M) +
                      " t=" + std::to_string(t));
    }
  }
}
