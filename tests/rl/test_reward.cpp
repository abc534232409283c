// Rewards: -sqrt(step / reference), the invalid penalty, a bad reference rejected.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "rl/run/reward.h"

using namespace gdp::rl;

TEST_CASE("rl/reward is -sqrt(step / reference), invalid placements get the penalty", "[rl]") {
  CHECK(reward_of(4.0, 1.0) == -2.0);
  CHECK(reward_of(1.0, 4.0) == -0.5);
  CHECK(reward_of(std::numeric_limits<double>::infinity(), 1.0) == RewardConfig{}.invalid_penalty);
  RewardConfig c;
  c.invalid_penalty = -3;
  const auto r = rewards_of({1.0, INFINITY, 0.25}, 1.0, c);
  CHECK(r == std::vector<double>{-1.0, -3.0, -0.5});
  CHECK_THROWS_AS(reward_of(1.0, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(reward_of(1.0, INFINITY), std::invalid_argument);
}
