// Optimizers over the flat ParameterBuffer: Adam / AdamW (one loop over the flat arrays) and
// learning-rate schedules. Gradient-norm clipping is clip_grad_norm in nn/parameters.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/parameters.h"

namespace gdp::nn {

struct AdamConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = true;  // true: AdamW (decay applied to the weights); false: L2 added to grads
};

template <typename T>
class BasicAdam {
 public:
  BasicAdam(BasicParameterBuffer<T>& params, AdamConfig config);

  // One update with the buffer's current gradients; lr < 0 uses config().lr.
  void step(double lr = -1.0);
  int64_t steps() const { return t_; }
  const AdamConfig& config() const { return config_; }
  BasicParameterBuffer<T>& params() { return params_; }

  // State (for checkpoints): the first and second moments, one per parameter element, copied to
  // the host (empty before the first step).
  std::vector<T> m() const;
  std::vector<T> v() const;
  // Replaces the state: moments of params().size() elements each (or both empty: fresh zero
  // moments) and the step count. The moments follow the parameters to their device.
  void set_state(std::vector<T> m, std::vector<T> v, int64_t steps);

 private:
  BasicParameterBuffer<T>& params_;
  AdamConfig config_;
  BasicTensor<T> m_, v_;  // on the parameters' device; undefined until the first step
  int64_t t_ = 0;
};

using Adam = BasicAdam<float>;
using AdamD = BasicAdam<double>;

// Learning rate as a function of the 0-based step. kind: "constant", "linear_warmup_cosine"
// (linear from 0 to base over warmup_steps, then cosine down to min_lr at total_steps), "step"
// (multiply by gamma every step_size steps), "linear_warmup_linear_decay".
struct LrSchedule {
  std::string kind = "constant";
  double base_lr = 1e-3;
  double min_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  int64_t step_size = 1;
  double gamma = 1.0;

  double lr_at(int64_t step) const;  // throws on an unknown kind, listing the known ones
};

}  // namespace gdp::nn
