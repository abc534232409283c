// The flat parameter buffer: one growable value storage and one gradient storage; parameters
// are views (offset + shape) into both.
#include "nn/parameters.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace gdp::nn {

template <typename T>
BasicParameterBuffer<T>::BasicParameterBuffer()
    : values_(std::make_shared<Storage<T>>(0)), grads_(std::make_shared<Storage<T>>(0)) {}

template <typename T>
BasicVar<T> BasicParameterBuffer<T>::add(const std::string& name, const Shape& shape) {
  if (device() != Device::cpu)
    throw std::runtime_error("ParameterBuffer::add('" + name + "'): the buffer is on " +
                             device_name(device()) + "; add parameters before to_device");
  if (name.empty()) throw std::invalid_argument("ParameterBuffer::add: empty name");
  if (find(name))
    throw std::invalid_argument("ParameterBuffer::add: duplicate name '" + name + "'");
  const int64_t n = shape_numel(shape);
  const int64_t offset = size_;
  // Grow geometrically; views hold the Storage, so earlier parameters stay valid.
  if (offset + n > values_->size()) {
    const int64_t cap = std::max(offset + n, values_->size() * 2);
    values_->grow(cap);
    grads_->grow(cap);
  }
  size_ += n;
  auto node = std::make_shared<VarNode<T>>();
  node->value = BasicTensor<T>(values_, offset, shape, contiguous_strides(shape));
  node->grad = BasicTensor<T>(grads_, offset, shape, contiguous_strides(shape));
  node->requires_grad = true;
  node->name = name;
  BasicVar<T> var(node);
  entries_.push_back(Entry{name, shape, offset, var});
  return var;
}

template <typename T>
BasicVar<T> BasicParameterBuffer<T>::add_uniform(const std::string& name, const Shape& shape,
                                                 double bound, Rng& rng) {
  BasicVar<T> v = add(name, shape);
  for (int64_t i = 0; i < v.numel(); ++i) v.value()[i] = static_cast<T>(rng.uniform(-bound, bound));
  return v;
}

template <typename T>
BasicVar<T> BasicParameterBuffer<T>::add_normal(const std::string& name, const Shape& shape,
                                                double stddev, Rng& rng) {
  BasicVar<T> v = add(name, shape);
  for (int64_t i = 0; i < v.numel(); ++i) v.value()[i] = static_cast<T>(rng.normal(0.0, stddev));
  return v;
}

template <typename T>
BasicVar<T> BasicParameterBuffer<T>::add_constant(const std::string& name, const Shape& shape,
                                                  T value) {
  BasicVar<T> v = add(name, shape);
  v.value().fill(value);
  return v;
}

template <typename T>
const typename BasicParameterBuffer<T>::Entry* BasicParameterBuffer<T>::find(
    const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

template <typename T>
BasicVar<T> BasicParameterBuffer<T>::get(const std::string& name) const {
  if (const Entry* e = find(name)) return e->var;
  std::ostringstream os;
  os << "ParameterBuffer: no parameter '" << name << "'; known:";
  for (const auto& e : entries_) os << ' ' << e.name;
  throw std::out_of_range(os.str());
}

template <typename T>
BasicTensor<T> BasicParameterBuffer<T>::values() const {
  return BasicTensor<T>(values_, 0, {size_}, {1});
}

template <typename T>
BasicTensor<T> BasicParameterBuffer<T>::grads() const {
  return BasicTensor<T>(grads_, 0, {size_}, {1});
}

template <typename T>
void BasicParameterBuffer<T>::zero_grad() {
  grads().zero();
}

template <typename T>
void BasicParameterBuffer<T>::to_device(Device target) {
  if (target == device()) return;
  auto move = [&](const std::shared_ptr<Storage<T>>& from) {
    auto to = std::make_shared<Storage<T>>(size_, target, false);
    BasicTensor<T> dst(to, 0, {size_}, {1});
    if (size_ > 0) dst.copy_from(BasicTensor<T>(from, 0, {size_}, {1}));
    return to;
  };
  std::shared_ptr<Storage<T>> values = move(values_), grads = move(grads_);
  values_ = std::move(values);
  grads_ = std::move(grads);
  for (auto& e : entries_) {
    VarNode<T>& node = *e.var.node();
    node.value = BasicTensor<T>(values_, e.offset, e.shape, contiguous_strides(e.shape));
    node.grad = BasicTensor<T>(grads_, e.offset, e.shape, contiguous_strides(e.shape));
  }
}

template <typename T>
double BasicParameterBuffer<T>::grad_norm() const {
  if (device() != Device::cpu) {
#ifdef GDP_HAVE_CUDA
    if constexpr (std::is_same_v<T, float>) {  // squares, then one device sum (float accumulation)
      const auto n = static_cast<std::size_t>(size_);
      if (n == 0) return 0.0;
      gdp::cuda::DeviceBuffer squares(n), total(1);
      gdp::cuda::map_forward(squares.data(), grads_->data(), gdp::cuda::MapOp::square, 0.0f, 0.0f,
                             n);
      gdp::cuda::sum_all_forward(total.data(), squares.data(), n);
      float s = 0.0f;
      total.download(&s);
      return std::sqrt(static_cast<double>(s));
    }
#endif
    throw std::runtime_error("ParameterBuffer::grad_norm: no backend for device " +
                             std::string(device_name(device())));
  }
  const T* g = grads_->data();
  double s = 0.0;
  for (int64_t i = 0; i < size_; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return std::sqrt(s);
}

template <typename T>
double clip_grad_norm(BasicParameterBuffer<T>& params, double max_norm) {
  if (!(max_norm > 0.0)) throw std::invalid_argument("clip_grad_norm: max_norm must be > 0");
  const double norm = params.grad_norm();
  if (norm > max_norm) {
    const T factor = static_cast<T>(max_norm / (norm + 1e-6));
    BasicTensor<T> g = params.grads();
    if (g.device() == Device::cpu) {
      g.vec() *= factor;
    } else {
#ifdef GDP_HAVE_CUDA
      if constexpr (std::is_same_v<T, float>)
        gdp::cuda::scale_forward(g.data(), g.data(), factor, static_cast<std::size_t>(g.numel()));
#endif
    }
  }
  return norm;
}

template class BasicParameterBuffer<float>;
template class BasicParameterBuffer<double>;
template double clip_grad_norm(BasicParameterBuffer<float>&, double);
template double clip_grad_norm(BasicParameterBuffer<double>&, double);

}  // namespace gdp::nn
