// Test helpers: a placement by registry method name (default options, seed 1, no budget), the
// human placement with its report, and a small real graph.
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "datasets/registry.h"
#include "place/human.h"
#include "place/registry.h"
#include "sim/cost_model.h"

namespace gdp::test {

inline Placement place_by(const std::string& method, const Graph& g, const Cluster& c,
                          const CostModel& cost = CostModel(), uint64_t seed = 1) {
  place::Problem problem(g, c, cost);
  return place::place(place::prepare(place::registry(), method), problem, place::Budget(), seed)
      .placement;
}

// A 2-layer RNN language model of a few hundred ops: the small real graph of many tests.
inline Graph small_rnnlm() {
  datasets::GenOptions o;
  o.layers = 2;
  o.seq_len = 4;
  o.hidden = 32;
  o.vocab = 50;
  o.batch = 4;
  return datasets::generate("rnnlm", o);
}

// The human placement with its strategy report (default cost model).
inline Placement human(const Graph& g, const Cluster& c,
                       place::HumanPlacementInfo* info = nullptr) {
  CostModel cost;
  place::Problem problem(g, c, cost);
  place::Run run(problem, "human", place::Budget(), 1);
  return place::human_placement(run, info);
}

}  // namespace gdp::test
