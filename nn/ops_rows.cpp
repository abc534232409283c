// Row ops over the last dim as autograd ops: softmax, log-softmax, layer norm (the raw kernels
// in kernels.cpp do the work; these wrappers check shapes and record the backward closures).
#include "nn/kernels.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
using detail::NodePtr;

template <typename T, typename Fwd, typename Bwd>
BasicVar<T> row_op(const char* name, const BasicVar<T>& x, Fwd fwd, Bwd bwd) {
  detail::require_defined(name, x, "x");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x})) return detail::cuda_ops::row_op(name, x);
#endif
  detail::require_cpu<T>(name, {&x});
  const BasicTensor<T> xv = x.value().contiguous();
  if (xv.ndim() < 1) throw std::invalid_argument(std::string("nn::") + name + ": needs rank >= 1");
  const int64_t C = xv.shape().back(), N = C == 0 ? 0 : xv.numel() / C;
  BasicTensor<T> y = BasicTensor<T>::empty(xv.shape());
  fwd(y.data(), xv.data(), N, C);
  const bool rg = needs_grad<T>({&x});
  BasicVar<T> out(y, rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node();
  detail::record(out, [xn, y, bwd, N, C](BasicTensor<T>& g) {
    if (xn->requires_grad) bwd(xn->grad_buffer().data(), y.data(), g.data(), N, C);
  });
  return out;
}
}  // namespace

template <typename T>
BasicVar<T> softmax(const BasicVar<T>& x) {
  return row_op<T>("softmax", x, softmax_forward<T>, softmax_backward<T>);
}
template <typename T>
BasicVar<T> log_softmax(const BasicVar<T>& x) {
  return row_op<T>("log_softmax", x, log_softmax_forward<T>, log_softmax_backward<T>);
}

template <typename T>
BasicVar<T> layer_norm(const BasicVar<T>& x, const BasicVar<T>& weight, const BasicVar<T>& bias,
                       T eps) {
  detail::require_defined("layer_norm", x, "x");
  detail::require_defined("layer_norm", weight, "weight");
  detail::require_defined("layer_norm", bias, "bias");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x, &weight, &bias}))
      return detail::cuda_ops::layer_norm(x, weight, bias, eps);
#endif
  detail::require_cpu<T>("layer_norm", {&x, &weight, &bias});
  const BasicTensor<T> xv = x.value().contiguous(), wv = weight.value().contiguous(),
                       bv = bias.value().contiguous();
  if (xv.ndim() < 1) throw std::invalid_argument("nn::layer_norm: x needs rank >= 1");
  const int64_t C = xv.shape().back(), N = C == 0 ? 0 : xv.numel() / C;
  if (wv.numel() != C || bv.numel() != C)
    throw std::invalid_argument("nn::layer_norm: x " + shape_str(xv.shape()) + ", weight " +
                                shape_str(wv.shape()) + ", bias " + shape_str(bv.shape()));
  BasicTensor<T> y = BasicTensor<T>::empty(xv.shape());
  BasicTensor<T> mean = BasicTensor<T>::empty({N}), rstd = BasicTensor<T>::empty({N});
  layernorm_forward(y.data(), mean.data(), rstd.data(), xv.data(), wv.data(), bv.data(), N, C, eps);
  const bool rg = needs_grad<T>({&x, &weight, &bias});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node(), wn = weight.node(), bn = bias.node();
  detail::record(out, [=](BasicTensor<T>& g) {
    T* dx = xn->requires_grad ? xn->grad_buffer().data() : nullptr;
    T* dw = wn->requires_grad ? wn->grad_buffer().data() : nullptr;
    T* db = bn->requires_grad ? bn->grad_buffer().data() : nullptr;
    layernorm_backward(dx, dw, db, g.data(), xv.data(), wv.data(), mean.data(), rstd.data(), N, C);
  });
  return out;
}

#define GDP_NN_INSTANTIATE_ROWS(T)                      \
  template BasicVar<T> softmax(const BasicVar<T>&);     \
  template BasicVar<T> log_softmax(const BasicVar<T>&); \
  template BasicVar<T> layer_norm(const BasicVar<T>&, const BasicVar<T>&, const BasicVar<T>&, T);

GDP_NN_INSTANTIATE_ROWS(float)
GDP_NN_INSTANTIATE_ROWS(double)

}  // namespace gdp::nn
