// The algorithmic baselines together (metis, m-topo, m-etf, m-sct, anneal) against the
// `exhaustive` oracle on tiny seeded graphs (5-10 ops, 2-3 devices, heavy transfers): every
// placement valid, colocation groups together, never better than the optimum; anneal finds
// the optimum; m-ETF within Hwang et al.'s bound. Then memory (fits where a fit exists, says
// why where none does), strict options and determinism for each method.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "place/registry.h"
#include "place/units.h"
#include "place_helpers.h"
#include "sim/sim_fixtures.h"

using namespace gdp;
using Catch::Contains;

namespace {

const std::vector<std::string> kBaselines = {"metis", "m-topo", "m-etf", "m-sct", "anneal"};

place::PlaceResult run_method(const std::string& method, const Graph& g, const Cluster& c,
                              int64_t samples = 0, uint64_t seed = 1,
                              const nlohmann::json& options = nullptr) {
  return test::run_method(place::registry(), method, g, c, samples, seed, options);
}

// Hwang et al.'s C_max: the longest chain of communication delays (each edge at its transfer
// time between two distinct devices, ops free).
double longest_communication_chain(const Graph& g, const Cluster& c) {
  std::vector<double> at(g.num_ops(), 0);
  double best = 0;
  const LinkSpec& l = c.links[0];  // a full mesh of identical links
  for (int32_t i : g.topo_order())
    for (int64_t k = g.in_ptr()[i]; k < g.in_ptr()[i + 1]; ++k) {
      const Edge& e = g.edges()[g.in_edge_ids()[k]];
      at[i] = std::max(at[i], at[e.src] + l.latency_s + e.bytes / l.bandwidth_Bps);
      best = std::max(best, at[i]);
    }
  return best;
}

}  // namespace

TEST_CASE("place/baselines against the exhaustive optimum on tiny graphs", "[place][baselines]") {
  std::map<std::string, double> worst, sum;
  int cases = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const test::TinyCase tc = test::tiny_case(seed);
    const Graph& g = tc.graph;
    const Cluster& c = tc.cluster;
    const int devices = c.num_devices();
    INFO("graph " << g.name << ", " << g.num_ops() << " ops on " << devices << " devices");
    const place::PlaceResult opt = run_method("exhaustive", g, c);
    const SimResult so = test::simulate(g, c, opt.placement);
    REQUIRE(so.valid);
    CHECK(opt.report.best_step_s == so.step_time_s);
    ++cases;
    for (const std::string& m : kBaselines) {
      INFO("method " << m);
      const place::PlaceResult r = run_method(m, g, c, m == "anneal" ? 3000 : 0);
      CHECK(test::groups_together(g, r.placement));
      const SimResult s = test::simulate(g, c, r.placement);
      REQUIRE(s.valid);
      CHECK(s.step_time_s >= so.step_time_s * (1 - 1e-12));
      const double ratio = s.step_time_s / so.step_time_s;
      worst[m] = std::max(worst[m], ratio);
      sum[m] += ratio;
      if (m == "anneal") CHECK(ratio == Approx(1.0).epsilon(1e-9));
      if (m == "m-etf") {
        // Hwang et al. (1989): ETF <= (2 - 1/D) * opt(no communication) + C_max, and
        // opt(no communication) <= opt, so the weaker check below must hold too.
        CHECK(s.step_time_s <=
              (2.0 - 1.0 / devices) * so.step_time_s + longest_communication_chain(g, c) + 1e-12);
      }
    }
  }
  for (const std::string& m : kBaselines)
    WARN(m << ": worst step / optimum " << worst[m] << ", mean " << sum[m] / cases << " over "
           << cases << " tiny graphs");
}

TEST_CASE("place/baselines fit memory where a fit exists, and say why where none does",
          "[place][baselines]") {
  // Eight 1-GiB-weight ops in two chains: 8 GiB, devices of 5 GiB each. One device cannot
  // hold it; two can.
  Graph g;
  g.name = "heavy";
  for (int32_t i = 0; i < 8; ++i) {
    Op op = test::timed_op("w" + std::to_string(i), 0.1, 1 << 20);
    op.id = i;
    op.param_bytes = int64_t{1} << 30;
    g.add_op(op);
  }
  for (int32_t i = 1; i < 8; ++i)
    if (i != 4) g.add_edge(i - 1, 0, i, 1 << 20);
  g.finalize();
  const Cluster c = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, int64_t{5} << 30);
  for (const std::string& m : kBaselines) {
    INFO("method " << m);
    const place::PlaceResult r = run_method(m, g, c, m == "anneal" ? 500 : 0);
    const SimResult s = test::simulate(g, c, r.placement);
    CHECK(s.valid);
  }
  // A single op larger than any device: no valid placement exists. Every method still returns
  // a placement (the simulator then names the device that overflows) and no method crashes.
  g.mutable_ops()[0].param_bytes = int64_t{6} << 30;
  g.finalize();
  for (const std::string& m : kBaselines) {
    INFO("method " << m);
    place::PlaceResult r;
    REQUIRE_NOTHROW(r = run_method(m, g, c, m == "anneal" ? 200 : 0));
    const SimResult s = test::simulate(g, c, r.placement);
    CHECK_FALSE(s.valid);
    CHECK_THAT(s.reason, Contains("out of memory"));
  }
}

