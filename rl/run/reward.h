// The reward of a simulated placement (GDP, as in the public reproduction): the negative
// square root of the step time relative to a reference step time (the human placement, or
// single where human is invalid), and a fixed penalty for an invalid placement (out of memory,
// split colocation group). sqrt compresses the range so that very slow samples do not dominate
// the advantages.
#pragma once

#include <cmath>
#include <vector>

namespace gdp::rl {

struct RewardConfig {
  double invalid_penalty = -10.0;  // reward of an invalid placement (step time +inf)
};

// reward = -sqrt(step_s / reference_s); invalid (non-finite step_s) -> invalid_penalty.
// reference_s must be positive and finite.
double reward_of(double step_s, double reference_s, const RewardConfig& c = {});
std::vector<double> rewards_of(const std::vector<double>& step_s, double reference_s,
                               const RewardConfig& c = {});

}  // namespace gdp::rl
