// Softmax and log-softmax over the last dim against a double-precision CPU loop: values,
// stability on large logits, and accumulated gradients.
#include <algorithm>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

// y (N,C) = softmax or log-softmax of x along C, in double.
std::vector<double> softmax_ref(const std::vector<float>& x, int N, int C, bool log) {
  std::vector<double> y(x.size());
  for (int i = 0; i < N; ++i) {
    const float* xr = &x[std::size_t(i) * C];
    double m = *std::max_element(xr, xr + C), s = 0;
    for (int j = 0; j < C; ++j) s += std::exp(double(xr[j]) - m);
    for (int j = 0; j < C; ++j)
      y[std::size_t(i) * C + j] =
          log ? double(xr[j]) - m - std::log(s) : std::exp(double(xr[j]) - m) / s;
  }
  return y;
}

}  // namespace

TEST_CASE("cuda/softmax and log-softmax vs cpu", "[cuda]") {
  std::mt19937 rng(20);
  for (bool log : {false, true}) {
    for (int N : kRowSweep) {
      for (int C : kColSweep) {
        std::size_t n = std::size_t(N) * C;
        // logits far from 0: a kernel without the max shift overflows exp()
        auto x = random_vec(n, rng, 80.0f, 100.0f);
        auto g = random_vec(n, rng), dx0 = random_vec(n, rng);
        auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
        DeviceBuffer d_y(n);
        auto y = softmax_ref(x, N, C, log);
        std::vector<float> yf(y.begin(), y.end());
        if (log) {
          log_softmax_forward(d_y.data(), d_x.data(), N, C);
        } else {
          softmax_forward(d_y.data(), d_x.data(), N, C);
        }
        std::string what = std::string(log ? "log_softmax" : "softmax") +
                           " N=" + std::to_string(N) + " C=" + std::to_string(C);
        check_close(to_host(d_y), yf, log ? 1e-4f : 1e-6f, 1e-4f, what + " out");

        // backward from the reference output, so only the backward kernel is under test
        auto d_yref = to_device(yf);
        if (log) {
          log_softmax_backward(d_dx.data(), d_yref.data(), d_g.data(), N, C);
        } else {
          softmax_backward(d_dx.data(), d_yref.data(), d_g.data(), N, C);
        }
        std::vector<float> dx(n);
        for (int i = 0; i < N; ++i) {
          double acc = 0;
          for (int j = 0; j < C; ++j) {
            std::size_t k = std::size_t(i) * C + j;
            acc += log ? double(g[k]) : double(g[k]) * yf[k];
          }
          for (int j = 0; j < C; ++j) {
            std::size_t k = std::size_t(i) * C + j;
            double d = log ? g[k] - std::exp(double(yf[k])) * acc : yf[k] * (g[k] - acc);
            dx[k] = float(dx0[k] + d);
          }
        }
        check_close(to_host(d_dx), dx, 1e-5f, 1e-4f, what + " dx");
      }
    }
  }
}

TEST_CASE("cuda/softmax rows sum to one and handle -inf", "[cuda]") {
  int N = 3, C = 33;
  std::vector<float> x(N * C, 0.0f);
  for (int j = 0; j < C; ++j) x[j] = j % 2 ? -INFINITY : 1.0f;  // row 0: half masked
  x[C + 5] = 1000.0f;                                           // row 1: one dominant logit
  auto d_x = to_device(x);
  DeviceBuffer d_y(N * C);
  softmax_forward(d_y.data(), d_x.data(), N, C);
  auto y = to_host(d_y);
  for (int i = 0; i < N; ++i) {
    double s = 0;
    for (int j = 0; j < C; ++j) s += y[i * C + j];
    CHECK(s == Approx(1.0).epsilon(1e-5));
  }
  for (int j = 1; j < C; j += 2) CHECK(y[j] == 0.0f);
  CHECK(y[C + 5] == Approx(1.0f));
}
