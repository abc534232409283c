// Reductions as autograd ops: sum / mean over everything or one axis, max over one axis (the
// gradient goes to the first argmax). An axis reduction views x as (outer, n, inner).
#include <omp.h>

#include <limits>

#include "nn/kernels.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
using detail::NodePtr;

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape;
};

AxisView axis_view(const Shape& s, int64_t axis, bool keepdim, const char* op) {
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t ax = detail::normalize_axis(axis, r, op);
  AxisView v;
  for (int64_t i = 0; i < ax; ++i) v.outer *= s[i];
  v.n = s[ax];
  for (int64_t i = ax + 1; i < r; ++i) v.inner *= s[i];
  for (int64_t i = 0; i < r; ++i) {
    if (i != ax)
      v.out_shape.push_back(s[i]);
    else if (keepdim)
      v.out_shape.push_back(1);
  }
  return v;
}

// sum over the axis, times factor (1 for sum, 1/n for mean).
template <typename T>
BasicVar<T> sum_axis_scaled(const char* name, const BasicVar<T>& x, int64_t axis, bool keepdim,
                            bool is_mean) {
  detail::require_defined(name, x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x}))
      return detail::cuda_ops::sum_axis(name, x, axis, keepdim, is_mean);
#endif
  detail::require_cpu<T>(name, {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  const AxisView v = axis_view(xv.shape(), axis, keepdim, name);
  const T factor = is_mean ? T(1) / static_cast<T>(v.n) : T(1);
  BasicTensor<T> y(v.out_shape);  // zeros
  const T* xp = xv.data();
  T* yp = y.data();
  if (v.inner == 1) {
#pragma omp parallel for schedule(static) if (xv.numel() >= (1 << 15))
    for (int64_t o = 0; o < v.outer; ++o) {
      T s = T(0);
      for (int64_t j = 0; j < v.n; ++j) s += xp[o * v.n + j];
      yp[o] = s * factor;
    }
  } else if (v.outer == 1) {
    sum_rows_accumulate(yp, xp, v.n, v.inner);
  } else {
#pragma omp parallel for schedule(static) if (xv.numel() >= (1 << 15))
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t j = 0; j < v.n; ++j)
        for (int64_t k = 0; k < v.inner; ++k)
          yp[o * v.inner + k] += xp[(o * v.n + j) * v.inner + k];
  }
  if (v.inner != 1) {
    if (is_mean) y.vec() *= factor;
  }
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, v, factor](BasicTensor<T>& g) {
    if (!xn->requires_grad) return;
    T* d = xn->grad_buffer().data();
    const T* gp = g.data();
#pragma omp parallel for schedule(static) if (v.outer * v.n * v.inner >= (1 << 15))
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t j = 0; j < v.n; ++j)
        for (int64_t k = 0; k < v.inner; ++k)
          d[(o * v.n + j) * v.inner + k] += factor * gp[o * v.inner + k];
  });
  return out;
}

template <typename T>
BasicVar<T> sum_all_scaled(const char* name, const BasicVar<T>& x, bool is_mean) {
  detail::require_defined(name, x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::sum_all(name, x, is_mean);
#endif
  detail::require_cpu<T>(name, {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  const int64_t n = xv.numel();
  const T factor = is_mean ? T(1) / static_cast<T>(n) : T(1);
  // Accumulate in double for accuracy (and identical results for any thread count).
  // Eight interleaved accumulators (fixed order, independent of alignment and threads) keep the
  // adds pipelined.
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const T* p = xv.data();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(p[i + k]);
  for (; i < n; ++i) acc[i % 8] += static_cast<double>(p[i]);
  const double s =
      ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  BasicTensor<T> y = BasicTensor<T>::full({}, static_cast<T>(s) * factor);
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, factor](BasicTensor<T>& g) {
    if (xn->requires_grad) xn->grad_buffer().vec() += g[0] * factor;
  });
  return out;
}
}  // namespace

template <typename T>
BasicVar<T> sum(const BasicVar<T>& x) {
  return sum_all_scaled("sum", x, false);
}
template <typename T>
BasicVar<T> sum(const BasicVar<T>& x, int64_t axis, bool keepdim) {
  return sum_axis_scaled("sum", x, axis, keepdim, false);
}
template <typename T>
BasicVar<T> mean(const BasicVar<T>& x) {
  if (x.defined() && x.numel() == 0) throw std::invalid_argument("nn::mean: empty tensor");
  return sum_all_scaled("mean", x, true);
}
template <typename T>
BasicVar<T> mean(const BasicVar<T>& x, int64_t axis, bool keepdim) {
  if (x.defined() && x.dim(axis) == 0) throw std::invalid_argument("nn::mean: empty axis");
  return sum_axis_scaled("mean", x, axis, keepdim, true);
}

template <typename T>
BasicVar<T> max(const BasicVar<T>& x, int64_t axis, bool keepdim) {
  detail::require_defined("max", x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::max_axis(x, axis, keepdim);
#endif
  detail::require_cpu<T>("max", {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  const AxisView v = axis_view(xv.shape(), axis, keepdim, "max");
  if (v.n == 0) throw std::invalid_argument("nn::max: empty axis");
  BasicTensor<T> y = BasicTensor<T>::empty(v.out_shape);
  auto arg = std::make_shared<std::vector<int64_t>>(v.outer * v.inner);
  const T* xp = xv.data();
#pragma omp parallel for schedule(static) if (xv.numel() >= (1 << 15))
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t k = 0; k < v.inner; ++k) {
      int64_t best = 0;
      T bv = xp[o * v.n * v.inner + k];
      for (int64_t j = 1; j < v.n; ++j) {
        const T c = xp[(o * v.n + j) * v.inner + k];
        if (c > bv) {
          bv = c;
          best = j;
        }
      }
      y[o * v.inner + k] = bv;
      (*arg)[o * v.inner + k] = best;
    }
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, v, arg](BasicTensor<T>& g) {
    if (!xn->requires_grad) return;
    T* d = xn->grad_buffer().data();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t k = 0; k < v.inner; ++k)
        d[(o * v.n + (*arg)[o * v.inner + k]) * v.inner + k] += g[o * v.inner + k];
  });
  return out;
}

#define GDP_NN_INSTANTIATE_REDUCE(T)                            \
  template BasicVar<T> sum(const BasicVar<T>&);                 \
  template BasicVar<T> sum(const BasicVar<T>&, int64_t, bool);  \
  template BasicVar<T> mean(const BasicVar<T>&);                \
  template BasicVar<T> mean(const BasicVar<T>&, int64_t, bool); \
  template BasicVar<T> max(const BasicVar<T>&, int64_t, bool);

GDP_NN_INSTANTIATE_REDUCE(float)
GDP_NN_INSTANTIATE_REDUCE(double)

}  // namespace gdp::nn
