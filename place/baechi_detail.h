// Baechi's placers' small shared pieces, for place/baechi_*.cpp only (the interface is
// place/baechi.h).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace gdp::place::baechi::detail {

inline constexpr int32_t kNone = -1;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline int64_t saturating_add(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

}  // namespace gdp::place::baechi::detail
