// HDP (Mirhoseini et al. 2018) as the project sees it: the place method "hdp"
// (rl/hdp/method.cpp) and the learner of `gdp train --method hdp` (rl/hdp/learner.cpp).
#pragma once

#include "place/registry.h"
#include "rl/run/registry.h"

namespace gdp::rl {

place::MethodInfo hdp_method();
LearnerMethod hdp_learner();
// Registers the place method (rl/methods.cpp).
inline void hdp_places(place::Registry& r) { r.add(hdp_method()); }

}  // namespace gdp::rl
