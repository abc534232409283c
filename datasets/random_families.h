// Random families of training graphs for pre-training placement policies: layered DAGs,
// series-parallel graphs, repeated-block chains and NAS-like (ENAS-style) cell graphs, with
// op types and shapes of real layers, built through GraphBuilder so that every graph has the
// forward, backward and update structure of a real training step.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "datasets/builder.h"

namespace gdp::datasets {

enum class RandomFamily : uint8_t { layered, series_parallel, block_chain, nas_cell };

std::vector<std::string> random_family_names();  // "layered", "series_parallel", ...
bool parse_random_family(const std::string& s, RandomFamily* out);  // false when unknown
const char* random_family_name(RandomFamily f);

// A seeded stream with its own integer/real mappings (not std::uniform_*_distribution,
// whose output differs between standard libraries): same seed => same numbers everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  uint64_t bits() { return gen_(); }
  double unit() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t uniform(int64_t lo, int64_t hi);  // inclusive, lo <= hi
  bool chance(double p) { return unit() < p; }
  size_t weighted(const std::vector<double>& weights);  // index with probability ~ weight
  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[static_cast<size_t>(uniform(0, static_cast<int64_t>(xs.size()) - 1))];
  }

 private:
  std::mt19937_64 gen_;
};

struct RandomGraphOptions {
  RandomFamily family = RandomFamily::layered;
  int64_t ops = 1000;  // target op count of the training graph (met within 10% from 100 up)
  uint64_t seed = 1;
};

// The training graph (finalized). Deterministic in (family, ops, seed).
Graph make_random_graph(const RandomGraphOptions& o);

constexpr int64_t kRandomMinOps = 100, kRandomMaxOps = 1000000;

}  // namespace gdp::datasets
