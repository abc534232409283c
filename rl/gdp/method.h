// GDP as the project sees it: the place methods "gdp" (zero-shot, fine-tuning, GDP-one:
// rl/gdp/method.cpp) and "gdp-anneal" (annealing guided by the policy: rl/gdp/guided.cpp), and
// the learner of `gdp train` (rl/gdp/load.cpp).
#pragma once

#include "place/registry.h"
#include "rl/run/registry.h"

namespace gdp::rl {

// Registers "gdp" and "gdp-anneal" (rl/methods.cpp).
void gdp_places(place::Registry& r);
// "gdp-anneal" alone (rl/gdp/guided.cpp).
place::MethodInfo gdp_anneal_method();
// The learner of `gdp train` (rl/gdp/learner.cpp): PPO over a TrainConfig (rl/gdp/config.h).
LearnerMethod gdp_learner();

}  // namespace gdp::rl
