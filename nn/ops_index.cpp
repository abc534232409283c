// Indexing autograd ops: embedding lookup, gather / scatter-add of rows, and picking one element
// per row (take_along_last). Indices are validated here, where data enters.
#include <memory>

#include "nn/kernels.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
using detail::NodePtr;

void check_index(const char* op, const std::vector<int64_t>& index, int64_t bound) {
  for (size_t i = 0; i < index.size(); ++i)
    if (index[i] < 0 || index[i] >= bound)
      throw std::out_of_range(std::string("nn::") + op + ": index[" + std::to_string(i) +
                              "] = " + std::to_string(index[i]) + " not in [0, " +
                              std::to_string(bound) + ")");
}

// x (R, ...) -> rows of numel/R elements.
template <typename T>
BasicVar<T> gather_impl(const char* name, const BasicVar<T>& x, const std::vector<int64_t>& index) {
  detail::require_defined(name, x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::gather(name, x, index);
#endif
  detail::require_cpu<T>(name, {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  if (xv.ndim() < 1)
    throw std::invalid_argument(std::string("nn::") + name + ": x needs rank >= 1");
  const int64_t R = xv.dim(0), C = R == 0 ? 0 : xv.numel() / R;
  check_index(name, index, R);
  const int64_t N = static_cast<int64_t>(index.size());
  Shape out_shape = xv.shape();
  out_shape[0] = N;
  BasicTensor<T> y = BasicTensor<T>::empty(out_shape);
  embedding_forward(y.data(), xv.data(), index.data(), N, C);
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  auto idx = std::make_shared<const std::vector<int64_t>>(index);
  detail::record(out, [xn, idx, N, C](BasicTensor<T>& g) {
    if (xn->requires_grad)
      embedding_backward(xn->grad_buffer().data(), g.data(), idx->data(), N, C);
  });
  return out;
}
}  // namespace

template <typename T>
BasicVar<T> embedding(const BasicVar<T>& table, const std::vector<int64_t>& index) {
  if (table.defined() && table.ndim() != 2)
    throw std::invalid_argument("nn::embedding: table must be (V, C), got " +
                                shape_str(table.shape()));
  return gather_impl("embedding", table, index);
}

template <typename T>
BasicVar<T> gather_rows(const BasicVar<T>& x, const std::vector<int64_t>& index) {
  return gather_impl("gather_rows", x, index);
}

template <typename T>
BasicVar<T> scatter_add_rows(const BasicVar<T>& src, const std::vector<int64_t>& index,
                             int64_t num_rows) {
  detail::require_defined("scatter_add_rows", src, "src");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&src}))
      return detail::cuda_ops::scatter_add_rows(src, index, num_rows);
#endif
  detail::require_cpu<T>("scatter_add_rows", {&src});
  const BasicTensor<T> sv = src.value().contiguous();
  if (sv.ndim() < 1 || sv.dim(0) != static_cast<int64_t>(index.size()))
    throw std::invalid_argument("nn::scatter_add_rows: src " + shape_str(sv.shape()) + " with " +
                                std::to_string(index.size()) + " indices");
  if (num_rows < 0) throw std::invalid_argument("nn::scatter_add_rows: negative num_rows");
  check_index("scatter_add_rows", index, num_rows);
  const int64_t N = sv.dim(0),
                C = N == 0 ? shape_numel(Shape(sv.shape().begin() + 1, sv.shape().end()))
                           : sv.numel() / N;
  Shape out_shape = sv.shape();
  out_shape[0] = num_rows;
  BasicTensor<T> y(out_shape);  // zeros
  embedding_backward(y.data(), sv.data(), index.data(), N, C);
  const bool rg = needs_grad<T>({&src});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> sn = src.node();
  auto idx = std::make_shared<const std::vector<int64_t>>(index);
  detail::record(out, [sn, idx, N, C](BasicTensor<T>& g) {
    if (!sn->requires_grad) return;
    // d src[i] += d out[index[i]]: a gather, accumulated.
    T* ds = sn->grad_buffer().data();
    const T* gd = g.data();
#pragma omp parallel for schedule(static) if (N * C >= (1 << 15))
    for (int64_t i = 0; i < N; ++i)
      for (int64_t c = 0; c < C; ++c) ds[i * C + c] += gd[(*idx)[i] * C + c];
  });
  return out;
}

template <typename T>
BasicVar<T> take_along_last(const BasicVar<T>& x, const std::vector<int64_t>& index) {
  detail::require_defined("take_along_last", x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::take_along_last(x, index);
#endif
  detail::require_cpu<T>("take_along_last", {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  if (xv.ndim() != 2 || xv.dim(0) != static_cast<int64_t>(index.size()))
    throw std::invalid_argument("nn::take_along_last: x " + shape_str(xv.shape()) + " with " +
                                std::to_string(index.size()) + " indices (want x (N, C))");
  const int64_t N = xv.dim(0), C = xv.dim(1);
  check_index("take_along_last", index, C);
  BasicTensor<T> y = BasicTensor<T>::empty({N});
  for (int64_t i = 0; i < N; ++i) y[i] = xv[i * C + index[i]];
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  auto idx = std::make_shared<const std::vector<int64_t>>(index);
  detail::record(out, [xn, idx, N, C](BasicTensor<T>& g) {
    if (!xn->requires_grad) return;
    T* dx = xn->grad_buffer().data();
    for (int64_t i = 0; i < N; ++i) dx[i * C + (*idx)[i]] += g[i];
  });
  return out;
}

#define GDP_NN_INSTANTIATE_INDEX(T)                                                                \
  template BasicVar<T> embedding(const BasicVar<T>&, const std::vector<int64_t>&);                 \
  template BasicVar<T> gather_rows(const BasicVar<T>&, const std::vector<int64_t>&);               \
  template BasicVar<T> scatter_add_rows(const BasicVar<T>&, const std::vector<int64_t>&, int64_t); \
  template BasicVar<T> take_along_last(const BasicVar<T>&, const std::vector<int64_t>&);

GDP_NN_INSTANTIATE_INDEX(float)
GDP_NN_INSTANTIATE_INDEX(double)

}  // namespace gdp::nn
