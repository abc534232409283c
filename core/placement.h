// A placement: the device of every op (dense op index -> device index).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gdp {

class Graph;

struct Placement {
  std::vector<int32_t> device;  // (num_ops) device index per op
};

Placement place_single(const Graph& g, int32_t device = 0);
// Ops in topological order dealt to devices in contiguous chunks of equal op count would be
// "balanced"; round-robin deals op i (topological position) to device i % D, keeping
// colocation groups together (a group goes where its first op goes).
Placement place_round_robin(const Graph& g, int32_t num_devices);
// Moves every op of a colocation group to the device of the group's first op (topological).
void enforce_colocation(const Graph& g, Placement& p);

}  // namespace gdp
