// Memory repair: turns a placement that runs out of memory into one that fits by moving few
// colocation units, so that a method whose raw output ignores capacity (a policy's decode, a
// stage cut) still returns a valid placement where one is easy to find. Each round simulates
// once, takes the most over-full device, and moves units off the end of its span along `key`
// (a stage coordinate: the units nearest the neighbouring stage) to the device with the most
// free memory, until the estimated bytes moved cover the excess. Never changes a placement
// that is valid or invalid for another reason.
#pragma once

#include <cstdint>
#include <vector>

#include "core/placement.h"
#include "place/problem.h"

namespace gdp::place {

struct RepairResult {
  Placement placement;    // valid when `valid`; otherwise the input
  bool valid = false;     // the result fits (by the simulator)
  bool changed = false;   // units were moved
  int32_t moved_ops = 0;  // ops whose device changed
  int32_t simulations = 0;
};

// key (N): the order of the ops along the model (place/stages.h); units are ordered by the
// mean key of their ops. Simulates at most max_rounds + 1 times (counted in `simulations`).
RepairResult repair_memory(const Problem& problem, const Placement& p,
                           const std::vector<double>& key, int32_t max_rounds = 24);

}  // namespace gdp::place
