// Test helpers: a placement by registry method name (default options, seed 1, no budget), the
// human placement with its report, and a small real graph.
#pragma once

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "core/rng.h"
#include "datasets/registry.h"
#include "place/human.h"
#include "place/registry.h"
#include "sim/cost_model.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

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

// Inception-v3 at batch 2 and 96x96 images (1,819 ops, smoke.json's inception_v3_small): a
// small graph whose blocks have parallel towers.
inline Graph small_inception() {
  datasets::GenOptions o;
  o.batch = 2;
  o.image_size = 96;
  return datasets::generate("inception_v3", o);
}

// The human placement with its strategy report (default cost model).
inline Placement human(const Graph& g, const Cluster& c,
                       place::HumanPlacementInfo* info = nullptr) {
  CostModel cost;
  place::Problem problem(g, c, cost);
  place::Run run(problem, "human", place::Budget(), 1);
  return place::human_placement(run, info);
}

// a -> b -> c, a -> c; b and c in colocation group "g"; d alone (3 units). Measured times
// (1/64 s) on kind "T" (sim_fixtures.h devices), 1 MiB tensors.
inline Graph small_colocated_graph() {
  Graph g;
  g.name = "small";
  for (const char* n : {"a", "b", "c", "d"}) {
    Op op = timed_op(n, 1.0 / 64, 1 << 20);
    op.id = g.num_ops();
    if (std::string(n) == "b" || std::string(n) == "c") op.colocation = "g";
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, 1 << 20);
  g.add_edge(1, 0, 2, 1 << 20);
  g.add_edge(0, 0, 2, 1 << 20);
  g.add_edge(0, 0, 3, 1 << 20);
  g.finalize();
  return g;
}

// True when every colocation group of g is on one device in p.
inline bool groups_together(const Graph& g, const Placement& p) {
  std::map<std::string, int32_t> dev;
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const std::string& grp = g.op(i).colocation;
    if (grp.empty()) continue;
    auto [it, inserted] = dev.emplace(grp, p.device[i]);
    if (!inserted && it->second != p.device[i]) return false;
  }
  return true;
}

// n ops with measured times in [0.05, 0.5] s, forward edges with probability 0.35 (plus a
// chain edge so that the graph is connected), bytes 1 KiB, 64 MiB or 256 MiB (up to 1/4 s at
// full_mesh's 2^30 B/s), and on odd seeds a colocation group of two ops: the tiny graphs the
// baselines are held against the exhaustive optimum on.
inline Graph tiny_graph(uint64_t seed, int32_t n) {
  Rng rng(seed);
  Graph g;
  g.name = "tiny" + std::to_string(seed);
  for (int32_t i = 0; i < n; ++i) {
    Op op = timed_op("op" + std::to_string(i), 0.05 + 0.45 * rng.uniform(), 1 << 20);
    op.id = i;
    g.add_op(op);
  }
  const int64_t sizes[] = {1 << 10, int64_t{64} << 20, int64_t{256} << 20};
  for (int32_t j = 1; j < n; ++j) {
    bool any = false;
    for (int32_t i = 0; i < j; ++i)
      if (rng.uniform() < 0.35) {
        g.add_edge(i, 0, j, sizes[rng.below(3)]);
        any = true;
      }
    if (!any) g.add_edge(j - 1, 0, j, sizes[rng.below(3)]);
  }
  if (seed % 2 == 1) {
    g.mutable_ops()[1].colocation = "grp";
    g.mutable_ops()[n - 1].colocation = "grp";
  }
  g.finalize();
  return g;
}

// The oracle cases: for seeds 1..12, tiny_graph(seed) of 5 + seed mod 6 ops on a full mesh of
// 3 devices (seeds divisible by 3) or 2.
struct TinyCase {
  Graph graph;
  Cluster cluster;
};
inline TinyCase tiny_case(uint64_t seed) {
  return {tiny_graph(seed, 5 + static_cast<int32_t>(seed % 6)), full_mesh(seed % 3 == 0 ? 3 : 2)};
}

// A method of `reg` on (g, c) with a sample budget (0: none), a seed and options.
inline place::PlaceResult run_method(const place::Registry& reg, const std::string& method,
                                     const Graph& g, const Cluster& c, int64_t samples = 0,
                                     uint64_t seed = 1, const nlohmann::json& options = nullptr) {
  CostModel cost;
  place::Problem problem(g, c, cost);
  place::Budget b;
  b.samples = samples;
  return place::place(place::prepare(reg, method, options), problem, b, seed);
}

// The full simulation of a placement with the default cost model.
inline SimResult simulate(const Graph& g, const Cluster& c, const Placement& p) {
  Simulator sim(g, c, CostModel());
  return sim.run(p);
}

// Two runs of a search that must be the same run (a seed rerun, an exact speed-up): placement,
// samples, the best-so-far curve and, unless `same_note` is false, the note.
inline void check_same_search(const place::PlaceResult& a, const place::PlaceResult& b,
                              bool same_note = true) {
  CHECK(a.placement.device == b.placement.device);
  CHECK(a.report.best_step_s == b.report.best_step_s);
  CHECK(a.report.samples == b.report.samples);
  REQUIRE(a.report.curve.size() == b.report.curve.size());
  for (size_t k = 0; k < a.report.curve.size(); ++k) {
    CHECK(a.report.curve[k].samples == b.report.curve[k].samples);
    CHECK(a.report.curve[k].best_step_s == b.report.curve[k].best_step_s);
  }
  if (same_note) CHECK(a.report.note == b.report.note);
}

}  // namespace gdp::test
