// Helpers shared by the ops_*.cpp files (not part of the public API): the device dispatch check,
// axis normalization, gradient accumulation and the tape-recording boilerplate.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>

#include "nn/autograd.h"
#include "nn/tensor.h"

namespace gdp::nn::detail {

template <typename T>
using NodePtr = std::shared_ptr<VarNode<T>>;

// The single device dispatch point of every op: today only the CPU kernels exist.
template <typename T>
void require_cpu(const char* op, std::initializer_list<const BasicVar<T>*> inputs) {
  for (const auto* v : inputs) {
    if (!v->defined()) continue;
    if (v->value().device() != Device::cpu)
      throw std::runtime_error(std::string("nn::") + op + ": no " +
                               device_name(v->value().device()) + " backend for this op");
  }
}

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
