// Rewards from simulated step times (see reward.h).
#include "rl/run/reward.h"

#include <stdexcept>
#include <string>

namespace gdp::rl {

double reward_of(double step_s, double reference_s, const RewardConfig& c) {
  if (!(reference_s > 0) || !std::isfinite(reference_s))
    throw std::invalid_argument(
        "reward: the reference step time must be positive and finite, got " +
        std::to_string(reference_s));
  if (!std::isfinite(step_s)) return c.invalid_penalty;
  return -std::sqrt(step_s / reference_s);
}

std::vector<double> rewards_of(const std::vector<double>& step_s, double reference_s,
                               const RewardConfig& c) {
  std::vector<double> r(step_s.size());
  for (size_t k = 0; k < step_s.size(); ++k) r[k] = reward_of(step_s[k], reference_s, c);
  return r;
}

}  // namespace gdp::rl
