// Parametrised maps (affine, square, sqrt, clamp), element-wise min/max (full and
// row-broadcast b, ties, skipped gradients) and take-along-last against plain CPU loops;
// every backward starts from non-zero gradients, so accumulation is checked too.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

struct MapCase {
  const char* name;
  MapOp op;
  float p0, p1;
  float lo, hi;  // input range
};

double map_ref(MapOp op, double x, double p0, double p1) {
  switch (op) {
    case MapOp::affine:
      return p0 * x + p1;
    case MapOp::square:
      return x * x;
    case MapOp::sqrt:
      return std::sqrt(x);
    case MapOp::clamp:
      return std::min(std::max(x, p0), p1);
  }
  return 0.0;
}

double map_grad_ref(MapOp op, double x, double p0, double p1) {
  switch (op) {
    case MapOp::affine:
      return p0;
    case MapOp::square:
      return 2.0 * x;
    case MapOp::sqrt:
      return 0.5 / std::sqrt(x);
    case MapOp::clamp:
      return (x >= p0 && x <= p1) ? 1.0 : 0.0;
  }
  return 0.0;
}

const std::vector<std::size_t> kSizes = {1, 7, 33, 127, 1000, 4097, std::size_t{1} << 20};

}  // namespace

TEST_CASE("cuda/map ops vs cpu", "[cuda]") {
  std::vector<MapCase> cases = {
      {"affine", MapOp::affine, -1.5f, 0.25f, -3.0f, 3.0f},
      {"affine-neg", MapOp::affine, -1.0f, 0.0f, -3.0f, 3.0f},  // neg
      {"square", MapOp::square, 0.0f, 0.0f, -3.0f, 3.0f},
      {"sqrt", MapOp::sqrt, 0.0f, 0.0f, 0.05f, 4.0f},
      {"clamp", MapOp::clamp, -0.3f, 0.4f, -1.0f, 1.0f},
  };
  std::mt19937 rng(70);
  for (const auto& c : cases) {
    for (std::size_t n : kSizes) {
      auto x = random_vec(n, rng, c.lo, c.hi), g = random_vec(n, rng), dx0 = random_vec(n, rng);
      if (c.op == MapOp::clamp) {  // the edges themselves: gradient 1 there
        x[0] = c.p0;
        if (n > 1) x[1] = c.p1;
      }
      auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
      auto d_out = to_device(random_vec(n, rng));  // overwritten
      map_forward(d_out.data(), d_x.data(), c.op, c.p0, c.p1, n);
      map_backward(d_dx.data(), d_x.data(), d_g.data(), c.op, c.p0, c.p1, n);
      std::vector<float> out(n), dx(n);
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<float>(map_ref(c.op, x[i], c.p0, c.p1));
        dx[i] = static_cast<float>(dx0[i] + map_grad_ref(c.op, x[i], c.p0, c.p1) * g[i]);
      }
      std::string what = std::string(c.name) + " n=" + std::to_string(n);
      check_close(to_host(d_out), out, 1e-6f, 1e-6f, what + " out");
      check_close(to_host(d_dx), dx, 1e-6f, 1e-5f, what + " dx");
    }
  }
}

TEST_CASE("cuda/map ops on zero elements are no-ops", "[cuda]") {
  for (MapOp op : {MapOp::affine, MapOp::square, MapOp::sqrt, MapOp::clamp}) {
    map_forward(nullptr, nullptr, op, 1.0f, 2.0f, 0);
    map_backward(nullptr, nullptr, nullptr, op, 1.0f, 2.0f, 0);
  }
  synchronize();
}

