// Random families of training graphs for pre-training placement policies: layered DAGs,
// series-parallel graphs, repeated-block chains and NAS-like (ENAS-style) cell graphs, with
// op types and shapes of real layers, built through GraphBuilder so that every graph has the
// forward, backward and update structure of a real training step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "datasets/builder.h"

namespace gdp::datasets {

enum class RandomFamily : uint8_t { layered, series_parallel, block_chain, nas_cell };

std::vector<std::string> random_family_names();  // "layered", "series_parallel", ...
bool parse_random_family(const std::string& s, RandomFamily* out);  // false when unknown
const char* random_family_name(RandomFamily f);

struct RandomGraphOptions {
  RandomFamily family = RandomFamily::layered;
  int64_t ops = 1000;  // target op count of the training graph (met within 10% from 100 up)
  uint64_t seed = 1;
};

// The training graph (finalized). Deterministic in (family, ops, seed).
Graph make_random_graph(const RandomGraphOptions& o);

constexpr int64_t kRandomMinOps = 100, kRandomMaxOps = 1000000;

}  // namespace gdp::datasets
