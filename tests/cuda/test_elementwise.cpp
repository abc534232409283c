// Element-wise kernels against plain CPU loops: binary ops (full and row-broadcast b),
// unary activations and scale, forward values and accumulated gradients.
#include <functional>

#include "cuda_test_util.h"

using namespace gdp::cuda;
using namespace gdp::cuda::test;

namespace {

struct BinaryCase {
  const char* name;
  std::function<void(float*, const float*, const float*, int, int, bool)> fwd;
  // (da, db, dout, a, b, N, C, b_is_row)
  std::function<void(float*, float*, const float*, const float*, const float*, int, int, bool)> bwd;
  double (*f)(double, double);
  double (*ga)(double, double, double);  // d out / d a * dout given (dout, a, b)
  double (*gb)(double, double, double);
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", add_forward,
       [](float* da, float* db, const float* g, const float*, const float*, int N, int C, bool r) {
         add_backward(da, db, g, N, C, r);
       },
       [](double a, double b) { return a + b; }, [](double g, double, double) { return g; },
       [](double g, double, double) { return g; }},
      {"sub", sub_forward,
       [](float* da, float* db, const float* g, const float*, const float*, int N, int C, bool r) {
         sub_backward(da, db, g, N, C, r);
       },
       [](double a, double b) { return a - b; }, [](double g, double, double) { return g; },
       [](double g, double, double) { return -g; }},
      {"mul", mul_forward, mul_backward, [](double a, double b) { return a * b; },
       [](double g, double, double b) { return g * b; },
       [](double g, double a, double) { return g * a; }},
      {"div", div_forward, div_backward, [](double a, double b) { return a / b; },
       [](double g, double, double b) { return g / b; },
       [](double g, double a, double b) { return -g * a / (b * b); }},
  };
}

}  // namespace

TEST_CASE("cuda/binary ops with row broadcast vs cpu", "[cuda]") {
  std::mt19937 rng(2);
  std::vector<std::pair<int, int>> shapes;
  for (int N : kRowSweep)
    for (int C : kColSweep) shapes.push_back({N, C});
  shapes.push_back({70001, 3});  // more row slices than the column-sum grid holds
  for (const auto& op : binary_cases()) {
    for (auto [N, C] : shapes) {
      for (bool row : {false, true}) {
        std::size_t n = static_cast<std::size_t>(N) * C, nb = row ? C : n;
        auto a = random_vec(n, rng), b = random_vec(nb, rng, 0.5f, 2.0f), g = random_vec(n, rng);
        auto da0 = random_vec(n, rng), db0 = random_vec(nb, rng);
        auto d_a = to_device(a), d_b = to_device(b), d_g = to_device(g), d_da = to_device(da0),
             d_db = to_device(db0);
        DeviceBuffer d_out(n);
        op.fwd(d_out.data(), d_a.data(), d_b.data(), N, C, row);
        op.bwd(d_da.data(), d_db.data(), d_g.data(), d_a.data(), d_b.data(), N, C, row);

        std::vector<float> out(n), da(da0);
        std::vector<double> db(db0.begin(), db0.end());
        for (std::size_t i = 0; i < n; ++i) {
          std::size_t bi = row ? i % C : i;
          out[i] = static_cast<float>(op.f(a[i], b[bi]));
          da[i] = static_cast<float>(da[i] + op.ga(g[i], a[i], b[bi]));
          db[bi] += op.gb(g[i], a[i], b[bi]);
        }
        std::string what = std::string(op.name) + (row ? " row-bias" : "") +
                           " N=" + std::to_string(N) + " C=" + std::to_string(C);
        check_close(to_host(d_out), out, 1e-6f, 1e-6f, what + " out");
        check_close(to_host(d_da), da, 1e-5f, 1e-5f, what + " da");
        check_close(to_host(d_db), std::vector<float>(db.begin(), db.end()), 1e-4f, 1e-4f,
                    what + " db");
      }
    }
  }
}

TEST_CASE("cuda/binary backward skips null gradients", "[cuda]") {
  std::mt19937 rng(3);
  int N = 33, C = 7;
  std::size_t n = static_cast<std::size_t>(N) * C;
  auto a = random_vec(n, rng), b = random_vec(C, rng, 0.5f, 2.0f), g = random_vec(n, rng),
       db0 = random_vec(C, rng);
  auto d_a = to_device(a), d_b = to_device(b), d_g = to_device(g), d_db = to_device(db0);
  mul_backward(nullptr, d_db.data(), d_g.data(), d_a.data(), d_b.data(), N, C, true);
  std::vector<double> db(db0.begin(), db0.end());
  for (std::size_t i = 0; i < n; ++i) db[i % C] += double(g[i]) * a[i];
  check_close(to_host(d_db), std::vector<float>(db.begin(), db.end()), 1e-5f, 1e-5f, "mul db only");
}

