// The CPU kernels the calibration times, against plain loops on odd sizes (atol + rtol*|ref|).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "calib/cpu_kernels.h"
#include "core/rng.h"

using namespace gdp;
using namespace gdp::calib;

namespace {
std::vector<float> random_vec(int64_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(r.uniform(-1, 1));
  return v;
}
void check_close(const std::vector<float>& got, const std::vector<double>& ref, double atol,
                 double rtol) {
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    INFO("index " << i);
    CHECK(std::abs(got[i] - ref[i]) <= atol + rtol * std::abs(ref[i]));
  }
}
}  // namespace

TEST_CASE("calib/kernels: gemm and convolution against loops", "[calib]") {
  const int64_t M = 7, N = 13, K = 33;
  auto A = random_vec(M * K, 1), B = random_vec(K * N, 2);
  std::vector<float> C(M * N);
  gemm(C.data(), A.data(), B.data(), M, N, K);
  std::vector<double> ref(M * N, 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) ref[i * N + j] += double(A[i * K + k]) * B[k * N + j];
  check_close(C, ref, 1e-5, 1e-5);

  for (ConvShape s : {ConvShape{2, 7, 9, 3, 5, 3, 3, 1, 1}, ConvShape{1, 11, 6, 4, 3, 5, 3, 2, 2},
                      ConvShape{1, 5, 5, 2, 2, 1, 1, 1, 0}}) {
    auto in = random_vec(s.B * s.H * s.W * s.Ci, 3), w = random_vec(s.KH * s.KW * s.Ci * s.Co, 4);
    std::vector<float> col(s.col_elements()), out(s.B * s.Ho() * s.Wo() * s.Co), want(out.size());
    conv2d_im2col(out.data(), col.data(), in.data(), w.data(), s);
    conv2d_reference(want.data(), in.data(), w.data(), s);
    check_close(out, std::vector<double>(want.begin(), want.end()), 1e-5, 1e-5);
  }
}

TEST_CASE("calib/kernels: element-wise reduction softmax layer-norm transpose against loops",
          "[calib]") {
  const int64_t R = 5, C = 37, n = R * C;
  auto x = random_vec(n, 5), y = random_vec(n, 6);
  std::vector<float> out(n);
  auto each = [&](auto f) {
    std::vector<double> r(n);
    for (int64_t i = 0; i < n; ++i) r[i] = f(double(x[i]), double(y[i]));
    return r;
  };
  add(out.data(), x.data(), y.data(), n);
  check_close(out, each([](double a, double b) { return a + b; }), 1e-7, 1e-6);
  relu(out.data(), x.data(), n);
  check_close(out, each([](double a, double) { return a > 0 ? a : 0; }), 0, 0);
  tanh_op(out.data(), x.data(), n);
  check_close(out, each([](double a, double) { return std::tanh(a); }), 1e-6, 1e-5);
  gelu(out.data(), x.data(), n);
  check_close(out, each([](double a, double) {
                return 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
              }),
              1e-6, 1e-5);
  std::vector<float> sums(R);
  row_sum(sums.data(), x.data(), R, C);
  std::vector<double> ref_sums(R, 0), ref_sm(n), ref_ln(n);
  auto g = random_vec(C, 7), b = random_vec(C, 8);
  for (int64_t r = 0; r < R; ++r) {
    double mx = -1e30, z = 0, mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) {
      ref_sums[r] += x[r * C + c];
      mx = std::max(mx, double(x[r * C + c]));
      mean += x[r * C + c] / double(C);
    }
    for (int64_t c = 0; c < C; ++c) {
      z += std::exp(x[r * C + c] - mx);
      var += (x[r * C + c] - mean) * (x[r * C + c] - mean) / double(C);
    }
    for (int64_t c = 0; c < C; ++c) {
      ref_sm[r * C + c] = std::exp(x[r * C + c] - mx) / z;
      ref_ln[r * C + c] = (x[r * C + c] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
    }
  }
  check_close(sums, ref_sums, 1e-5, 1e-5);
  softmax(out.data(), x.data(), R, C);
  check_close(out, ref_sm, 1e-7, 1e-5);
  layer_norm(out.data(), x.data(), g.data(), b.data(), R, C);
  check_close(out, ref_ln, 1e-5, 1e-4);
  transpose(out.data(), x.data(), R, C);
  std::vector<double> ref_t(n);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) ref_t[c * R + r] = x[r * C + c];
  check_close(out, ref_t, 0, 0);
  copy(out.data(), y.data(), n);
  check_close(out, std::vector<double>(y.begin(), y.end()), 0, 0);
}
