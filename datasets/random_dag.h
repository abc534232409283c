// Seeded random layered DAGs of generic ops for the simulator's invariant tests and its
// benchmark (no training structure: see random_families.h for those): the same seed gives the
// same graph on every platform (core/rng.h).
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/placement.h"

namespace gdp::datasets {

struct RandomGraphSpec {
  int32_t num_ops = 1000;
  double edges_per_op = 2.0;    // average in-degree of ops past the first layer
  int32_t layer_width = 32;     // ops per layer
  int32_t lookback_layers = 3;  // inputs come from the previous few layers
  double param_fraction = 0.1;  // share of ops holding parameters
  uint64_t seed = 1;
};

// Ops of mixed types (MatMul, Conv2D, Add, Relu, Sum, Reshape) with random flops, bytes and
// one output each; finalized.
Graph make_random_layered_graph(const RandomGraphSpec& spec);
// A uniformly random device per op.
Placement random_placement(const Graph& g, int32_t num_devices, uint64_t seed);

}  // namespace gdp::datasets
