// The built-in methods' registrations (one file each); place/builtin.cpp adds them.
#pragma once

#include "place/registry.h"

namespace gdp::place {

MethodInfo single_method();       // place/single.cpp
MethodInfo round_robin_method();  // place/round_robin.cpp
MethodInfo human_method();        // place/human.cpp
MethodInfo random_method();       // place/random.cpp

}  // namespace gdp::place
