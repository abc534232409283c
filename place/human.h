// Human-expert placements: what a practitioner writes by hand for a model on D GPUs
// (docs/workloads.md, "Human-expert placements"): layers or stacks dealt over the GPUs in
// contiguous blocks, embeddings and softmax beside their neighbouring layer, gradients and
// updates with their forward op; CNNs on one GPU, or split into stages when they do not fit.
#pragma once

#include <string>

#include "core/placement.h"
#include "place/run.h"

namespace gdp::place {

struct HumanPlacementInfo {
  std::string strategy;  // "layers" (units dealt over devices), "single", "stages"
  int32_t units = 0;     // layers/stacks found in the scopes (strategy "layers")
  int32_t devices_used = 0;
};

// Placement for any graph (from the generators or imported). Units are the scope components
// "layer_<k>" / "stack_<k>" / "cell_<k>"; encoder and decoder layer k share a device. Graphs
// without units go on one device when the problem's simulator (the caller's cost model) finds
// that it fits in memory, else are cut into contiguous stages (topological order of the
// forward ops, balanced by flops). The memory checks are counted as samples of `run`.
Placement human_placement(Run& run, HumanPlacementInfo* info = nullptr);

}  // namespace gdp::place