TEST_CASE("place/baselines keep colocation groups of a real graph together, deterministically",
          "[place][baselines]") {
  Graph g = test::small_rnnlm();
  // A colocation group across the graph: the first and the last op of the topological order.
  g.mutable_ops()[g.topo_order().front()].colocation = "ends";
  g.mutable_ops()[g.topo_order().back()].colocation = "ends";
  g.finalize();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  for (const std::string& m : kBaselines) {
    INFO("method " << m);
    const int64_t samples = m == "anneal" ? 300 : 0;
    const place::PlaceResult a = run_method(m, g, c, samples, 7);
    const place::PlaceResult b = run_method(m, g, c, samples, 7);
    CHECK(test::groups_together(g, a.placement));
    CHECK(a.placement.device == b.placement.device);
    CHECK(test::simulate(g, c, a.placement).valid);
    CHECK_FALSE(a.report.note.empty());
    if (m == "anneal") CHECK(a.report.samples <= samples);
  }
}

TEST_CASE("place/baselines options are strict", "[place][baselines]") {
  for (const std::string& m : kBaselines) {
    INFO("method " << m);
    try {
      place::prepare(place::registry(), m, nlohmann::json{{"bogus", 1}});
      FAIL("accepted an unknown option");
    } catch (const InputError& e) {
      CHECK_THAT(std::string(e.what()), Contains("bogus"));
    }
  }
}

TEST_CASE("place/exhaustive: the optimum of a hand-checked fork, refusals with reasons",
          "[place][baselines]") {
  // a -> b, a -> c with light edges; b and c take 1/2 s each: the optimum puts b and c apart.
  Graph g;
  g.name = "fork";
  for (auto [n, t] : {std::pair{"a", 0.125}, {"b", 0.5}, {"c", 0.5}}) {
    Op op = test::timed_op(n, t);
    op.id = g.num_ops();
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, 1024);
  g.add_edge(0, 0, 2, 1024);
  g.finalize();
  const Cluster c = test::full_mesh(2);
  const place::PlaceResult r = run_method("exhaustive", g, c);
  CHECK(r.report.samples == 8);
  CHECK(r.placement.device[1] != r.placement.device[2]);
  CHECK(r.report.best_step_s ==
        Approx(0.125 + 0.5 + test::kLinkLat_s + 1024 / test::kLinkBw_Bps).epsilon(1e-12));
  // Too many placements for the option, or for the budget: InputErrors that say so.
  CHECK_THROWS_WITH(run_method("exhaustive", g, c, 0, 1, {{"max_placements", 7}}),
                    Contains("more than options.max_placements = 7"));
  CHECK_THROWS_WITH(run_method("exhaustive", g, c, 5), Contains("the budget allows 5"));
  CHECK_THROWS_WITH(
      run_method("exhaustive", test::small_rnnlm(), make_cluster_preset("v100x2-nvlink")),
      Contains("oracle"));
}

TEST_CASE("place/anneal: starts from the best baseline, stays within the budget, reports it",
          "[place][baselines]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  const place::PlaceResult r = run_method("anneal", g, c, 400);
  CHECK(r.report.samples <= 400);
  CHECK(r.report.samples >= 390);
  CHECK_THAT(r.report.note, Contains("anneal from"));
  REQUIRE_FALSE(r.report.curve.empty());
  // Never worse than where it started: the best of its starting methods.
  double start = std::numeric_limits<double>::infinity();
  for (const char* m : {"single", "human", "metis", "m-topo", "m-etf", "m-sct"}) {
    const place::PlaceResult s = run_method(m, g, c);
    start = std::min(start, test::simulate(g, c, s.placement).step_time_s);
  }
  CHECK(r.report.best_step_s <= start);
  CHECK(test::simulate(g, c, r.placement).step_time_s == r.report.best_step_s);
  // A random start and a named start; bad starts are refused before anything runs.
  CHECK(run_method("anneal", g, c, 100, 1, {{"init", "random"}}).report.samples <= 100);
  CHECK_THAT(run_method("anneal", g, c, 100, 1, {{"init", "m-etf"}}).report.note,
             Contains("from m-etf"));
  CHECK_THROWS_WITH(place::prepare(place::registry(), "anneal", {{"init", "nosuch"}}),
                    Contains("unknown method 'nosuch'"));
  CHECK_THROWS_WITH(place::prepare(place::registry(), "anneal", {{"init_methods", "single,x"}}),
                    Contains("unknown method 'x'"));
  CHECK_THROWS_WITH(
      place::prepare(place::registry(), "anneal",
                     {{"p_move", 0}, {"p_neighbour", 0}, {"p_swap", 0}, {"p_scope", 0}}),
      Contains("must be > 0"));
}

TEST_CASE("place/anneal: early stop changes nothing but the work (same placements, same curve)",
          "[place][baselines]") {
  // Each proposal's simulation may stop once its Metropolis test must fail: the search must
  // visit the same states, so the result, the best-so-far curve and the note's figures agree.
  const struct {
    Graph g;
    Cluster c;
  } cases[] = {{test::small_rnnlm(), make_cluster_preset("v100x4-nvlink")},
               {test::tiny_case(3).graph, test::tiny_case(3).cluster}};
  int64_t limited = 0;
  for (const auto& tc : cases) {
    for (uint64_t seed : {1, 2, 3}) {
      const place::PlaceResult on = run_method("anneal", tc.g, tc.c, 600, seed);
      const place::PlaceResult off =
          run_method("anneal", tc.g, tc.c, 600, seed, {{"early_stop", false}});
      test::check_same_search(on, off, /*same_note=*/false);  // the note counts the stops
      CHECK_THAT(off.report.note, !Contains("stopped early"));
      if (on.report.note.find("stopped early") != std::string::npos) ++limited;
    }
  }
  CHECK(limited > 0);  // the early stop did take part
}