TEST_CASE("cuda/minmax with row broadcast and ties vs cpu", "[cuda]") {
  std::mt19937 rng(71);
  std::vector<std::pair<int, int>> shapes;
  for (int N : {1, 7, 33, 257})
    for (int C : {1, 7, 33, 127, 1000}) shapes.push_back({N, C});
  shapes.push_back({70001, 3});  // more row slices than the column-sum grid holds
  for (auto [N, C] : shapes) {
    for (bool row : {false, true}) {
      for (bool is_max : {false, true}) {
        std::size_t n = static_cast<std::size_t>(N) * C, nb = row ? C : n;
        auto a = random_vec(n, rng), b = random_vec(nb, rng), g = random_vec(n, rng);
        for (std::size_t i = 0; i < n; i += 3) a[i] = b[row ? i % C : i];  // ties: gradient to a
        auto da0 = random_vec(n, rng), db0 = random_vec(nb, rng);
        auto d_a = to_device(a), d_b = to_device(b), d_g = to_device(g), d_da = to_device(da0),
             d_db = to_device(db0);
        auto d_out = to_device(random_vec(n, rng));  // overwritten
        minmax_forward(d_out.data(), d_a.data(), d_b.data(), N, C, row, is_max);
        minmax_backward(d_da.data(), d_db.data(), d_g.data(), d_a.data(), d_b.data(), N, C, row,
                        is_max);

        std::vector<float> out(n), da(da0);
        std::vector<double> db(db0.begin(), db0.end());
        for (std::size_t i = 0; i < n; ++i) {
          std::size_t bi = row ? i % C : i;
          bool a_wins = is_max ? a[i] >= b[bi] : a[i] <= b[bi];
          out[i] = a_wins ? a[i] : b[bi];
          if (a_wins)
            da[i] += g[i];
          else
            db[bi] += g[i];
        }
        std::string what = std::string(is_max ? "max" : "min") + (row ? " row" : "") +
                           " N=" + std::to_string(N) + " C=" + std::to_string(C);
        check_close(to_host(d_out), out, 0.0f, 0.0f, what + " out");
        check_close(to_host(d_da), da, 0.0f, 0.0f, what + " da");
        check_close(to_host(d_db), std::vector<float>(db.begin(), db.end()), 1e-4f, 1e-4f,
                    what + " db");
      }
    }
  }
}

TEST_CASE("cuda/minmax backward skips null gradients", "[cuda]") {
  std::mt19937 rng(72);
  int N = 33, C = 7;
  std::size_t n = static_cast<std::size_t>(N) * C;
  for (bool row : {false, true}) {
    for (bool is_max : {false, true}) {
      std::size_t nb = row ? C : n;
      auto a = random_vec(n, rng), b = random_vec(nb, rng), g = random_vec(n, rng);
      auto da0 = random_vec(n, rng), db0 = random_vec(nb, rng);
      auto d_a = to_device(a), d_b = to_device(b), d_g = to_device(g), d_da = to_device(da0),
           d_db = to_device(db0);
      minmax_backward(nullptr, d_db.data(), d_g.data(), d_a.data(), d_b.data(), N, C, row, is_max);
      minmax_backward(d_da.data(), nullptr, d_g.data(), d_a.data(), d_b.data(), N, C, row, is_max);
      minmax_backward(nullptr, nullptr, d_g.data(), d_a.data(), d_b.data(), N, C, row, is_max);
      std::vector<float> da(da0);
      std::vector<double> db(db0.begin(), db0.end());
      for (std::size_t i = 0; i < n; ++i) {
        std::size_t bi = row ? i % C : i;
        bool a_wins = is_max ? a[i] >= b[bi] : a[i] <= b[bi];
        if (a_wins)
          da[i] += g[i];
        else
          db[bi] += g[i];
      }
      std::string what = std::string(is_max ? "max" : "min") + (row ? " row" : "");
      check_close(to_host(d_da), da, 0.0f, 0.0f, what + " da only");
      check_close(to_host(d_db), std::vector<float>(db.begin(), db.end()), 1e-5f, 1e-5f,
                  what + " db only");
    }
  }
}

TEST_CASE("cuda/take along last vs cpu", "[cuda]") {
  std::mt19937 rng(73);
  for (int N : {1, 7, 33, 127, 1000}) {
    for (int C : {1, 7, 33, 127, 1000}) {
      std::size_t n = static_cast<std::size_t>(N) * C;
      auto x = random_vec(n, rng), g = random_vec(N, rng), dx0 = random_vec(n, rng);
      auto idx = random_idx(N, C, rng);
      idx[0] = C - 1;  // the last column too
      auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
      auto d_idx = to_device(idx);
      auto d_out = to_device(random_vec(N, rng));  // overwritten
      take_along_last_forward(d_out.data(), d_x.data(), d_idx.data(), N, C);
      take_along_last_backward(d_dx.data(), d_g.data(), d_idx.data(), N, C);
      take_along_last_backward(d_dx.data(), d_g.data(), d_idx.data(), N, C);  // adds the same again
      std::vector<float> out(N);
      std::vector<double> dx(dx0.begin(), dx0.end());
      for (int r = 0; r < N; ++r) {
        std::size_t at = static_cast<std::size_t>(r) * C + idx[r];
        out[r] = x[at];
        dx[at] += 2.0 * g[r];
      }
      std::string what = "N=" + std::to_string(N) + " C=" + std::to_string(C);
      check_close(to_host(d_out), out, 0.0f, 0.0f, "take " + what);
      check_close(to_host(d_dx), std::vector<float>(dx.begin(), dx.end()), 1e-6f, 1e-6f,
                  "take backward " + what);
    }
  }
}
