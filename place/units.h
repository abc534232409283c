// Placement units: the ops that must take one decision together. An op without a
// colocation group is a unit of its own; the ops of a group form one unit. Searches
// (random, anneal, exhaustive) and the policies choose a device per unit, so every
// placement they produce keeps the groups together.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/placement.h"

namespace gdp::place {

struct Units {
  std::vector<int32_t> unit_of;   // (num_ops) unit of each op
  std::vector<int32_t> first_op;  // (num_units) topologically first op of each unit
  int32_t num_units() const { return static_cast<int32_t>(first_op.size()); }
  // Units numbered in the topological order of their first op.
  static Units colocation(const Graph& g);
  // The placement that puts every op on its unit's device ((num_units) unit_device).
  Placement expand(const std::vector<int32_t>& unit_device) const;
};

// Moves every op of a colocation group to the device of the group's topologically first op.
void enforce_colocation(const Graph& g, Placement& p);

}  // namespace gdp::place
