// matmul (plain, flattened-rows and batched) and linear (x @ w^T + b) as autograd ops over the
// Eigen GEMM kernel. Backward: dA = dOut @ op(B)^T, dB = op(A)^T @ dOut, transposed as needed.
#include <omp.h>

#include "nn/kernels.h"
#include "nn/ops.h"
#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
using detail::NodePtr;

// Gradients of one GEMM out (M, P) = op(a) @ op(b) (a, b as stored), accumulated.
template <typename T>
void matmul_backward_one(T* da, T* db, const T* dout, const T* a, const T* b, int64_t M, int64_t K,
                         int64_t P, bool ta, bool tb) {
  if (da) {
    if (!ta)
      matmul_forward(da, dout, b, M, P, K, false, !tb, true);  // (M,K) = dout @ op(b)^T
    else
      matmul_forward(da, b, dout, K, P, M, tb, true, true);  // (K,M) = op(b) @ dout^T
  }
  if (db) {
    if (!tb)
      matmul_forward(db, a, dout, K, M, P, !ta, false, true);  // (K,P) = op(a)^T @ dout
    else
      matmul_forward(db, dout, a, P, M, K, true, ta, true);  // (P,K) = dout^T @ op(a)
  }
}
}  // namespace

template <typename T>
BasicVar<T> matmul(const BasicVar<T>& a, const BasicVar<T>& b, bool trans_a, bool trans_b) {
  detail::require_defined("matmul", a, "a");
  detail::require_defined("matmul", b, "b");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&a, &b})) return detail::cuda_ops::matmul(a, b, trans_a, trans_b);
#endif
  detail::require_cpu<T>("matmul", {&a, &b});
  const BasicTensor<T> av = a.value().contiguous(), bv = b.value().contiguous();
  const detail::MatmulDims md = detail::matmul_dims(av.shape(), bv.shape(), trans_a, trans_b);
  const int64_t batch = md.batch, M = md.M, K = md.K, P = md.P;
  const Shape& out_shape = md.out_shape;
  BasicTensor<T> y = BasicTensor<T>::empty(out_shape);
  const int64_t sa = M * K, sb = K * P, so = M * P;
  if (batch == 1) {
    matmul_forward(y.data(), av.data(), bv.data(), M, K, P, trans_a, trans_b, false);
  } else {
#pragma omp parallel for schedule(static) if (batch > 1 && batch * so * K >= (1 << 18))
    for (int64_t i = 0; i < batch; ++i)
      matmul_forward(y.data() + i * so, av.data() + i * sa, bv.data() + i * sb, M, K, P, trans_a,
                     trans_b, false);
  }
  const bool rg = needs_grad<T>({&a, &b});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> an = a.node(), bn = b.node();
  detail::record(out, [=](BasicTensor<T>& g) {
    T* da = an->requires_grad ? an->grad_buffer().data() : nullptr;
    T* db = bn->requires_grad ? bn->grad_buffer().data() : nullptr;
    if (batch == 1) {
      matmul_backward_one(da, db, g.data(), av.data(), bv.data(), M, K, P, trans_a, trans_b);
      return;
    }
#pragma omp parallel for schedule(static) if (batch * so * K >= (1 << 18))
    for (int64_t i = 0; i < batch; ++i)
      matmul_backward_one(da ? da + i * sa : nullptr, db ? db + i * sb : nullptr, g.data() + i * so,
                          av.data() + i * sa, bv.data() + i * sb, M, K, P, trans_a, trans_b);
  });
  return out;
}

template <typename T>
BasicVar<T> linear(const BasicVar<T>& x, const BasicVar<T>& w, const BasicVar<T>& bias) {
  detail::require_defined("linear", x, "x");
  detail::require_defined("linear", w, "w");
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>)
    if (detail::on_device<T>({&x, &w, &bias})) return detail::cuda_ops::linear(x, w, bias);
#endif
  detail::require_cpu<T>("linear", {&x, &w, &bias});
  const BasicTensor<T> xv = x.value().contiguous(), wv = w.value().contiguous();
  if (wv.ndim() != 2 || xv.ndim() < 1 || xv.shape().back() != wv.dim(1))
    throw std::invalid_argument("nn::linear: x " + shape_str(xv.shape()) + " and w " +
                                shape_str(wv.shape()) + " (want x (..., IN), w (OUT, IN))");
  const bool has_bias = bias.defined();
  const int64_t IN = wv.dim(1), OUT = wv.dim(0), N = xv.numel() / std::max<int64_t>(IN, 1);
  BasicTensor<T> bv;
  if (has_bias) {
    bv = bias.value().contiguous();
    if (bv.numel() != OUT || bv.ndim() != 1)
      throw std::invalid_argument("nn::linear: bias " + shape_str(bv.shape()) +
                                  " for OUT = " + std::to_string(OUT));
  }
  Shape out_shape = xv.shape();
  out_shape.back() = OUT;
  BasicTensor<T> y = BasicTensor<T>::empty(out_shape);
  matmul_forward(y.data(), xv.data(), wv.data(), N, IN, OUT, false, true, false);
  if (has_bias) {
    const auto brow = bv.mat(1, OUT);
    auto ym = y.mat(N, OUT);
#pragma omp parallel for schedule(static) if (N * OUT >= (1 << 15))
    for (int64_t i = 0; i < N; ++i) ym.row(i) += brow;
  }
  const bool rg = needs_grad<T>({&x, &w, &bias});
  BasicVar<T> out(std::move(y), rg);
  if (!rg) return out;
  NodePtr<T> xn = x.node(), wn = w.node(), bn = has_bias ? bias.node() : nullptr;
  detail::record(out, [=](BasicTensor<T>& g) {
    // dx (N, IN) += g (N, OUT) @ w (OUT, IN); dw (OUT, IN) += g^T @ x; db (OUT) += colsum(g).
    if (xn->requires_grad)
      matmul_forward(xn->grad_buffer().data(), g.data(), wv.data(), N, OUT, IN, false, false, true);
    if (wn->requires_grad)
      matmul_forward(wn->grad_buffer().data(), g.data(), xv.data(), OUT, N, IN, true, false, true);
    if (bn && bn->requires_grad) sum_rows_accumulate(bn->grad_buffer().data(), g.data(), N, OUT);
  });
  return out;
}

#define GDP_NN_INSTANTIATE_LINALG(T)                                               \
  template BasicVar<T> matmul(const BasicVar<T>&, const BasicVar<T>&, bool, bool); \
  template BasicVar<T> linear(const BasicVar<T>&, const BasicVar<T>&, const BasicVar<T>&);

GDP_NN_INSTANTIATE_LINALG(float)
GDP_NN_INSTANTIATE_LINALG(double)

}  // namespace gdp::nn
