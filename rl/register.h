// The placement methods rl/ brings to the place/ registry: "gdp" (rl/gdp/method.cpp), "gdp-anneal"
// (rl/gdp/guided.cpp), and the learned baselines "hdp" and "placeto". A
// program calls this once at start (cli/main.cpp), after which every name-based entry point
// (gdp place, compare, the evaluator) reaches the method.
#pragma once

#include "place/registry.h"

namespace gdp::rl {

void register_methods(place::Registry& r);

// The learned baselines, trained against the same simulator (docs/baselines.md).
place::MethodInfo hdp_method();      // rl/hdp/method.cpp: Mirhoseini et al. 2018
place::MethodInfo placeto_method();  // rl/placeto/method.cpp: Addanki et al. 2019
// "gdp-anneal": annealing guided by a GDP policy (rl/gdp/guided.cpp).
void register_guided_methods(place::Registry& r);

}  // namespace gdp::rl
