// Differentiable core ops on BasicVar<T> (T = float or double). Each op computes its output with
// the raw kernels of nn/kernels.h and, when an input requires a gradient, records a closure on
// the tape that ACCUMULATES into the inputs' gradients. Outputs are always contiguous.
//
// Dimension letters: N = rows (flattened leading dims), C = channels (last dim), B = batch,
// M/K/P = matmul dims, V = vocabulary rows of an embedding table.
// Device dispatch: every op checks its inputs' device at one place (nn/ops_internal.h): float
// cuda tensors take the cuda path of the ported ops (nn/ops_cuda.cpp, builds with GDP_HAVE_CUDA),
// other ops throw naming the op (require_cpu).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/autograd.h"
#include "nn/rng.h"
#include "nn/tensor.h"

namespace gdp::nn {

// ---- Linear algebra -------------------------------------------------------------------------
// a (..., M, K) @ b (K, P) -> (..., M, P): leading dims of a flatten into rows.
// a (B, M, K) @ b (B, K, P) -> (B, M, P): batched (any number of equal leading dims).
// trans_a / trans_b use the transpose of the last two dims of a / b.
template <typename T>
BasicVar<T> matmul(const BasicVar<T>& a, const BasicVar<T>& b, bool trans_a = false,
                   bool trans_b = false);
// x (..., IN) -> x @ w^T + bias: w (OUT, IN) as in PyTorch, bias (OUT) or undefined.
template <typename T>
BasicVar<T> linear(const BasicVar<T>& x, const BasicVar<T>& w, const BasicVar<T>& bias);

// ---- Element-wise binary ops with NumPy broadcasting ----------------------------------------
template <typename T>
BasicVar<T> add(const BasicVar<T>& a, const BasicVar<T>& b);
template <typename T>
BasicVar<T> sub(const BasicVar<T>& a, const BasicVar<T>& b);
template <typename T>
BasicVar<T> mul(const BasicVar<T>& a, const BasicVar<T>& b);
template <typename T>
BasicVar<T> div(const BasicVar<T>& a, const BasicVar<T>& b);
template <typename T>
BasicVar<T> minimum(const BasicVar<T>& a, const BasicVar<T>& b);  // ties: gradient to a
template <typename T>
BasicVar<T> maximum(const BasicVar<T>& a, const BasicVar<T>& b);  // ties: gradient to a

// ---- Element-wise unary ops -----------------------------------------------------------------
template <typename T>
BasicVar<T> add_scalar(const BasicVar<T>& x, T s);
template <typename T>
BasicVar<T> scale(const BasicVar<T>& x, T s);  // x * s
template <typename T>
BasicVar<T> neg(const BasicVar<T>& x);
template <typename T>
BasicVar<T> relu(const BasicVar<T>& x);
template <typename T>
BasicVar<T> gelu(const BasicVar<T>& x);  // tanh approximation (torch approximate="tanh")
template <typename T>
BasicVar<T> tanh(const BasicVar<T>& x);
template <typename T>
BasicVar<T> sigmoid(const BasicVar<T>& x);
template <typename T>
BasicVar<T> exp(const BasicVar<T>& x);
template <typename T>
BasicVar<T> log(const BasicVar<T>& x);
template <typename T>
BasicVar<T> square(const BasicVar<T>& x);
template <typename T>
BasicVar<T> sqrt(const BasicVar<T>& x);
template <typename T>
BasicVar<T> clamp(const BasicVar<T>& x, T lo, T hi);  // gradient 0 outside [lo, hi]
// Inverted dropout: keeps with probability 1-p and scales by 1/(1-p); identity when !training
// or p == 0. The mask comes from rng (explicit, seeded).
template <typename T>
BasicVar<T> dropout(const BasicVar<T>& x, double p, Rng& rng, bool training = true);
// Same value, no gradient flows back.
template <typename T>
BasicVar<T> detach(const BasicVar<T>& x);

// ---- Row ops over the last dim ---------------------------------------------------------------
template <typename T>
BasicVar<T> softmax(const BasicVar<T>& x);
template <typename T>
BasicVar<T> log_softmax(const BasicVar<T>& x);
// x (..., C), weight (C), bias (C) -> (..., C); biased variance as in PyTorch.
template <typename T>
BasicVar<T> layer_norm(const BasicVar<T>& x, const BasicVar<T>& weight, const BasicVar<T>& bias,
                       T eps = T(1e-5));

// ---- Indexing --------------------------------------------------------------------------------
// table (V, C), index (N) in [0, V) -> (N, C). Backward scatter-adds into the table.
template <typename T>
BasicVar<T> embedding(const BasicVar<T>& table, const std::vector<int64_t>& index);
// x (R, C...), index (N) -> (N, C...): rows of x (index_select on dim 0).
template <typename T>
BasicVar<T> gather_rows(const BasicVar<T>& x, const std::vector<int64_t>& index);
// src (N, C...), index (N) in [0, R) -> (R, C...): out[index[i]] += src[i].
template <typename T>
BasicVar<T> scatter_add_rows(const BasicVar<T>& src, const std::vector<int64_t>& index,
                             int64_t num_rows);
// x (N, C), index (N) -> (N): out[i] = x[i, index[i]] (e.g. the log-prob of chosen actions).
template <typename T>
BasicVar<T> take_along_last(const BasicVar<T>& x, const std::vector<int64_t>& index);

// ---- Shape ops -------------------------------------------------------------------------------
template <typename T>
BasicVar<T> concat(const std::vector<BasicVar<T>>& parts, int64_t axis);
template <typename T>
BasicVar<T> slice(const BasicVar<T>& x, int64_t axis, int64_t start, int64_t end);  // [start, end)
template <typename T>
BasicVar<T> reshape(const BasicVar<T>& x, const Shape& shape);  // one dim may be -1
template <typename T>
BasicVar<T> transpose(const BasicVar<T>& x, int64_t axis0, int64_t axis1);  // contiguous copy

// ---- Reductions ------------------------------------------------------------------------------
template <typename T>
BasicVar<T> sum(const BasicVar<T>& x);  // all elements -> shape ()
template <typename T>
BasicVar<T> sum(const BasicVar<T>& x, int64_t axis, bool keepdim = false);
template <typename T>
BasicVar<T> mean(const BasicVar<T>& x);
template <typename T>
BasicVar<T> mean(const BasicVar<T>& x, int64_t axis, bool keepdim = false);
// Max over an axis; the gradient goes to the first argmax.
template <typename T>
BasicVar<T> max(const BasicVar<T>& x, int64_t axis, bool keepdim = false);

// ---- Operators (float and double) ------------------------------------------------------------
template <typename T>
BasicVar<T> operator+(const BasicVar<T>& a, const BasicVar<T>& b) {
  return add(a, b);
}
template <typename T>
BasicVar<T> operator-(const BasicVar<T>& a, const BasicVar<T>& b) {
  return sub(a, b);
}
template <typename T>
BasicVar<T> operator*(const BasicVar<T>& a, const BasicVar<T>& b) {
  return mul(a, b);
}
template <typename T>
BasicVar<T> operator/(const BasicVar<T>& a, const BasicVar<T>& b) {
  return div(a, b);
}

// Shape of the broadcast of a and b (NumPy rules); throws with both shapes on mismatch.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace gdp::nn
