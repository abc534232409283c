// A placement: the device of every op (dense op index -> device index). The methods that
// compute placements live in place/.
#pragma once

#include <cstdint>
#include <vector>

namespace gdp {

struct Placement {
  std::vector<int32_t> device;  // (num_ops) device index per op
};

}  // namespace gdp
