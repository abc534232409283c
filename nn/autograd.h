// Reverse-mode autograd on a tape (micrograd style): a Var is a value plus a lazily allocated
// gradient; each op records a closure that ACCUMULATES into its inputs' gradients; backward is a
// reverse sweep over the tape. See docs/nn.md for the semantics.
//
// Tape semantics:
//   - One tape per thread and scalar type (BasicTape<T>::current()). Ops record onto it only when
//     grad mode is on (no NoGradGuard alive) and at least one input requires_grad.
//   - backward(loss) seeds d loss = 1 (loss must have one element), runs every recorded closure
//     in reverse order, then clears the tape (the graph is used once, as in PyTorch).
//   - Gradients accumulate: call zero_grad (ParameterBuffer::zero_grad, or Var::zero_grad) between
//     steps. Parameters' grads are views into the ParameterBuffer's flat gradient array.
//   - A closure skips itself when its output received no gradient.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/tensor.h"

namespace gdp::nn {

template <typename T>
struct VarNode {
  BasicTensor<T> value;
  BasicTensor<T> grad;  // undefined until a gradient flows here (parameters: view, preallocated)
  bool requires_grad = false;
  std::string name;  // optional, for messages

  bool has_grad() const { return grad.defined(); }
  // The gradient buffer, allocated as zeros with value's shape on first use.
  BasicTensor<T>& grad_buffer();
};

template <typename T>
class BasicVar {
 public:
  BasicVar() = default;  // undefined
  explicit BasicVar(BasicTensor<T> value, bool requires_grad = false, std::string name = {});
  explicit BasicVar(std::shared_ptr<VarNode<T>> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const BasicTensor<T>& value() const { return node_->value; }
  BasicTensor<T>& value() { return node_->value; }
  const BasicTensor<T>& grad() const { return node_->grad; }  // may be undefined
  BasicTensor<T>& grad_buffer() { return node_->grad_buffer(); }
  bool requires_grad() const { return node_->requires_grad; }
  void set_requires_grad(bool on) { node_->requires_grad = on; }
  const std::string& name() const { return node_->name; }
  const Shape& shape() const { return node_->value.shape(); }
  int64_t dim(int64_t axis) const { return node_->value.dim(axis); }
  int64_t ndim() const { return node_->value.ndim(); }
  int64_t numel() const { return node_->value.numel(); }
  T item() const { return node_->value.item(); }
  void zero_grad();  // zeroes the gradient if allocated
  const std::shared_ptr<VarNode<T>>& node() const { return node_; }

 private:
  std::shared_ptr<VarNode<T>> node_;
};

using Var = BasicVar<float>;
using VarD = BasicVar<double>;

// Grad mode (thread-local, shared by all scalar types).
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

template <typename T>
class BasicTape {
 public:
  static BasicTape& current();  // thread-local

  void record(std::function<void()> backward_fn) { entries_.push_back(std::move(backward_fn)); }
  // Seeds d(loss) = 1 (loss.numel() == 1), sweeps the tape in reverse, then clears it unless
  // keep_tape (useful to inspect; a second sweep would accumulate twice).
  void backward(const BasicVar<T>& loss, bool keep_tape = false);
  // Same with an explicit seed gradient of loss's shape (vector-Jacobian product).
  void backward(const BasicVar<T>& out, const BasicTensor<T>& seed, bool keep_tape = false);
  void clear() { entries_.clear(); }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::function<void()>> entries_;
};

using Tape = BasicTape<float>;
using TapeD = BasicTape<double>;

// Convenience: BasicTape<T>::current().backward(loss).
template <typename T>
void backward(const BasicVar<T>& loss) {
  BasicTape<T>::current().backward(loss);
}

// True when an op with these inputs must record a closure.
template <typename T>
bool needs_grad(std::initializer_list<const BasicVar<T>*> inputs) {
  if (!grad_enabled()) return false;
  for (const auto* v : inputs)
    if (v->defined() && v->requires_grad()) return true;
  return false;
}

// A result Var of an op: requires_grad when any input does (and grad mode is on).
template <typename T>
BasicVar<T> make_result(BasicTensor<T> value, bool requires_grad) {
  return BasicVar<T>(std::move(value), requires_grad);
}

}  // namespace gdp::nn
