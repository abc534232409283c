// Element-wise autograd ops: broadcasting binary ops (add/sub/mul/div/minimum/maximum) and the
// unary ops (activations, exp/log, clamp, dropout). Broadcasting coalesces dims so the inner loop
// runs over a contiguous (or stride-0) run.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "nn/kernels.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
constexpr int64_t kParallelElems = 1 << 15;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("nn: shapes " + shape_str(a) + " and " + shape_str(b) +
                                  " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace detail {

template <typename T>
void accumulate(BasicTensor<T>& dst, const BasicTensor<T>& src) {
  if (dst.numel() != src.numel())
    throw std::logic_error("nn: gradient accumulation with mismatched sizes " +
                           shape_str(dst.shape()) + " and " + shape_str(src.shape()));
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>) {
    if (dst.device() != Device::cpu || src.device() != Device::cpu) {
      cuda_ops::accumulate(dst, src);
      return;
    }
  }
#endif
  const BasicTensor<T> s = src.contiguous();
  T* d = dst.data();
  const T* p = s.data();
  const int64_t n = dst.numel();
#pragma omp parallel for schedule(static) if (n >= kParallelElems)
  for (int64_t i = 0; i < n; ++i) d[i] += p[i];
}
template void accumulate(BasicTensor<float>&, const BasicTensor<float>&);
template void accumulate(BasicTensor<double>&, const BasicTensor<double>&);

}  // namespace detail

namespace {

using detail::NodePtr;

// Iteration plan over a broadcast output: coalesced dims and, per input, strides (0 where the
// input is broadcast). Rows = all dims but the last, inner = the last coalesced dim.
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [input][dim]
  int64_t numel = 0;

  BroadcastPlan(const Shape& out, const std::vector<Shape>& inputs) {
    numel = shape_numel(out);
    const size_t r = out.size();
    std::vector<std::vector<int64_t>> st(inputs.size(), std::vector<int64_t>(r, 0));
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Shape& s = inputs[k];
      int64_t acc = 1;
      for (size_t i = r; i-- > 0;) {
        const size_t off = r - s.size();
        const int64_t d = i < off ? 1 : s[i - off];
        st[k][i] = (d == 1 && out[i] != 1) ? 0 : acc;
        acc *= d;
      }
    }
    // Drop size-1 dims, then merge neighbours whose strides chain for every input.
    for (size_t i = 0; i < r; ++i) {
      if (out[i] == 1) continue;
      if (!dims.empty()) {
        bool merge = true;
        for (size_t k = 0; k < inputs.size(); ++k)
          if (strides[k].back() != st[k][i] * out[i]) merge = false;
        if (merge) {
          dims.back() *= out[i];
          for (size_t k = 0; k < inputs.size(); ++k) strides[k].back() = st[k][i];
          continue;
        }
      }
      dims.push_back(out[i]);
      if (strides.empty()) strides.resize(inputs.size());
      for (size_t k = 0; k < inputs.size(); ++k) strides[k].push_back(st[k][i]);
    }
    if (dims.empty()) {
      dims.push_back(1);
      strides.assign(inputs.size(), std::vector<int64_t>{0});
    }
  }
  int64_t inner() const { return dims.back(); }
  int64_t rows() const { return numel == 0 ? 0 : numel / inner(); }
  int64_t inner_stride(size_t k) const { return strides[k].back(); }
  int64_t row_offset(size_t k, int64_t row) const {
    int64_t off = 0;
    for (size_t i = dims.size() - 1; i-- > 0;) {
      off += (row % dims[i]) * strides[k][i];
      row /= dims[i];
    }
    return off;
  }
  // True when distinct rows of input k never share elements (safe to scatter in parallel).
  bool rows_disjoint(size_t k) const {
    for (size_t i = 0; i + 1 < dims.size(); ++i)
      if (strides[k][i] == 0) return false;
    return true;
  }
};

enum class BinOp { add, sub, mul, div, min, max };

template <typename T>
inline T bin_apply(BinOp op, T x, T y) {
  switch (op) {
    case BinOp::add:
      return x + y;
    case BinOp::sub:
      return x - y;
    case BinOp::mul:
      return x * y;
    case BinOp::div:
      return x / y;
    case BinOp::min:
      return x <= y ? x : y;
    case BinOp::max:
      return x >= y ? x : y;
  }
  return T(0);
}

