// nn draws its random numbers (init, dropout, sampling) from the project's one seeded
// stream, core/rng.h.
#pragma once

#include "core/rng.h"

namespace gdp::nn {

using gdp::Rng;

}  // namespace gdp::nn
