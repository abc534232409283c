// Helpers shared by the ops_*.cpp files (not part of the public API): the device dispatch check,
// axis normalization, gradient accumulation and the tape-recording boilerplate.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "nn/attention.h"
#include "nn/autograd.h"
#include "nn/segment.h"
#include "nn/tensor.h"
#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"  // plain C++ (MapOp)
#endif

namespace gdp::nn::detail {

template <typename T>
using NodePtr = std::shared_ptr<VarNode<T>>;

// The device check of every op: ops without a cuda path throw here for non-cpu inputs.
template <typename T>
void require_cpu(const char* op, std::initializer_list<const BasicVar<T>*> inputs) {
  for (const auto* v : inputs) {
    if (!v->defined()) continue;
    if (v->value().device() != Device::cpu)
      throw std::runtime_error(std::string("nn::") + op + ": no " +
                               device_name(v->value().device()) + " backend for this op");
  }
}

// True when any defined input lives off the CPU: the op then takes its cuda path (float, builds
// with GDP_HAVE_CUDA), which requires every input on the device.
template <typename T>
bool on_device(std::initializer_list<const BasicVar<T>*> inputs) {
  for (const auto* v : inputs)
    if (v->defined() && v->value().device() != Device::cpu) return true;
  return false;
}

#ifdef GDP_HAVE_CUDA
// The cuda paths of the ops (nn/ops_cuda.cpp), float only. Each checks that all inputs are cuda
// tensors and throws std::runtime_error naming the op otherwise. Ops not listed here have no
// kernel of their own on the device: reshape and detach are views, dropout multiplies by a mask
// drawn on the host, sage_layer and the categorical ops are compositions of these (graph_ops.cpp).
namespace cuda_ops {
Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b);
Var linear(const Var& x, const Var& w, const Var& bias);
// add, sub, mul, div, minimum, maximum with NumPy broadcasting (general cases through expand).
Var binary(const char* op, const Var& a, const Var& b);
Var unary(const char* op, const Var& x);  // relu, gelu, tanh, sigmoid, exp, log
// add_scalar, scale, neg (affine), square, sqrt, clamp.
Var map(const char* op, const Var& x, gdp::cuda::MapOp f, float p0, float p1);
Var dropout(const Var& x, const std::vector<float>& mask);  // x * mask
Var row_op(const char* op, const Var& x);                   // softmax, log_softmax
Var layer_norm(const Var& x, const Var& weight, const Var& bias, float eps);
Var sum_axis(const char* op, const Var& x, int64_t axis, bool keepdim, bool is_mean);
Var sum_all(const char* op, const Var& x, bool is_mean);
Var max_axis(const Var& x, int64_t axis, bool keepdim);
Var gather(const char* op, const Var& x,
           const std::vector<int64_t>& index);  // gather_rows, embedding
Var scatter_add_rows(const Var& src, const std::vector<int64_t>& index, int64_t num_rows);
Var take_along_last(const Var& x, const std::vector<int64_t>& index);
Var expand(const Var& x, const Shape& shape);  // broadcast to shape (NumPy rules)
Var concat(const std::vector<Var>& parts, int64_t axis);
Var slice(const Var& x, int64_t axis, int64_t start, int64_t end);
Var transpose(const Var& x, int64_t axis0, int64_t axis1);
// CSR over the rows of x (csr.num_rows output rows); the CSR is uploaded once and cached in it.
Var segment_mean(const Var& x, const Csr& csr);
Var segment_max(const Var& x, const Csr& csr);
Var rel_attention(const Var& q, const Var& k, const Var& v, const Var& rk, const Var& u,
                  const Var& vb, const RelAttentionDims& dims);
void accumulate(Tensor& dst, const Tensor& src);  // dst += src on the device
}  // namespace cuda_ops
#endif

template <typename T>
void require_defined(const char* op, const BasicVar<T>& v, const char* what) {
  if (!v.defined())
    throw std::invalid_argument(std::string("nn::") + op + ": " + what + " undefined");
}