// d out / d x (first operand) and d out / d y.
template <typename T>
inline T bin_da(BinOp op, T x, T y) {
  switch (op) {
    case BinOp::add:
    case BinOp::sub:
      return T(1);
    case BinOp::mul:
      return y;
    case BinOp::div:
      return T(1) / y;
    case BinOp::min:
      return x <= y ? T(1) : T(0);
    case BinOp::max:
      return x >= y ? T(1) : T(0);
  }
  return T(0);
}
template <typename T>
inline T bin_db(BinOp op, T x, T y) {
  switch (op) {
    case BinOp::add:
      return T(1);
    case BinOp::sub:
      return T(-1);
    case BinOp::mul:
      return x;
    case BinOp::div:
      return -x / (y * y);
    case BinOp::min:
      return x <= y ? T(0) : T(1);
    case BinOp::max:
      return x >= y ? T(0) : T(1);
  }
  return T(0);
}

// Inner loop with compile-time op and strides (lets the compiler vectorize).
template <BinOp OP, int SA, int SB, typename T>
void bin_inner(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t j = 0; j < n; ++j) out[j] = bin_apply(OP, a[j * SA], b[j * SB]);
}
template <BinOp OP, typename T>
void bin_inner_dispatch(T* out, const T* a, const T* b, int64_t n, int64_t sa, int64_t sb) {
  if (sa == 1 && sb == 1) return bin_inner<OP, 1, 1>(out, a, b, n);
  if (sa == 1 && sb == 0) return bin_inner<OP, 1, 0>(out, a, b, n);
  if (sa == 0 && sb == 1) return bin_inner<OP, 0, 1>(out, a, b, n);
  return bin_inner<OP, 0, 0>(out, a, b, n);
}
template <BinOp OP, typename T>
void bin_forward(T* out, const T* a, const T* b, const BroadcastPlan& plan) {
  const int64_t rows = plan.rows(), inner = plan.inner();
  const int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  if (rows == 1) {
    // One long run: split it across threads.
    const int64_t n = inner;
#pragma omp parallel if (n >= kParallelElems)
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t per = (n + nt - 1) / nt, lo = std::min(n, t * per), hi = std::min(n, lo + per);
      if (lo < hi) bin_inner_dispatch<OP>(out + lo, a + lo * sa, b + lo * sb, hi - lo, sa, sb);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (plan.numel >= kParallelElems)
  for (int64_t r = 0; r < rows; ++r)
    bin_inner_dispatch<OP>(out + r * inner, a + plan.row_offset(0, r), b + plan.row_offset(1, r),
                           inner, sa, sb);
}
template <typename T>
void bin_forward_op(BinOp op, T* out, const T* a, const T* b, const BroadcastPlan& plan) {
  switch (op) {
    case BinOp::add:
      return bin_forward<BinOp::add>(out, a, b, plan);
    case BinOp::sub:
      return bin_forward<BinOp::sub>(out, a, b, plan);
    case BinOp::mul:
      return bin_forward<BinOp::mul>(out, a, b, plan);
    case BinOp::div:
      return bin_forward<BinOp::div>(out, a, b, plan);
    case BinOp::min:
      return bin_forward<BinOp::min>(out, a, b, plan);
    case BinOp::max:
      return bin_forward<BinOp::max>(out, a, b, plan);
  }
}

// dst (input k's shape) += sum over broadcast dims of src (output shape), scaled by sign.
template <typename T>
void reduce_into(T* dst, const T* src, const BroadcastPlan& plan, size_t k, T sign,
                 int64_t dst_numel) {
  const int64_t rows = plan.rows(), inner = plan.inner(), s = plan.inner_stride(k);
  auto row_fn = [&](T* d, int64_t r) {
    const T* g = src + r * inner;
    T* base = d + plan.row_offset(k, r);
    if (s == 1) {
      for (int64_t j = 0; j < inner; ++j) base[j] += sign * g[j];
    } else {
      T acc = T(0);
      for (int64_t j = 0; j < inner; ++j) acc += g[j];
      base[0] += sign * acc;
    }
  };
  const bool big = plan.numel >= kParallelElems && rows >= 2;
  if (rows == 1 && s == 1) {
#pragma omp parallel for schedule(static) if (plan.numel >= kParallelElems)
    for (int64_t j = 0; j < inner; ++j) dst[j] += sign * src[j];
    return;
  }
  if (!big) {
    for (int64_t r = 0; r < rows; ++r) row_fn(dst, r);
    return;
  }
  if (plan.rows_disjoint(k)) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row_fn(dst, r);
    return;
  }
  // Rows collide (e.g. a bias broadcast over rows): per-thread partial sums, fixed-order reduce.
  const int nt = omp_get_max_threads();
  std::vector<T> part(static_cast<size_t>(nt) * dst_numel, T(0));
#pragma omp parallel num_threads(nt)
  {
    T* mine = part.data() + static_cast<int64_t>(omp_get_thread_num()) * dst_numel;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row_fn(mine, r);
  }
  for (int t = 0; t < nt; ++t)
    for (int64_t i = 0; i < dst_numel; ++i) dst[i] += part[static_cast<size_t>(t) * dst_numel + i];
}

