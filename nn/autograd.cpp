// The tape, grad mode and Var basics (semantics in nn/autograd.h and docs/nn.md).
#include "nn/autograd.h"

#include <stdexcept>

#include "nn/ops_internal.h"

namespace gdp::nn {

namespace {
thread_local bool t_grad_enabled = true;
}

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

template <typename T>
BasicTensor<T>& VarNode<T>::grad_buffer() {
  if (!grad.defined()) grad = BasicTensor<T>(value.shape(), value.device());
  return grad;
}

template <typename T>
BasicVar<T>::BasicVar(BasicTensor<T> value, bool requires_grad, std::string name)
    : node_(std::make_shared<VarNode<T>>()) {
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
  node_->name = std::move(name);
}

template <typename T>
void BasicVar<T>::zero_grad() {
  if (node_ && node_->grad.defined()) node_->grad.zero();
}

template <typename T>
BasicTape<T>& BasicTape<T>::current() {
  thread_local BasicTape<T> tape;
  return tape;
}

template <typename T>
void BasicTape<T>::backward(const BasicVar<T>& loss, bool keep_tape) {
  if (!loss.defined()) throw std::invalid_argument("Tape::backward: undefined loss");
  if (loss.numel() != 1)
    throw std::invalid_argument("Tape::backward: loss must have one element, got shape " +
                                shape_str(loss.shape()) + " (use the seed overload)");
  backward(loss, BasicTensor<T>::full(loss.shape(), T(1)), keep_tape);
}

template <typename T>
void BasicTape<T>::backward(const BasicVar<T>& out, const BasicTensor<T>& seed, bool keep_tape) {
  if (seed.shape() != out.shape())
    throw std::invalid_argument("Tape::backward: seed shape " + shape_str(seed.shape()) +
                                " != output shape " + shape_str(out.shape()));
  if (!out.requires_grad()) {
    if (!keep_tape) clear();
    return;  // nothing upstream needs a gradient
  }
  VarNode<T>& node = *out.node();
  const Device device = out.value().device();
  if (device != Device::cpu) {
    // Device outputs (cuda): the seed is copied over, accumulation is an add on the device.
    const BasicTensor<T> s = seed.device() == device ? seed.clone() : seed.to_device(device);
    if (!node.grad.defined())
      node.grad = s;
    else
      detail::accumulate(node.grad, s);
  } else if (!node.grad.defined()) {
    node.grad = seed.clone();
  } else {
    const BasicTensor<T> s = seed.contiguous();
    node.grad.vec() += s.vec();
  }
  {
    // Closures never record (ops used inside them must not grow the tape being swept).
    NoGradGuard no_grad;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) (*it)();
  }
  if (!keep_tape) clear();
}

template struct VarNode<float>;
template struct VarNode<double>;
template class BasicVar<float>;
template class BasicVar<double>;
template class BasicTape<float>;
template class BasicTape<double>;

}  // namespace gdp::nn
