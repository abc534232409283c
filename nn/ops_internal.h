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

#include "nn/autograd.h"
#include "nn/tensor.h"

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
// The cuda paths of the ported ops (nn/ops_cuda.cpp), float only. Each checks that all inputs
// are cuda tensors and throws std::runtime_error naming the op for what it does not support.
namespace cuda_ops {
Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b);
Var linear(const Var& x, const Var& w, const Var& bias);
Var binary(const char* op, const Var& a, const Var& b);  // add, sub, mul, div
Var unary(const char* op, const Var& x);  // relu, gelu, tanh, sigmoid, exp, log
Var row_op(const char* op, const Var& x);  // softmax, log_softmax
Var layer_norm(const Var& x, const Var& weight, const Var& bias, float eps);
Var sum_axis(const char* op, const Var& x, int64_t axis, bool keepdim, bool is_mean);  // last axis
Var sum_all(const char* op, const Var& x, bool is_mean);
Var gather(const char* op, const Var& x, const std::vector<int64_t>& index);  // gather_rows, embedding
Var scatter_add_rows(const Var& src, const std::vector<int64_t>& index, int64_t num_rows);
// CSR over the rows of x (R = row_ptr.size() - 1 output rows).
Var segment_mean(const Var& x, const std::vector<int32_t>& row_ptr, const std::vector<int32_t>& col_idx);
Var segment_max(const Var& x, const std::vector<int32_t>& row_ptr, const std::vector<int32_t>& col_idx);
void accumulate(Tensor& dst, const Tensor& src);  // dst += src on the device
}  // namespace cuda_ops
#endif

template <typename T>
void require_defined(const char* op, const BasicVar<T>& v, const char* what) {
  if (!v.defined()) throw std::invalid_argument(std::string("nn::") + op + ": " + what + " undefined");
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

}  // namespace gdp::nn::detail