template <typename T>
BasicVar<T> binary(BinOp op, const char* name, const BasicVar<T>& a, const BasicVar<T>& b) {
  detail::require_defined(name, a, "a");
  detail::require_defined(name, b, "b");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&a, &b})) return detail::cuda_ops::binary(name, a, b);
#endif
  detail::require_cpu<T>(name, {&a, &b});
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape());
  const BasicTensor<T> av = a.value().contiguous(), bv = b.value().contiguous();
  auto plan =
      std::make_shared<BroadcastPlan>(out_shape, std::vector<Shape>{av.shape(), bv.shape()});
  BasicTensor<T> y = BasicTensor<T>::empty(out_shape);
  bin_forward_op(op, y.data(), av.data(), bv.data(), *plan);
  const bool rg = needs_grad<T>({&a, &b});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> an = a.node(), bn = b.node();
  detail::record(out, [op, plan, an, bn, av, bv](BasicTensor<T>& g) {
    const int64_t rows = plan->rows(), inner = plan->inner();
    for (size_t k = 0; k < 2; ++k) {
      const NodePtr<T>& node = k == 0 ? an : bn;
      if (!node->requires_grad) continue;
      BasicTensor<T>& dst = node->grad_buffer();
      const bool linear = op == BinOp::add || op == BinOp::sub;
      if (linear) {
        const T sign = (op == BinOp::sub && k == 1) ? T(-1) : T(1);
        reduce_into(dst.data(), g.data(), *plan, k, sign, dst.numel());
        continue;
      }
      // Full-size contribution dout * d out / d input, then reduced onto the input's shape.
      BasicTensor<T> contrib = BasicTensor<T>::empty(g.shape());
      T* c = contrib.data();
      const T* gd = g.data();
      const T* ap = av.data();
      const T* bp = bv.data();
      const int64_t sa = plan->inner_stride(0), sb = plan->inner_stride(1);
#pragma omp parallel for schedule(static) if (plan->numel >= kParallelElems)
      for (int64_t r = 0; r < rows; ++r) {
        const T* ar = ap + plan->row_offset(0, r);
        const T* br = bp + plan->row_offset(1, r);
        for (int64_t j = 0; j < inner; ++j) {
          const T x = ar[j * sa], yv = br[j * sb];
          c[r * inner + j] = gd[r * inner + j] * (k == 0 ? bin_da(op, x, yv) : bin_db(op, x, yv));
        }
      }
      reduce_into(dst.data(), contrib.data(), *plan, k, T(1), dst.numel());
    }
  });
  return out;
}

