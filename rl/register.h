// The placement methods rl/ brings to the place/ registry: "gdp" (rl/gdp_method.cpp). A
// program calls this once at start (cli/main.cpp), after which every name-based entry point
// (gdp place, compare, the evaluator) reaches the method.
#pragma once

#include "place/registry.h"

namespace gdp::rl {

void register_methods(place::Registry& r);

}  // namespace gdp::rl
