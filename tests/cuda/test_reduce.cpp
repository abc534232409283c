// Reductions over the last dim (sum, mean, max with argmax) and the full sum against CPU
// loops, with their accumulated backward broadcasts.
#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

TEST_CASE("cuda/row sum and mean vs cpu", "[cuda]") {
  std::mt19937 rng(10);
  for (int N : kRowSweep) {
    for (int C : kColSweep) {
      std::size_t n = static_cast<std::size_t>(N) * C;
      auto x = random_vec(n, rng), g = random_vec(N, rng), dx0 = random_vec(n, rng);
      auto d_x = to_device(x), d_g = to_device(g), d_dx_sum = to_device(dx0),
           d_dx_mean = to_device(dx0);
      DeviceBuffer d_sum(N), d_mean(N);
      sum_forward(d_sum.data(), d_x.data(), N, C);
      mean_forward(d_mean.data(), d_x.data(), N, C);
      sum_backward(d_dx_sum.data(), d_g.data(), N, C);
      mean_backward(d_dx_mean.data(), d_g.data(), N, C);
      std::vector<float> sum(N), mean(N), dxs(n), dxm(n);
      for (int i = 0; i < N; ++i) {
        double s = 0;
        for (int j = 0; j < C; ++j) s += x[std::size_t(i) * C + j];
        sum[i] = float(s);
        mean[i] = float(s / C);
        for (int j = 0; j < C; ++j) {
          std::size_t k = std::size_t(i) * C + j;
          dxs[k] = dx0[k] + g[i];
          dxm[k] = float(dx0[k] + double(g[i]) / C);
        }
      }
      std::string what = "N=" + std::to_string(N) + " C=" + std::to_string(C);
      check_close(to_host(d_sum), sum, 1e-4f, 1e-5f, "sum " + what);
      check_close(to_host(d_mean), mean, 1e-6f, 1e-5f, "mean " + what);
      check_close(to_host(d_dx_sum), dxs, 1e-6f, 1e-6f, "sum dx " + what);
      check_close(to_host(d_dx_mean), dxm, 1e-6f, 1e-6f, "mean dx " + what);
    }
  }
}

TEST_CASE("cuda/row max with argmax vs cpu", "[cuda]") {
  std::mt19937 rng(11);
  for (int N : kRowSweep) {
    for (int C : kColSweep) {
      std::size_t n = static_cast<std::size_t>(N) * C;
      auto x =
          random_vec(n, rng, -100.0f, -1.0f);  // all negative: a 0-initialised max would be wrong
      if (C > 3) x[C - 1] = x[1] = -0.5f;      // a tie in row 0: the first column wins
      auto g = random_vec(N, rng), dx0 = random_vec(n, rng);
      auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
      DeviceBuffer d_out(N);
      DeviceIndexBuffer d_arg(N);
      max_forward(d_out.data(), d_arg.data(), d_x.data(), N, C);
      max_backward(d_dx.data(), d_g.data(), d_arg.data(), N, C);
      std::vector<float> out(N), dx(dx0);
      std::vector<int> arg(N);
      for (int i = 0; i < N; ++i) {
        int a = 0;
        for (int j = 1; j < C; ++j)
          if (x[std::size_t(i) * C + j] > x[std::size_t(i) * C + a]) a = j;
        arg[i] = a;
        out[i] = x[std::size_t(i) * C + a];
        dx[std::size_t(i) * C + a] += g[i];
      }
      std::string what = "N=" + std::to_string(N) + " C=" + std::to_string(C);
      check_close(to_host(d_out), out, 0.0f, 0.0f, "max " + what);
      check_equal(to_host(d_arg), arg, "argmax " + what);
      check_close(to_host(d_dx), dx, 1e-6f, 1e-6f, "max dx " + what);
    }
  }
}

TEST_CASE("cuda/full sum vs cpu", "[cuda]") {
  std::mt19937 rng(12);
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{127},
                        std::size_t{1000}, std::size_t{4097}, std::size_t{3000001}}) {
    auto x = random_vec(n, rng), dx0 = random_vec(n, rng);
    std::vector<float> g = {0.75f};
    auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
    DeviceBuffer d_out(1);
    sum_all_forward(d_out.data(), d_x.data(), n);
    sum_all_forward(d_out.data(), d_x.data(), n);  // overwrites, does not accumulate
    sum_all_backward(d_dx.data(), d_g.data(), n);
    double s = 0;
    for (float v : x) s += v;
    std::vector<float> dx(n);
    for (std::size_t i = 0; i < n; ++i) dx[i] = dx0[i] + 0.75f;
    check_close(to_host(d_out), {float(s)}, 1e-2f, 1e-5f, "sum_all n=" + std::to_string(n));
    check_close(to_host(d_dx), dx, 1e-6f, 1e-6f, "sum_all dx n=" + std::to_string(n));
  }
}