// Unary op with raw forward/backward kernels; backward uses the input (kUsesOutput false) or
// the output (true).
template <typename T, typename Fwd, typename Bwd>
BasicVar<T> unary(const char* name, const BasicVar<T>& x, Fwd fwd, Bwd bwd, bool uses_output) {
  detail::require_defined(name, x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::unary(name, x);
#endif
  detail::require_cpu<T>(name, {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  BasicTensor<T> y = BasicTensor<T>::empty(xv.shape());
  fwd(y.data(), xv.data(), xv.numel());
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(y, rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  const BasicTensor<T> saved = uses_output ? y : xv;
  detail::record(out, [xn, saved, bwd](BasicTensor<T>& g) {
    if (!xn->requires_grad) return;
    bwd(xn->grad_buffer().data(), saved.data(), g.data(), g.numel());
  });
  return out;
}

// Element-wise op given as lambdas on one element: value f(x) and derivative df(x).
template <typename T, typename F, typename DF>
BasicVar<T> pointwise(const char* name, const BasicVar<T>& x, F f, DF df) {
  return unary<T>(
      name, x,
      [f](T* out, const T* in, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelElems)
        for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
      },
      [df](T* din, const T* in, const T* dout, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelElems)
        for (int64_t i = 0; i < n; ++i) din[i] += dout[i] * df(in[i]);
      },
      false);
}

}  // namespace

// The cuda path of the parametrised maps (cuda::MapOp) for device tensors.
#ifdef GDP_HAVE_CUDA
#define GDP_NN_DEVICE_MAP(name, x, f, p0, p1)                                            \
  if constexpr (std::is_same_v<T, float>)                                                \
    if (x.defined() && detail::on_device<T>({&x}))                                       \
      return detail::cuda_ops::map(name, x, gdp::cuda::MapOp::f, static_cast<float>(p0), \
                                   static_cast<float>(p1));
#else
#define GDP_NN_DEVICE_MAP(name, x, f, p0, p1)
#endif

template <typename T>
BasicVar<T> add(const BasicVar<T>& a, const BasicVar<T>& b) {
  return binary(BinOp::add, "add", a, b);
}
template <typename T>
BasicVar<T> sub(const BasicVar<T>& a, const BasicVar<T>& b) {
  return binary(BinOp::sub, "sub", a, b);
}
template <typename T>
BasicVar<T> mul(const BasicVar<T>& a, const BasicVar<T>& b) {
  return binary(BinOp::mul, "mul", a, b);
}
template <typename T>
BasicVar<T> div(const BasicVar<T>& a, const BasicVar<T>& b) {
  return binary(BinOp::div, "div", a, b);
}
template <typename T>
BasicVar<T> minimum(const BasicVar<T>& a, const BasicVar<T>& b) {
  return binary(BinOp::min, "minimum", a, b);
}
template <typename T>
BasicVar<T> maximum(const BasicVar<T>& a, const BasicVar<T>& b) {
  return binary(BinOp::max, "maximum", a, b);
}

template <typename T>
BasicVar<T> add_scalar(const BasicVar<T>& x, T s) {
  GDP_NN_DEVICE_MAP("add_scalar", x, affine, 1, s)
  return pointwise<T>(
      "add_scalar", x, [s](T v) { return v + s; }, [](T) { return T(1); });
}
template <typename T>
BasicVar<T> scale(const BasicVar<T>& x, T s) {
  GDP_NN_DEVICE_MAP("scale", x, affine, s, 0)
  return pointwise<T>(
      "scale", x, [s](T v) { return v * s; }, [s](T) { return s; });
}
template <typename T>
BasicVar<T> neg(const BasicVar<T>& x) {
  return scale(x, T(-1));
}
template <typename T>
BasicVar<T> square(const BasicVar<T>& x) {
  GDP_NN_DEVICE_MAP("square", x, square, 0, 0)
  return pointwise<T>(
      "square", x, [](T v) { return v * v; }, [](T v) { return T(2) * v; });
}
template <typename T>
BasicVar<T> sqrt(const BasicVar<T>& x) {
  GDP_NN_DEVICE_MAP("sqrt", x, sqrt, 0, 0)
  return pointwise<T>(
      "sqrt", x, [](T v) { return std::sqrt(v); }, [](T v) { return T(0.5) / std::sqrt(v); });
}
template <typename T>
BasicVar<T> clamp(const BasicVar<T>& x, T lo, T hi) {
  if (lo > hi) throw std::invalid_argument("nn::clamp: lo > hi");
  GDP_NN_DEVICE_MAP("clamp", x, clamp, lo, hi)
  return pointwise<T>(
      "clamp", x, [lo, hi](T v) { return std::min(std::max(v, lo), hi); },
      [lo, hi](T v) { return (v >= lo && v <= hi) ? T(1) : T(0); });
}

template <typename T>
BasicVar<T> relu(const BasicVar<T>& x) {
  return unary<T>("relu", x, relu_forward<T>, relu_backward<T>, false);
}
template <typename T>
BasicVar<T> gelu(const BasicVar<T>& x) {
  return unary<T>("gelu", x, gelu_forward<T>, gelu_backward<T>, false);
}
template <typename T>
BasicVar<T> tanh(const BasicVar<T>& x) {
  return unary<T>("tanh", x, tanh_forward<T>, tanh_backward<T>, true);
}
template <typename T>
BasicVar<T> sigmoid(const BasicVar<T>& x) {
  return unary<T>("sigmoid", x, sigmoid_forward<T>, sigmoid_backward<T>, true);
}
template <typename T>
BasicVar<T> exp(const BasicVar<T>& x) {
  return unary<T>("exp", x, exp_forward<T>, exp_backward<T>, true);
}
template <typename T>
BasicVar<T> log(const BasicVar<T>& x) {
  return unary<T>("log", x, log_forward<T>, log_backward<T>, false);
}

template <typename T>
BasicVar<T> dropout(const BasicVar<T>& x, double p, Rng& rng, bool training) {
  if (p < 0.0 || p >= 1.0) throw std::invalid_argument("nn::dropout: p must be in [0, 1)");
  if (!training || p == 0.0) return x;
  detail::require_defined("dropout", x, "x");
  const T keep_scale = static_cast<T>(1.0 / (1.0 - p));
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) {  // the same mask stream as on the cpu
      std::vector<float> mask(static_cast<size_t>(x.numel()));
      for (float& m : mask) m = rng.uniform() < p ? 0.0f : keep_scale;
      return detail::cuda_ops::dropout(x, mask);
    }
#endif
  detail::require_cpu<T>("dropout", {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  const int64_t n = xv.numel();
  BasicTensor<T> mask = BasicTensor<T>::empty(xv.shape());
  for (int64_t i = 0; i < n; ++i) mask[i] = rng.uniform() < p ? T(0) : keep_scale;
  BasicTensor<T> y = BasicTensor<T>::empty(xv.shape());
  y.vec() = xv.vec() * mask.vec();
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, mask](BasicTensor<T>& g) {
    if (xn->requires_grad) xn->grad_buffer().vec() += g.vec() * mask.vec();
  });
  return out;
}

