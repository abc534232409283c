// Adam / AdamW over the flat parameter arrays (one kernel call per step) and the learning-rate
// schedules.
#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "nn/kernels.h"
#ifdef GDP_HAVE_CUDA
#include "cuda/kernels.h"
#endif

namespace gdp::nn {

template <typename T>
BasicAdam<T>::BasicAdam(BasicParameterBuffer<T>& params, AdamConfig config)
    : params_(params), config_(config) {
  if (!(config.lr >= 0.0) || !(config.beta1 >= 0.0 && config.beta1 < 1.0) ||
      !(config.beta2 >= 0.0 && config.beta2 < 1.0) || !(config.eps > 0.0) ||
      !(config.weight_decay >= 0.0))
    throw std::invalid_argument(
        "Adam: need lr >= 0, beta1 and beta2 in [0, 1), eps > 0, weight_decay >= 0");
}

namespace {
// t resized to n elements on device (new elements zero, old ones kept).
template <typename T>
BasicTensor<T> fit(const BasicTensor<T>& t, int64_t n, Device device) {
  const int64_t old = t.defined() ? t.numel() : 0;
  if (old == n && t.device() == device) return t;
  std::vector<T> host(static_cast<size_t>(n), T(0));
  if (old > 0) {
    const std::vector<T> prev = t.to_vector();
    std::copy(prev.begin(), prev.begin() + std::min(old, n), host.begin());
  }
  return BasicTensor<T>::from_vector({n}, host).to_device(device);
}
}  // namespace

template <typename T>
void BasicAdam<T>::step(double lr) {
  const int64_t n = params_.size();
  const Device device = params_.device();
  bool backend = device == Device::cpu;
#ifdef GDP_HAVE_CUDA
  backend = backend || (device == Device::cuda && std::is_same_v<T, float>);
#endif
  if (!backend)
    throw std::runtime_error(std::string("Adam: no backend for device ") + device_name(device));
  // Parameters added after construction get fresh (zero) moments; the moments follow the
  // parameters' device.
  m_ = fit(m_, n, device);
  v_ = fit(v_, n, device);
  ++t_;
  const double use_lr = lr < 0.0 ? config_.lr : lr;
  if (device == Device::cpu) {
    adam_update(params_.values().data(), m_.data(), v_.data(), params_.grads().data(), n,
                static_cast<T>(use_lr), static_cast<T>(config_.beta1),
                static_cast<T>(config_.beta2), static_cast<T>(config_.eps),
                static_cast<T>(config_.weight_decay), config_.decoupled, t_);
    return;
  }
#ifdef GDP_HAVE_CUDA
  if constexpr (std::is_same_v<T, float>) {
    gdp::cuda::adam_update(params_.values().data(), m_.data(), v_.data(), params_.grads().data(),
                           static_cast<std::size_t>(n), static_cast<float>(use_lr),
                           static_cast<float>(config_.beta1), static_cast<float>(config_.beta2),
                           static_cast<float>(config_.eps),
                           static_cast<float>(config_.weight_decay), config_.decoupled, t_);
  }
#endif
}

template <typename T>
std::vector<T> BasicAdam<T>::m() const {
  return m_.defined() ? m_.to_vector() : std::vector<T>();
}

template <typename T>
std::vector<T> BasicAdam<T>::v() const {
  return v_.defined() ? v_.to_vector() : std::vector<T>();
}

template <typename T>
void BasicAdam<T>::set_state(std::vector<T> m, std::vector<T> v, int64_t steps) {
  const int64_t n = params_.size();
  if (steps < 0) throw std::invalid_argument("Adam::set_state: negative step count");
  if (m.empty() && v.empty()) {
    m_ = BasicTensor<T>();
    v_ = BasicTensor<T>();
  } else {
    if (static_cast<int64_t>(m.size()) != n || static_cast<int64_t>(v.size()) != n)
      throw std::invalid_argument("Adam::set_state: moments of " + std::to_string(m.size()) +
                                  " and " + std::to_string(v.size()) + " elements for " +
                                  std::to_string(n) + " parameters");
    m_ = BasicTensor<T>::from_vector({n}, m).to_device(params_.device());
    v_ = BasicTensor<T>::from_vector({n}, v).to_device(params_.device());
  }
  t_ = steps;
}

double LrSchedule::lr_at(int64_t step) const {
  constexpr double kPi = 3.14159265358979323846;
  if (kind == "constant") return base_lr;
  if (kind == "step") {
    if (step_size <= 0) throw std::invalid_argument("LrSchedule step: step_size must be > 0");
    return base_lr * std::pow(gamma, static_cast<double>(step / step_size));
  }
  const bool cosine = kind == "linear_warmup_cosine";
  if (cosine || kind == "linear_warmup_linear_decay") {
    if (warmup_steps > 0 && step < warmup_steps)
      return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
    const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps);
    const double progress =
        std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps));
    const double shape = cosine ? 0.5 * (1.0 + std::cos(kPi * progress)) : 1.0 - progress;
    return min_lr + (base_lr - min_lr) * shape;
  }
  throw std::invalid_argument("LrSchedule: unknown kind '" + kind +
                              "'; known: constant, step, linear_warmup_cosine, "
                              "linear_warmup_linear_decay");
}

template class BasicAdam<float>;
template class BasicAdam<double>;

}  // namespace gdp::nn
