// Layer norm against a double-precision CPU loop: output, saved mean/rstd, and the
// accumulated dx, dweight, dbias (also with dweight/dbias skipped).
#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

TEST_CASE("cuda/layernorm forward and backward vs cpu", "[cuda]") {
  std::mt19937 rng(30);
  const float eps = 1e-5f;
  std::vector<std::pair<int, int>> shapes;
  for (int N : kRowSweep)
    for (int C : kColSweep) shapes.push_back({N, C});
  shapes.push_back({50000, 128});  // the policy's node-embedding size
  for (auto [N, C] : shapes) {
    std::size_t n = std::size_t(N) * C;
    auto x = random_vec(n, rng, -2.0f, 3.0f), w = random_vec(C, rng), b = random_vec(C, rng);
    for (int j = 0; j < C; ++j)
      x[j] += 500.0f;  // row 0 has a large offset: needs a 2-pass variance
    auto g = random_vec(n, rng), dx0 = random_vec(n, rng), dw0 = random_vec(C, rng),
         db0 = random_vec(C, rng);
    auto d_x = to_device(x), d_w = to_device(w), d_b = to_device(b), d_g = to_device(g);
    auto d_dx = to_device(dx0), d_dw = to_device(dw0), d_db = to_device(db0),
         d_dx2 = to_device(dx0);
    DeviceBuffer d_y(n), d_mean(N), d_rstd(N);
    layernorm_forward(d_y.data(), d_mean.data(), d_rstd.data(), d_x.data(), d_w.data(), d_b.data(),
                      N, C, eps);
    layernorm_backward(d_dx.data(), d_dw.data(), d_db.data(), d_g.data(), d_x.data(), d_w.data(),
                       d_mean.data(), d_rstd.data(), N, C);
    layernorm_backward(d_dx2.data(), nullptr, nullptr, d_g.data(), d_x.data(), d_w.data(),
                       d_mean.data(), d_rstd.data(), N, C);

    std::vector<float> y(n), mean(N), rstd(N), dx(n);
    std::vector<double> dw(dw0.begin(), dw0.end()), db(db0.begin(), db0.end());
    for (int i = 0; i < N; ++i) {
      const float* xr = &x[std::size_t(i) * C];
      double m = 0, v = 0;
      for (int j = 0; j < C; ++j) m += xr[j];
      m /= C;
      for (int j = 0; j < C; ++j) v += (xr[j] - m) * (xr[j] - m);
      double rs = 1.0 / std::sqrt(v / C + eps);
      mean[i] = float(m);
      rstd[i] = float(rs);
      double sg = 0, sgx = 0;
      for (int j = 0; j < C; ++j) {
        std::size_t k = std::size_t(i) * C + j;
        double xhat = (xr[j] - m) * rs;
        y[k] = float(xhat * w[j] + b[j]);
        sg += double(g[k]) * w[j];
        sgx += double(g[k]) * w[j] * xhat;
        dw[j] += double(g[k]) * xhat;
        db[j] += g[k];
      }
      sg /= C;
      sgx /= C;
      for (int j = 0; j < C; ++j) {
        std::size_t k = std::size_t(i) * C + j;
        double xhat = (xr[j] - m) * rs;
        dx[k] = float(dx0[k] + rs * (double(g[k]) * w[j] - sg - xhat * sgx));
      }
    }
    std::string what = "N=" + std::to_string(N) + " C=" + std::to_string(C);
    check_close(to_host(d_y), y, 1e-4f, 1e-4f, "layernorm out " + what);
    check_close(to_host(d_mean), mean, 1e-4f, 1e-5f, "layernorm mean " + what);
    check_close(to_host(d_rstd), rstd, 1e-4f, 1e-3f, "layernorm rstd " + what);
    check_close(to_host(d_dx), dx, 1e-3f, 1e-3f, "layernorm dx " + what);
    check_close(to_host(d_dx2), dx, 1e-3f, 1e-3f, "layernorm dx (no dw/db) " + what);
    check_close(to_host(d_dw), std::vector<float>(dw.begin(), dw.end()), 2e-3f, 1e-4f,
                "layernorm dw " + what);
    check_close(to_host(d_db), std::vector<float>(db.begin(), db.end()), 2e-3f, 1e-4f,
                "layernorm db " + what);
  }
}