template <typename T>
BasicVar<T> detach(const BasicVar<T>& x) {
  return BasicVar<T>(x.value(), false);
}

#define GDP_NN_INSTANTIATE_ELEMENTWISE(T)                               \
  template BasicVar<T> add(const BasicVar<T>&, const BasicVar<T>&);     \
  template BasicVar<T> sub(const BasicVar<T>&, const BasicVar<T>&);     \
  template BasicVar<T> mul(const BasicVar<T>&, const BasicVar<T>&);     \
  template BasicVar<T> div(const BasicVar<T>&, const BasicVar<T>&);     \
  template BasicVar<T> minimum(const BasicVar<T>&, const BasicVar<T>&); \
  template BasicVar<T> maximum(const BasicVar<T>&, const BasicVar<T>&); \
  template BasicVar<T> add_scalar(const BasicVar<T>&, T);               \
  template BasicVar<T> scale(const BasicVar<T>&, T);                    \
  template BasicVar<T> neg(const BasicVar<T>&);                         \
  template BasicVar<T> square(const BasicVar<T>&);                      \
  template BasicVar<T> sqrt(const BasicVar<T>&);                        \
  template BasicVar<T> clamp(const BasicVar<T>&, T, T);                 \
  template BasicVar<T> relu(const BasicVar<T>&);                        \
  template BasicVar<T> gelu(const BasicVar<T>&);                        \
  template BasicVar<T> tanh(const BasicVar<T>&);                        \
  template BasicVar<T> sigmoid(const BasicVar<T>&);                     \
  template BasicVar<T> exp(const BasicVar<T>&);                         \
  template BasicVar<T> log(const BasicVar<T>&);                         \
  template BasicVar<T> dropout(const BasicVar<T>&, double, Rng&, bool); \
  template BasicVar<T> detach(const BasicVar<T>&);

GDP_NN_INSTANTIATE_ELEMENTWISE(float)
GDP_NN_INSTANTIATE_ELEMENTWISE(double)

}  // namespace gdp::nn
