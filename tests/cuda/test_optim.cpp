// adam_update (cuda/optim.cu): three Adam and AdamW steps against the formula of cuda/kernels.h
// in double precision.
#include <cmath>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

TEST_CASE("cuda/adam_update kernel vs cpu", "[cuda]") {
  std::mt19937 rng(90);
  const float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.05f;
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{257}, std::size_t{300001}}) {
    for (bool decoupled : {false, true}) {
      auto p = random_vec(n, rng), m = random_vec(n, rng, 0.0f, 0.1f),
           v = random_vec(n, rng, 0.0f, 0.1f);
      auto d_p = to_device(p), d_m = to_device(m), d_v = to_device(v);
      std::vector<double> pr(p.begin(), p.end()), mr(m.begin(), m.end()), vr(v.begin(), v.end());
      for (long long t = 1; t <= 3; ++t) {
        auto g = random_vec(n, rng);
        auto d_g = to_device(g);
        adam_update(d_p.data(), d_m.data(), d_v.data(), d_g.data(), n, lr, b1, b2, eps, wd,
                    decoupled, t);
        const double bc1 = 1.0 - std::pow(double(b1), double(t)),
                     bc2 = 1.0 - std::pow(double(b2), double(t));
        for (std::size_t i = 0; i < n; ++i) {
          double gi = g[i] + (decoupled ? 0.0 : double(wd) * pr[i]);
          mr[i] = b1 * mr[i] + (1.0 - b1) * gi;
          vr[i] = b2 * vr[i] + (1.0 - b2) * gi * gi;
          if (decoupled) pr[i] -= double(lr) * wd * pr[i];
          pr[i] -= lr * (mr[i] / bc1) / (std::sqrt(vr[i] / bc2) + eps);
        }
      }
      std::string what = "n=" + std::to_string(n) + (decoupled ? " adamw" : " adam");
      check_close(to_host(d_p), std::vector<float>(pr.begin(), pr.end()), 1e-5f, 1e-4f,
                  "p " + what);
      check_close(to_host(d_m), std::vector<float>(mr.begin(), mr.end()), 1e-6f, 1e-4f,
                  "m " + what);
      check_close(to_host(d_v), std::vector<float>(vr.begin(), vr.end()), 1e-7f, 1e-4f,
                  "v " + what);
    }
  }
}
