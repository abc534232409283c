// Finite-difference gradient check (double precision, central differences, relative error),
// ggml style: points where the function has a kink (ReLU at 0, max ties, clamp edges) are
// detected by comparing the two one-sided differences and skipped on purpose, and counted.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/ops.h"
#include "nn/rng.h"

namespace gdp::nn {

struct GradcheckOptions {
  double step = 1e-6;            // central-difference step h
  double tolerance = 1e-5;       // max allowed |a - n| / max(|a|, |n|, atol_floor)
  double atol_floor = 1e-3;      // denominators below this use the floor (tiny gradients)
  double kink_tolerance = 1e-3;  // one-sided slopes differing by more than this -> kink, skip
  uint64_t seed = 1234;          // projection weights of the output
};

struct GradcheckResult {
  double max_error = 0.0;  // largest relative error over checked elements
  int64_t checked = 0;
  int64_t skipped_kinks = 0;
  std::string worst;  // description of the worst element
  bool passed = false;
};

// f maps the inputs to any-shaped output y; the check uses the scalar loss sum(y * R) with a fixed
// random R, so every output element matters. Every input with requires_grad is checked element
// by element against central differences of the loss.
inline GradcheckResult gradcheck(const std::function<VarD(const std::vector<VarD>&)>& f,
                                 std::vector<VarD> inputs, const GradcheckOptions& opt = {}) {
  GradcheckResult result;
  TapeD::current().clear();
  VarD y = f(inputs);
  Rng rng(opt.seed);
  TensorD proj(y.shape());
  for (int64_t i = 0; i < proj.numel(); ++i) proj[i] = rng.uniform(-1.0, 1.0);
  auto loss_value = [&](const VarD& out) {
    double s = 0.0;
    const TensorD v = out.value().contiguous();
    for (int64_t i = 0; i < v.numel(); ++i) s += v[i] * proj[i];
    return s;
  };
  for (auto& in : inputs)
    if (in.requires_grad()) in.zero_grad();
  VarD loss = sum(mul(y, VarD(proj)));
  TapeD::current().backward(loss);

  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    VarD& in = inputs[k];
    if (!in.requires_grad()) continue;
    TensorD analytic = in.grad().defined() ? in.grad().contiguous() : TensorD(in.shape());
    TensorD& x = in.value();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double x0 = x[i];
      x[i] = x0 + opt.step;
      const double fp = loss_value(f(inputs));
      x[i] = x0 - opt.step;
      const double fm = loss_value(f(inputs));
      x[i] = x0;
      const double f0 = loss_value(f(inputs));
      const double right = (fp - f0) / opt.step, left = (f0 - fm) / opt.step;
      const double numeric = (fp - fm) / (2.0 * opt.step);
      const double scale_lr = std::max({std::abs(right), std::abs(left), 1.0});
      if (std::abs(right - left) > opt.kink_tolerance * scale_lr) {
        ++result.skipped_kinks;
        continue;
      }
      const double a = analytic[i];
      const double denom = std::max({std::abs(a), std::abs(numeric), opt.atol_floor});
      const double err = std::abs(a - numeric) / denom;
      ++result.checked;
      if (err > result.max_error) {
        result.max_error = err;
        std::ostringstream os;
        os << "input " << k << " element " << i << ": analytic " << a << " numeric " << numeric;
        result.worst = os.str();
      }
    }
  }
  result.passed = result.max_error <= opt.tolerance && result.checked > 0;
  return result;
}

// A random double input of the given shape, uniform in [lo, hi), requiring grad.
inline VarD random_input(const Shape& shape, Rng& rng, double lo = -1.0, double hi = 1.0) {
  TensorD t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = rng.uniform(lo, hi);
  return VarD(t, true);
}

}  // namespace gdp::nn