inline int64_t normalize_axis(int64_t axis, int64_t rank, const char* op) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw std::out_of_range(std::string("nn::") + op + ": axis " + std::to_string(axis) +
                            " out of range for rank " + std::to_string(rank));
  return a;
}

// dst (contiguous) += src (same numel).
template <typename T>
void accumulate(BasicTensor<T>& dst, const BasicTensor<T>& src);

// Records fn on the current tape; fn runs only when the output got a gradient.
template <typename T, typename Fn>
void record(const BasicVar<T>& out, Fn&& fn) {
  NodePtr<T> o = out.node();
  BasicTape<T>::current().record([o, fn = std::forward<Fn>(fn)]() mutable {
    if (o->has_grad()) fn(o->grad);
  });
}

// Shape of concat(parts, axis) from the parts' shapes (CPU and CUDA paths share this); *ax gets
// the normalized axis. Throws std::invalid_argument naming the first mismatching shape.
inline Shape concat_shape(const std::vector<Shape>& shapes, int64_t axis, int64_t* ax) {
  const Shape& s0 = shapes.at(0);
  const int64_t r = static_cast<int64_t>(s0.size());
  *ax = normalize_axis(axis, r, "concat");
  Shape out = s0;
  out[*ax] = 0;
  for (const Shape& s : shapes) {
    bool ok = static_cast<int64_t>(s.size()) == r;
    for (int64_t i = 0; ok && i < r; ++i)
      if (i != *ax && s[i] != s0[i]) ok = false;
    if (!ok)
      throw std::invalid_argument("nn::concat: shape " + shape_str(s) + " does not match " +
                                  shape_str(s0) + " outside axis " + std::to_string(*ax));
    out[*ax] += s[*ax];
  }
  return out;
}

// Shapes of y = op(a) @ op(b) (CPU and CUDA paths share this): a (..., M, K) batched with b of
// equal rank, or a (..., K) times a 2-D b (leading dims of a flattened into M). Throws
// std::invalid_argument naming both shapes.
struct MatmulDims {
  int64_t batch = 1, M = 0, K = 0, P = 0;
  Shape out_shape;
};
inline MatmulDims matmul_dims(const Shape& as, const Shape& bs, bool trans_a, bool trans_b) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("nn::matmul: " + why + " (a " + shape_str(as) +
                                (trans_a ? "^T" : "") + ", b " + shape_str(bs) +
                                (trans_b ? "^T" : "") + ")");
  };
  if (as.size() < 2 && !(as.size() >= 1 && bs.size() == 2 && !trans_a)) fail("a needs rank >= 2");
  if (bs.size() < 2) fail("b needs rank >= 2");
  MatmulDims d;
  d.K = trans_b ? bs[bs.size() - 1] : bs[bs.size() - 2];
  d.P = trans_b ? bs[bs.size() - 2] : bs[bs.size() - 1];
  if (bs.size() == 2) {
    if (trans_a) {
      if (as.size() != 2) fail("trans_a with a 2-D b needs a 2-D a");
      if (as[0] != d.K) fail("inner dims differ");
      d.M = as[1];
      d.out_shape = {d.M, d.P};
    } else {
      if (as.back() != d.K) fail("inner dims differ");
      d.out_shape = Shape(as.begin(), as.end() - 1);
      d.M = shape_numel(d.out_shape);
      d.out_shape.push_back(d.P);
    }
  } else {
    if (as.size() != bs.size()) fail("batched matmul needs equal ranks");
    for (size_t i = 0; i + 2 < as.size(); ++i) {
      if (as[i] != bs[i]) fail("batch dims differ");
      d.batch *= as[i];
    }
    const int64_t ak = trans_a ? as[as.size() - 2] : as.back();
    if (ak != d.K) fail("inner dims differ");
    d.M = trans_a ? as.back() : as[as.size() - 2];
    d.out_shape = Shape(as.begin(), as.end() - 2);
    d.out_shape.push_back(d.M);
    d.out_shape.push_back(d.P);
  }
  return d;
}

}  // namespace gdp::nn::detail
