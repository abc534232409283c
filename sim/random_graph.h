// Seeded random layered DAGs for the simulator's invariant tests and its benchmark: the same
// seed gives the same graph on every platform (own RNG, no std distributions).
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/placement.h"

namespace gdp {

// splitmix64: small, fast, and identical everywhere.
struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

struct RandomGraphSpec {
  int32_t num_ops = 1000;
  double edges_per_op = 2.0;   // average in-degree of ops past the first layer
  int32_t layer_width = 32;    // ops per layer
  int32_t lookback_layers = 3; // inputs come from the previous few layers
  double param_fraction = 0.1; // share of ops holding parameters
  uint64_t seed = 1;
};

// Ops of mixed types (MatMul, Conv2D, Add, Relu, Sum, Reshape) with random flops, bytes and
// one output each; finalized.
Graph make_random_layered_graph(const RandomGraphSpec& spec);
// A uniformly random device per op.
Placement random_placement(const Graph& g, int32_t num_devices, uint64_t seed);

}  // namespace gdp
