// Adam / AdamW over the flat parameter arrays (one kernel call per step) and the learning-rate
// schedules.
#include "nn/optim.h"

#include <cmath>
#include <stdexcept>

#include "nn/kernels.h"

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

template <typename T>
void BasicAdam<T>::step(double lr) {
  const int64_t n = params_.size();
  // Parameters added after construction get fresh (zero) moments.
  if (static_cast<int64_t>(m_.size()) != n) {
    m_.resize(n, T(0));
    v_.resize(n, T(0));
  }
  ++t_;
  const double use_lr = lr < 0.0 ? config_.lr : lr;
  adam_update(params_.values().data(), m_.data(), v_.data(), params_.grads().data(), n,
              static_cast<T>(use_lr), static_cast<T>(config_.beta1), static_cast<T>(config_.beta2),
              static_cast<T>(config_.eps), static_cast<T>(config_.weight_decay), config_.decoupled,
              t_);
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
