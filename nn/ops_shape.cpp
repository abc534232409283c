// Shape autograd ops: concat, slice, reshape, transpose. Concat/slice view the tensor as
// (outer, axis, inner) and copy blocks of axis*inner contiguous elements.
#include <cstring>
#include <type_traits>

#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
using detail::NodePtr;

// Product of dims [begin, end).
int64_t dims_product(const Shape& s, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p *= s[i];
  return p;
}
}  // namespace

template <typename T>
BasicVar<T> concat(const std::vector<BasicVar<T>>& parts, int64_t axis) {
  if (parts.empty()) throw std::invalid_argument("nn::concat: no inputs");
  for (const auto& p : parts) detail::require_defined("concat", p, "part");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    for (const auto& p : parts)
      if (detail::on_device<T>({&p})) return detail::cuda_ops::concat(parts, axis);
#endif
  std::vector<BasicTensor<T>> vals;
  std::vector<Shape> shapes;
  for (const auto& p : parts) {
    detail::require_cpu<T>("concat", {&p});
    vals.push_back(p.value().contiguous());
    shapes.push_back(vals.back().shape());
  }
  int64_t ax = 0;
  const Shape out_shape = detail::concat_shape(shapes, axis, &ax);
  const Shape& s0 = shapes[0];
  const int64_t r = static_cast<int64_t>(s0.size());
  const int64_t outer = dims_product(s0, 0, ax), inner = dims_product(s0, ax + 1, r);
  const int64_t out_row = out_shape[ax] * inner;
  BasicTensor<T> y = BasicTensor<T>::empty(out_shape);
  std::vector<int64_t> offsets;  // start of each part inside an output row
  int64_t off = 0;
  for (const auto& v : vals) {
    offsets.push_back(off);
    off += v.shape()[ax] * inner;
  }
#pragma omp parallel for schedule(static) if (y.numel() >= (1 << 16))
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < vals.size(); ++k) {
      const int64_t len = vals[k].shape()[ax] * inner;
      std::memcpy(y.data() + o * out_row + offsets[k], vals[k].data() + o * len, len * sizeof(T));
    }
  bool rg = false;
  for (const auto& p : parts) rg = rg || needs_grad<T>({&p});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  std::vector<NodePtr<T>> nodes;
  std::vector<int64_t> lens;
  for (size_t k = 0; k < parts.size(); ++k) {
    nodes.push_back(parts[k].node());
    lens.push_back(vals[k].shape()[ax] * inner);
  }
  detail::record(out, [nodes, lens, offsets, outer, out_row](BasicTensor<T>& g) {
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (!nodes[k]->requires_grad) continue;
      T* d = nodes[k]->grad_buffer().data();
      const int64_t len = lens[k];
#pragma omp parallel for schedule(static) if (outer * len >= (1 << 15))
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < len; ++j) d[o * len + j] += g.data()[o * out_row + offsets[k] + j];
    }
  });
  return out;
}

template <typename T>
BasicVar<T> slice(const BasicVar<T>& x, int64_t axis, int64_t start, int64_t end) {
  detail::require_defined("slice", x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::slice(x, axis, start, end);
#endif
  detail::require_cpu<T>("slice", {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  const int64_t r = xv.ndim();
  const int64_t ax = detail::normalize_axis(axis, r, "slice");
  const int64_t n = xv.shape()[ax];
  if (start < 0 || end > n || start > end)
    throw std::out_of_range("nn::slice: [" + std::to_string(start) + ", " + std::to_string(end) +
                            ") on axis " + std::to_string(ax) + " of " + shape_str(xv.shape()));
  const int64_t outer = dims_product(xv.shape(), 0, ax),
                inner = dims_product(xv.shape(), ax + 1, r);
  const int64_t in_row = n * inner, len = (end - start) * inner, first = start * inner;
  Shape out_shape = xv.shape();
  out_shape[ax] = end - start;
  BasicTensor<T> y = BasicTensor<T>::empty(out_shape);
#pragma omp parallel for schedule(static) if (y.numel() >= (1 << 16))
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(y.data() + o * len, xv.data() + o * in_row + first, len * sizeof(T));
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, outer, in_row, len, first](BasicTensor<T>& g) {
    if (!xn->requires_grad) return;
    T* d = xn->grad_buffer().data();
#pragma omp parallel for schedule(static) if (outer * len >= (1 << 15))
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < len; ++j) d[o * in_row + first + j] += g.data()[o * len + j];
  });
  return out;
}

template <typename T>
BasicVar<T> reshape(const BasicVar<T>& x, const Shape& shape) {
  detail::require_defined("reshape", x, "x");
  // A view when x is contiguous; the gradient is accumulated on x's device. (Ops make contiguous
  // outputs; a strided device tensor, e.g. from transpose_view, has no copy kernel.)
  if (x.value().device() != Device::cpu && !x.value().is_contiguous())
    throw std::runtime_error("nn::reshape: strided (non-contiguous) " +
                             std::string(device_name(x.value().device())) +
                             " tensor; use transpose() or a contiguous tensor");
  BasicTensor<T> y = x.value().reshape(shape);
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn](BasicTensor<T>& g) {
    if (xn->requires_grad) detail::accumulate(xn->grad_buffer(), g);
  });
  return out;
}

template <typename T>
BasicVar<T> transpose(const BasicVar<T>& x, int64_t axis0, int64_t axis1) {
  detail::require_defined("transpose", x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::transpose(x, axis0, axis1);
#endif
  detail::require_cpu<T>("transpose", {&x});
  const int64_t r = x.ndim();
  const int64_t a0 = detail::normalize_axis(axis0, r, "transpose");
  const int64_t a1 = detail::normalize_axis(axis1, r, "transpose");
  BasicTensor<T> y = x.value().transpose_view(a0, a1).clone();
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, a0, a1](BasicTensor<T>& g) {
    if (xn->requires_grad) detail::accumulate(xn->grad_buffer(), g.transpose_view(a0, a1).clone());
  });
  return out;
}

#define GDP_NN_INSTANTIATE_SHAPE(T)                                          \
  template BasicVar<T> concat(const std::vector<BasicVar<T>>&, int64_t);     \
  template BasicVar<T> slice(const BasicVar<T>&, int64_t, int64_t, int64_t); \
  template BasicVar<T> reshape(const BasicVar<T>&, const Shape&);            \
  template BasicVar<T> transpose(const BasicVar<T>&, int64_t, int64_t);

GDP_NN_INSTANTIATE_SHAPE(float)
GDP_NN_INSTANTIATE_SHAPE(double)

}  // namespace gdp::nn
