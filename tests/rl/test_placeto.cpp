// Placeto (rl/placeto/placeto.h): finds the optimum of 8-op graphs against `exhaustive`,
// deterministic per seed, coarsening (colocation and scopes merged, limit kept, expansion per
// group), invalid placements charged a fixed penalty with a valid best still returned, strict
// options, and one policy object applied to graphs of different sizes.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "place/registry.h"
#include "place_helpers.h"
#include "rl/methods.h"
#include "rl/placeto/placeto.h"
#include "rl_fixtures.h"
#include "sim/cost_model.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

using namespace gdp;
using Catch::Contains;

namespace {

const place::Registry& reg() { return test::rl_registry(); }

place::PlaceResult run_method(const std::string& method, const Graph& g, const Cluster& c,
                              int64_t samples, uint64_t seed,
                              const nlohmann::json& options = nullptr) {
  return test::run_method(reg(), method, g, c, samples, seed, options);
}

// Scoped ops: "enc/l0/{a,b}", "enc/l1/{a,b}", "dec/l0/{a,b}" (2 ops each), 2 unscoped ops, a
// colocation group across "enc/l0/a" and "dec/l0/b", a chain through them all.
Graph scoped_graph() {
  Graph g;
  g.name = "scoped";
  const std::vector<std::string> scopes = {"enc/l0/a", "enc/l0/b", "enc/l1/a", "enc/l1/b",
                                           "dec/l0/a", "dec/l0/b", "",         ""};
  int32_t k = 0;
  for (const auto& s : scopes)
    for (int r = 0; r < (s.empty() ? 1 : 2); ++r) {
      Op op = test::timed_op("op" + std::to_string(k), 0.1, 1024);
      op.id = k++;
      op.scope = s;
      g.add_op(op);
    }
  g.mutable_ops()[0].colocation = "c";   // enc/l0/a
  g.mutable_ops()[11].colocation = "c";  // dec/l0/b
  for (int32_t i = 1; i < k; ++i) g.add_edge(i - 1, 0, i, 1024);
  g.finalize();
  return g;
}

}  // namespace

TEST_CASE("rl/placeto finds the optimum of 8-op graphs within a fixed budget", "[rl][placeto]") {
  const Cluster c = test::full_mesh(2);
  for (uint64_t seed : {3u, 4u}) {
    const Graph g = test::tiny_graph(seed, 8);
    INFO("graph " << g.name);
    const place::PlaceResult opt = run_method("exhaustive", g, c, 0, 1);
    const place::PlaceResult r =
        run_method("placeto", g, c, 600, 1, {{"width", 16}, {"rounds", 4}});
    CHECK(r.report.samples <= 600);
    CHECK(test::groups_together(g, r.placement));
    const SimResult s = test::simulate(g, c, r.placement);
    REQUIRE(s.valid);
    CHECK(s.step_time_s == r.report.best_step_s);
    CHECK(r.report.best_step_s == Approx(opt.report.best_step_s).epsilon(1e-9));
    CHECK_THAT(r.report.note, Contains("episodes"));
  }
}

TEST_CASE("rl/placeto is deterministic per seed", "[rl][placeto]") {
  const Graph g = test::tiny_graph(5, 8);
  const Cluster c = test::full_mesh(3);
  const nlohmann::json o = {{"width", 16}, {"rounds", 4}};
  const place::PlaceResult a = run_method("placeto", g, c, 150, 7, o);
  const place::PlaceResult b = run_method("placeto", g, c, 150, 7, o);
  test::check_same_search(a, b);
}

TEST_CASE("rl/placeto coarsening merges colocation groups and scopes within the limit",
          "[rl][placeto]") {
  const Graph g = scoped_graph();  // 14 ops
  // No limit pressure: one group per scope (6), the two unscoped ops alone, and the colocation
  // group joins enc/l0/a with dec/l0/b: 7 groups.
  const rl::placeto::Coarsening full = rl::placeto::coarsen(g, 100);
  CHECK(full.num_groups() == 7);
  for (int32_t limit : {100, 7, 6, 5, 4, 3, 2, 1}) {
    INFO("limit " << limit);
    const rl::placeto::Coarsening cg = rl::placeto::coarsen(g, limit);
    CHECK(cg.num_groups() <= limit);
    REQUIRE(cg.group_of.size() == static_cast<size_t>(g.num_ops()));
    std::vector<int32_t> seen(cg.num_groups(), 0);
    for (int32_t x : cg.group_of) {
      REQUIRE(x >= 0);
      REQUIRE(x < cg.num_groups());
      ++seen[x];
    }
    for (int32_t n : seen) CHECK(n > 0);       // every group has ops; every op one group
    CHECK(cg.group_of[0] == cg.group_of[11]);  // colocation
    for (int32_t i = 0; i < g.num_ops(); ++i)
      for (int32_t j = 0; j < g.num_ops(); ++j)
        if (!g.op(i).scope.empty() && g.op(i).scope == g.op(j).scope)
          CHECK(cg.group_of[i] == cg.group_of[j]);
    // Groups are numbered in the topological order of their first op.
    for (int32_t k = 1; k < cg.num_groups(); ++k) CHECK(cg.first_op[k - 1] < cg.first_op[k]);
    // A per-group placement expands to every op of the group.
    std::vector<int32_t> dev(cg.num_groups());
    for (int32_t k = 0; k < cg.num_groups(); ++k) dev[k] = k % 3;
    const Placement p = cg.expand(dev);
    for (int32_t i = 0; i < g.num_ops(); ++i) CHECK(p.device[i] == dev[cg.group_of[i]]);
    CHECK(test::groups_together(g, p));
  }
  // At 5, the deepest scopes are cut back to their parents, the ones that remove the most
  // groups first, ties by name: "dec/l0" (7 -> 6), then "enc/l0" (-> 5); "enc/l1" stays split.
  const rl::placeto::Coarsening five = rl::placeto::coarsen(g, 5);
  CHECK(five.num_groups() == 5);
  CHECK(five.group_of[0] == five.group_of[2]);  // enc/l0/a with enc/l0/b
  CHECK(five.group_of[0] == five.group_of[8]);  // and dec/l0 (colocation with dec/l0/b)
  CHECK(five.group_of[4] != five.group_of[6]);  // enc/l1/a apart from enc/l1/b
}