namespace {

struct UnaryCase {
  const char* name;
  void (*fwd)(float*, const float*, std::size_t);
  void (*bwd)(float*, const float*, const float*, std::size_t);  // (dx, saved, dout, n)
  double (*f)(double);
  double (*df)(double);  // f'(x), from the input
  float lo, hi;          // input range
  bool saves_output;     // the backward takes y = f(x), not x
};

double gelu_ref(double x) {
  const double s = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
}
double gelu_grad_ref(double x) {
  const double s = std::sqrt(2.0 / 3.14159265358979323846);
  double t = std::tanh(s * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s * (1.0 + 3.0 * 0.044715 * x * x);
}
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

TEST_CASE("cuda/unary ops vs cpu", "[cuda]") {
  std::vector<UnaryCase> cases = {
      {"relu", relu_forward, relu_backward, [](double x) { return x > 0 ? x : 0.0; },
       [](double x) { return x > 0 ? 1.0 : 0.0; }, -3.0f, 3.0f, false},
      {"gelu", gelu_forward, gelu_backward, gelu_ref, gelu_grad_ref, -5.0f, 5.0f, false},
      {"tanh", tanh_forward, tanh_backward, [](double x) { return std::tanh(x); },
       [](double x) { return 1.0 - std::tanh(x) * std::tanh(x); }, -5.0f, 5.0f, true},
      {"sigmoid", sigmoid_forward, sigmoid_backward, sigmoid_ref,
       [](double x) { return sigmoid_ref(x) * (1.0 - sigmoid_ref(x)); }, -8.0f, 8.0f, true},
      {"exp", exp_forward, exp_backward, [](double x) { return std::exp(x); },
       [](double x) { return std::exp(x); }, -5.0f, 5.0f, true},
      {"log", log_forward, log_backward, [](double x) { return std::log(x); },
       [](double x) { return 1.0 / x; }, 0.05f, 10.0f, false},
  };
  std::mt19937 rng(4);
  for (const auto& op : cases) {
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{127},
                          std::size_t{1000}, std::size_t{4097}, std::size_t{1} << 21}) {
      auto x = random_vec(n, rng, op.lo, op.hi), g = random_vec(n, rng), dx0 = random_vec(n, rng);
      auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
      DeviceBuffer d_out(n);
      std::vector<float> out(n), dx(n);
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = static_cast<float>(op.f(x[i]));
        dx[i] = static_cast<float>(dx0[i] + op.df(x[i]) * g[i]);
      }
      op.fwd(d_out.data(), d_x.data(), n);
      // the saved tensor comes from the reference, so only the backward kernel is under test
      auto d_saved = to_device(op.saves_output ? out : x);
      op.bwd(d_dx.data(), d_saved.data(), d_g.data(), n);
      std::string what = std::string(op.name) + " n=" + std::to_string(n);
      check_close(to_host(d_out), out, 1e-6f, 1e-5f, what + " out");
      check_close(to_host(d_dx), dx, 1e-5f, 1e-5f, what + " dx");
    }
  }
}

TEST_CASE("cuda/scale vs cpu", "[cuda]") {
  std::mt19937 rng(5);
  for (std::size_t n : {std::size_t{1}, std::size_t{33}, std::size_t{4097}}) {
    auto x = random_vec(n, rng), g = random_vec(n, rng), dx0 = random_vec(n, rng);
    auto d_x = to_device(x), d_g = to_device(g), d_dx = to_device(dx0);
    DeviceBuffer d_out(n);
    scale_forward(d_out.data(), d_x.data(), -2.5f, n);
    scale_backward(d_dx.data(), d_g.data(), -2.5f, n);
    std::vector<float> out(n), dx(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = -2.5f * x[i];
      dx[i] = dx0[i] + -2.5f * g[i];
    }
    check_close(to_host(d_out), out, 1e-6f, 1e-6f, "scale out");
    check_close(to_host(d_dx), dx, 1e-6f, 1e-6f, "scale dx");
  }
}
