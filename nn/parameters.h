// The flat parameter buffer (llm.c style): all parameters of a model live in one contiguous
// value array and one contiguous gradient array; each parameter is a Var whose value and grad are
// views into them. Adam, clipping, zeroing and checkpoints are then one loop over the arrays.
#pragma once

#include <string>
#include <vector>

#include "nn/autograd.h"
#include "nn/rng.h"
#include "nn/tensor.h"

namespace gdp::nn {

template <typename T>
class BasicParameterBuffer {
 public:
  struct Entry {
    std::string name;
    Shape shape;
    int64_t offset = 0;  // into values()/grads(), in elements
    BasicVar<T> var;     // requires_grad, value/grad are views
  };

  BasicParameterBuffer();

  // Registers a zero-initialized parameter. Names must be unique (modules prefix them, e.g.
  // "sage0.w_self"). The buffer grows as parameters are added; earlier Vars stay valid.
  BasicVar<T> add(const std::string& name, const Shape& shape);
  // Same, initialized uniform in [-bound, bound] from rng.
  BasicVar<T> add_uniform(const std::string& name, const Shape& shape, double bound, Rng& rng);
  // Same, initialized normal(0, stddev) from rng.
  BasicVar<T> add_normal(const std::string& name, const Shape& shape, double stddev, Rng& rng);
  // Same, filled with a constant (e.g. layer-norm weight = 1).
  BasicVar<T> add_constant(const std::string& name, const Shape& shape, T value);

  int64_t size() const { return size_; }  // total elements
  int64_t count() const { return static_cast<int64_t>(entries_.size()); }
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(const std::string& name) const;  // null when absent
  BasicVar<T> get(const std::string& name) const;    // throws with the known names when absent

  // Flat views (size()) of all values and all gradients.
  BasicTensor<T> values() const;
  BasicTensor<T> grads() const;
  void zero_grad();
  double grad_norm() const;  // L2 norm of all gradients (accumulated in double on the cpu)

  // Moves values and gradients to `device` (cuda: float, builds with CUDA); every parameter Var,
  // wherever it is held (modules keep copies), then refers to the new storage, so a model built
  // on the cpu runs on the device after this one call. Parameters cannot be added afterwards
  // while on the device (the buffer grows on the cpu only). Same device: nothing happens.
  void to_device(Device device);
  Device device() const { return values_->device(); }

 private:
  std::shared_ptr<Storage<T>> values_;
  std::shared_ptr<Storage<T>> grads_;
  int64_t size_ = 0;
  std::vector<Entry> entries_;
};

using ParameterBuffer = BasicParameterBuffer<float>;
using ParameterBufferD = BasicParameterBuffer<double>;

// Scales all gradients so that their global L2 norm is at most max_norm; returns the norm before
// clipping (as torch.nn.utils.clip_grad_norm_).
template <typename T>
double clip_grad_norm(BasicParameterBuffer<T>& params, double max_norm);

}  // namespace gdp::nn
