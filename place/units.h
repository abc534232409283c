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
  // The same into p, reusing its storage (a search's hot loop).
  void expand_into(const std::vector<int32_t>& unit_device, Placement& p) const;
};

// Anchored labels (a policy on interchangeable devices, rl/gdp/policy.h, and the annealer's
// guide): label 0 means "unit 0's device". The one home of that relabeling: device d seen from
// an anchor on device a exchanges a and 0 (its own inverse).
inline int32_t anchored_label(int32_t d, int32_t a) { return d == a ? 0 : d == 0 ? a : d; }
// Relabels unit devices in place so that unit 0 is on label 0 (nothing when empty).
inline void anchor_labels(std::vector<int32_t>& unit_device) {
  if (unit_device.empty() || unit_device[0] == 0) return;
  const int32_t a = unit_device[0];
  for (int32_t& d : unit_device) d = anchored_label(d, a);
}

// The units joined to each unit by a data edge (either direction), CSR, sorted, deduplicated.
// Searches use it for neighbour moves (anneal; the GDP trainer's boundary moves).
struct UnitAdjacency {
  std::vector<int64_t> ptr;        // (U + 1)
  std::vector<int32_t> neighbour;  // neighbours of unit u: [ptr[u], ptr[u + 1])
};
UnitAdjacency unit_adjacency(const Graph& g, const Units& units);

// Name-scope prefixes of the units: each unit's first op's scope cut after each '/' component
// ("enc/l1/fw" gives "enc", "enc/l1", "enc/l1/fw"), numbered in order of first appearance.
// Searches move a whole scope (a layer, a time step) at once.
struct UnitScopes {
  std::vector<std::vector<int32_t>> of_unit;  // (U) scope ids, outermost first
  std::vector<std::vector<int32_t>> units;    // (scopes) the units under each scope
};
UnitScopes unit_scopes(const Graph& g, const Units& units);

// Moves every op of a colocation group to the device of the group's topologically first op.
void enforce_colocation(const Graph& g, Placement& p);

}  // namespace gdp::place
