// Segment mean / max over CSR neighbour lists against CPU loops: empty segments, long
// segments, repeated neighbours, and the atomic backward scatters.
#include <algorithm>
#include <tuple>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

struct Csr {
  std::vector<int> row_ptr, col_idx;  // (R+1), (E)
};

// R segments over X rows: degrees 0..max_deg (so some are empty), one long segment.
Csr random_csr(int R, int X, int max_deg, std::mt19937& rng) {
  Csr g;
  g.row_ptr.push_back(0);
  std::uniform_int_distribution<int> deg(0, max_deg), node(0, X - 1);
  for (int r = 0; r < R; ++r) {
    int d = (r == R / 2) ? 300 : deg(rng);
    for (int e = 0; e < d; ++e) g.col_idx.push_back(node(rng));
    g.row_ptr.push_back(static_cast<int>(g.col_idx.size()));
  }
  return g;
}

}  // namespace

TEST_CASE("cuda/segment mean and max vs cpu", "[cuda]") {
  std::mt19937 rng(50);
  std::vector<std::tuple<int, int, int>> shapes;  // (R, X, C)
  for (int R : {1, 7, 33, 1000})
    for (int C : {1, 7, 33, 128, 129}) shapes.push_back({R, std::max(1, R / 2 + 3), C});
  shapes.push_back({50000, 50000, 128});  // the policy's graph size
  for (auto [R, X, C] : shapes) {
    Csr g = random_csr(R, X, 8, rng);
    auto x = random_vec(std::size_t(X) * C, rng), dout = random_vec(std::size_t(R) * C, rng);
    auto dx0 = random_vec(std::size_t(X) * C, rng);
    auto d_x = to_device(x), d_dout = to_device(dout), d_dx_mean = to_device(dx0),
         d_dx_max = to_device(dx0);
    auto d_rp = to_device(g.row_ptr), d_ci = to_device(g.col_idx);
    DeviceBuffer d_mean(std::size_t(R) * C), d_max(std::size_t(R) * C);
    DeviceIndexBuffer d_arg(std::size_t(R) * C);
    segment_mean_forward(d_mean.data(), d_x.data(), d_rp.data(), d_ci.data(), R, C);
    segment_max_forward(d_max.data(), d_arg.data(), d_x.data(), d_rp.data(), d_ci.data(), R, C);
    segment_mean_backward(d_dx_mean.data(), d_dout.data(), d_rp.data(), d_ci.data(), R, C);
    segment_max_backward(d_dx_max.data(), d_dout.data(), d_arg.data(), R, C);

    std::vector<float> mean(std::size_t(R) * C), mx(std::size_t(R) * C);
    std::vector<int> arg(std::size_t(R) * C);
    std::vector<double> dxm(dx0.begin(), dx0.end()), dxx(dx0.begin(), dx0.end());
    for (int r = 0; r < R; ++r) {
      int e0 = g.row_ptr[r], e1 = g.row_ptr[r + 1];
      for (int c = 0; c < C; ++c) {
        std::size_t o = std::size_t(r) * C + c;
        double s = 0;
        int a = -1;
        for (int e = e0; e < e1; ++e) {
          std::size_t k = std::size_t(g.col_idx[e]) * C + c;
          s += x[k];
          if (a < 0 || x[k] > x[std::size_t(a) * C + c]) a = g.col_idx[e];
          dxm[k] += double(dout[o]) / (e1 - e0);
        }
        mean[o] = e1 > e0 ? float(s / (e1 - e0)) : 0.0f;
        mx[o] = a < 0 ? 0.0f : x[std::size_t(a) * C + c];
        arg[o] = a;
        if (a >= 0) dxx[std::size_t(a) * C + c] += dout[o];
      }
    }
    std::string what = "R=" + std::to_string(R) + " C=" + std::to_string(C);
    check_close(to_host(d_mean), mean, 1e-5f, 1e-5f, "segment mean " + what);
    check_close(to_host(d_max), mx, 0.0f, 0.0f, "segment max " + what);
    check_equal(to_host(d_arg), arg, "segment argmax " + what);
    check_close(to_host(d_dx_mean), std::vector<float>(dxm.begin(), dxm.end()), 1e-5f, 1e-5f,
                "segment mean dx " + what);
    check_close(to_host(d_dx_max), std::vector<float>(dxx.begin(), dxx.end()), 1e-5f, 1e-5f,
                "segment max dx " + what);
  }
}

TEST_CASE("cuda/segment of no neighbours gives zero", "[cuda]") {
  int R = 3, C = 5;
  std::vector<int> row_ptr = {0, 0, 0, 0}, col_idx = {0};
  std::vector<float> x(C, 7.0f), dx0(C, 1.0f), dout(std::size_t(R) * C, 2.0f);
  auto d_x = to_device(x), d_dx = to_device(dx0), d_dout = to_device(dout);
  auto d_rp = to_device(row_ptr), d_ci = to_device(col_idx);
  DeviceBuffer d_mean(R * C), d_max(R * C);
  DeviceIndexBuffer d_arg(R * C);
  segment_mean_forward(d_mean.data(), d_x.data(), d_rp.data(), d_ci.data(), R, C);
  segment_max_forward(d_max.data(), d_arg.data(), d_x.data(), d_rp.data(), d_ci.data(), R, C);
  segment_mean_backward(d_dx.data(), d_dout.data(), d_rp.data(), d_ci.data(), R, C);
  segment_max_backward(d_dx.data(), d_dout.data(), d_arg.data(), R, C);
  CHECK(to_host(d_mean) == std::vector<float>(R * C, 0.0f));
  CHECK(to_host(d_max) == std::vector<float>(R * C, 0.0f));
  CHECK(to_host(d_arg) == std::vector<int>(R * C, -1));
  CHECK(to_host(d_dx) == dx0);  // no gradient reaches x
}