TEST_CASE("rl/placeto charges invalid placements a fixed penalty and returns a valid best",
          "[rl][placeto]") {
  // Eight 1-GiB-weight ops in a chain, devices of 5 GiB: one device cannot hold all (invalid);
  // two can. init "zero" starts every episode from the invalid all-on-device-0 placement,
  // charged invalid_penalty x the serial time, so moving ops away is rewarded.
  Graph g;
  g.name = "heavy";
  for (int32_t i = 0; i < 8; ++i) {
    Op op = test::timed_op("w" + std::to_string(i), 0.1, 1024);
    op.id = i;
    op.param_bytes = int64_t{1} << 30;
    g.add_op(op);
  }
  for (int32_t i = 1; i < 8; ++i) g.add_edge(i - 1, 0, i, 1024);
  g.finalize();
  const Cluster c = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, int64_t{5} << 30);
  REQUIRE_FALSE(test::simulate(g, c, test::on_device(g, 0)).valid);
  const place::PlaceResult r =
      run_method("placeto", g, c, 300, 2, {{"init", "zero"}, {"width", 16}});
  CHECK_THAT(r.report.note, Contains("initial inf"));
  const SimResult s = test::simulate(g, c, r.placement);
  CHECK(s.valid);
  CHECK(std::isfinite(r.report.best_step_s));
  // The penalty is finite (2 x 0.8 s here), so training runs on rewards, not on infinities.
  CostModel cost;
  place::Problem pb(g, c, cost);
  place::Budget b;
  b.samples = 40;
  place::Run run(pb, "placeto", b, 3);
  rl::placeto::TrainConfig cfg;
  cfg.init = "zero";
  cfg.policy.width = 16;
  const rl::placeto::TrainReport rep = rl::placeto::train(run, cfg);
  CHECK(std::isinf(rep.initial_step_s));
  CHECK(rep.episodes >= 1);
  CHECK(run.samples() <= 40);
  // A budget that ends inside an episode stops it cleanly (no update): only when it is spent.
  if (rep.partial) CHECK(run.samples() == 40);
}

TEST_CASE("rl/placeto options are strict", "[rl][placeto]") {
  CHECK_THROWS_AS(place::prepare(reg(), "placeto", {{"max_node", 10}}), InputError);
  CHECK_THROWS_AS(place::prepare(reg(), "placeto", {{"max_nodes", 0}}), InputError);
  CHECK_THROWS_AS(place::prepare(reg(), "placeto", {{"discount", 1.5}}), InputError);
  CHECK_THROWS_AS(place::prepare(reg(), "placeto", {{"init", "human"}}), InputError);
  CHECK_THROWS_AS(place::prepare(reg(), "placeto", {{"width", "wide"}}), InputError);
  const place::PreparedMethod m = place::prepare(reg(), "placeto", {{"width", 8}});
  CHECK(m.options.integer("width") == 8);
  CHECK(m.options.integer("max_nodes") == 1000);
}

TEST_CASE("rl/placeto policy is independent of the graph's size", "[rl][placeto]") {
  const Cluster c = test::full_mesh(3);
  const CostModel cost;
  rl::placeto::PolicyConfig pc;
  pc.width = 8;
  pc.rounds = 2;
  const rl::placeto::PlacetoPolicy policy(3, pc, 11);
  for (int32_t n : {5, 9}) {
    const Graph g = test::tiny_graph(static_cast<uint64_t>(n), n);
    const rl::placeto::Coarsening groups = rl::placeto::coarsen(g, 100);
    const rl::placeto::CoarseGraph cg = rl::placeto::CoarseGraph::build(g, c, cost, groups);
    const std::vector<int32_t> p(cg.num_nodes, 1);
    const std::vector<uint8_t> visited(cg.num_nodes, 0);
    const nn::Var lg = policy.logits(cg, p, visited, cg.num_nodes / 2);
    CHECK(lg.dim(0) == 1);
    CHECK(lg.dim(1) == 3);
  }
}

TEST_CASE("rl/placeto and hdp on one device: one placement, returned at once", "[rl][placeto]") {
  // On one device every sampled move is no move: Placeto's episodes would spend no sample and
  // never end, HDP's samples would all be the same placement.
  const Graph g = test::tiny_graph(3, 8);
  const Cluster c = test::full_mesh(1);
  for (const char* m : {"placeto", "hdp"}) {
    INFO(m);
    const place::PlaceResult r = run_method(m, g, c, 500, 1);
    CHECK(r.report.samples == 1);
    CHECK(r.placement.device == std::vector<int32_t>(g.num_ops(), 0));
  }
}
