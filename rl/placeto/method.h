// Placeto (Addanki et al. 2019) as the project sees it: the place method "placeto"
// (rl/placeto/method.cpp) and the learner of `gdp train --method placeto`
// (rl/placeto/learner.cpp): one policy across graphs (Placeto is inductive); an iteration is
// one training episode on every graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "place/registry.h"
#include "rl/placeto/placeto.h"
#include "rl/run/registry.h"

namespace gdp::rl {

place::MethodInfo placeto_method();
LearnerMethod placeto_learner();
// Registers the place method (rl/methods.cpp).
inline void placeto_places(place::Registry& r) { r.add(placeto_method()); }

// The policy of a Placeto training DIR (`gdp train --method placeto`), for zero-shot placement;
// *config gets its training configuration.
std::unique_ptr<placeto::PlacetoPolicy> load_placeto_policy(const std::string& dir,
                                                            placeto::TrainConfig* config);
// The device slots a Placeto policy needs for these graphs: config.max_devices, else the
// largest cluster's device count.
int32_t placeto_slots(const placeto::TrainConfig& config, const std::vector<TrainGraph>& graphs);

}  // namespace gdp::rl
