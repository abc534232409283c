// Baechi's m-TOPO, m-ETF and m-SCT: valid placements that keep colocation groups, memory
// limits, ETF's schedule on hand-computable graphs, m-SCT's LP favourite child and its
// fallback, strict options, determinism.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "place/baechi.h"
#include "place/cost_view.h"
#include "place/registry.h"
#include "place_helpers.h"
#include "sim/sim_fixtures.h"

using namespace gdp;
using Catch::Contains;

namespace {

const char* const kMethods[] = {"m-topo", "m-etf", "m-sct"};

place::PlaceResult run_method(const std::string& method, const Graph& g, const Cluster& c,
                              const char* options = nullptr, uint64_t seed = 1) {
  CostModel cost;
  place::Problem problem(g, c, cost);
  const nlohmann::json opts = options ? nlohmann::json::parse(options) : nlohmann::json();
  return place::place(place::prepare(place::registry(), method, opts), problem, place::Budget(),
                      seed);
}

bool valid_devices(const Placement& p, const Graph& g, const Cluster& c) {
  if (static_cast<int32_t>(p.device.size()) != g.num_ops()) return false;
  for (int32_t d : p.device)
    if (d < 0 || d >= c.num_devices()) return false;
  return true;
}

// a -> b, a -> c: b and c heavy (1/16 s), a light (1/64 s); `bytes` on each edge.
Graph fork(int64_t bytes) {
  Graph g;
  g.name = "fork";
  for (auto [n, t] : {std::pair{"a", 1.0 / 64}, {"b", 1.0 / 16}, {"c", 1.0 / 16}}) {
    Op op = test::timed_op(n, t, bytes);
    op.id = g.num_ops();
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, bytes);
  g.add_edge(0, 0, 2, bytes);
  g.finalize();
  return g;
}

// A chain of n ops, each holding `param` bytes of weights, 1 KiB outputs.
Graph heavy_chain(int n, int64_t param) {
  Graph g;
  g.name = "chain";
  for (int i = 0; i < n; ++i) {
    Op op = test::timed_op("op" + std::to_string(i), 1.0 / 64, 1024);
    op.id = i;
    op.param_bytes = param;
    g.add_op(op);
    if (i > 0) g.add_edge(i - 1, 0, i, 1024);
  }
  g.finalize();
  return g;
}

}  // namespace

TEST_CASE("place/baechi methods give valid placements that keep colocation groups", "[place]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x2-nvlink");
  for (const char* m : kMethods)
    for (const char* opts : {R"({"preprocess": true})", R"({"preprocess": false})"}) {
      INFO(m << " " << opts);
      const place::PlaceResult r = run_method(m, g, c, opts);
      CHECK(valid_devices(r.placement, g, c));
      CHECK(test::groups_together(g, r.placement));
      CHECK(r.report.samples == 1);  // simulated once
      CHECK(std::isfinite(r.report.best_step_s));
      CHECK_THAT(r.report.note, Contains("ops in") && Contains("groups"));
    }
}

TEST_CASE("place/baechi groups: colocation always, preprocessing co-places and fuses", "[place]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x2-nvlink");
  CostModel cost;
  place::Problem problem(g, c, cost);
  const place::CostView cv(problem);
  const place::baechi::Groups plain = place::baechi::make_groups(g, cv, false);
  const place::baechi::Groups pre = place::baechi::make_groups(g, cv, true);
  CHECK(pre.num_groups() < plain.num_groups());
  CHECK(pre.merges_backward + pre.merges_chain > 0);
  CHECK(plain.merges_backward + plain.merges_chain + plain.merges_update == 0);
  for (const auto* gr : {&plain, &pre}) {
    int64_t total = 0;
    for (int32_t k = 0; k < gr->num_groups(); ++k) total += gr->size(k);
    CHECK(total == g.num_ops());
    std::map<std::string, int32_t> grp_of;
    for (int32_t i = 0; i < g.num_ops(); ++i) {
      const std::string& col = g.op(i).colocation;
      if (col.empty()) continue;
      auto [it, inserted] = grp_of.emplace(col, gr->group_of[i]);
      CHECK(it->second == gr->group_of[i]);
    }
  }
}

TEST_CASE("place/baechi m-etf: heavy independent ops spread, heavy transfers keep together",
          "[place]") {
  const Cluster c = test::full_mesh(2);
  // Tiny edges: a on gpu0 ends at 1/64; b starts there at 1/64; c would wait until 5/64 on
  // gpu0 but arrives on gpu1 at 1/64 + 1/128 + 1 KiB / 1 GiB/s: ETF sends it there.
  const Graph small = fork(1024);
  const place::PlaceResult r = run_method("m-etf", small, c);
  CHECK(r.placement.device == std::vector<int32_t>{0, 0, 1});
  CHECK_THAT(r.report.note, Contains("predicted makespan 0.08"));  // 1/64 + 1/16 + transfer
  // 1 GiB edges take a second to move: c is better waiting on gpu0 (until 5/64).
  const place::PlaceResult big = run_method("m-etf", fork(int64_t{1} << 30), c);
  CHECK(big.placement.device == std::vector<int32_t>{0, 0, 0});
  CHECK_THAT(big.report.note, Contains("predicted makespan 0.1406"));  // 9/64
}

TEST_CASE("place/baechi memory: every method fits where a fitting placement exists", "[place]") {
  // Four ops of 1 MiB of weights in a chain; 2.5 MiB per device: two ops per device fit.
  const int64_t mib = int64_t{1} << 20;
  const Graph g = heavy_chain(4, mib);
  const Cluster c = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, 5 * mib / 2);
  for (const char* m : kMethods)
    for (const char* opts : {R"({"memory": "baechi"})", R"({"memory": "bound"})"}) {
      INFO(m << " " << opts);
      const place::PlaceResult r = run_method(m, g, c, opts);
      CHECK(valid_devices(r.placement, g, c));
      CHECK(std::isfinite(r.report.best_step_s));  // the simulator finds it fits
      int on0 = 0;
      for (int32_t d : r.placement.device) on0 += d == 0;
      CHECK(on0 == 2);
      CHECK_THAT(r.report.note, !Contains("fit on no device"));
    }
  // 1.5 MiB per device: no placement fits; each method places anyway and says so.
  const Cluster tiny = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, 3 * mib / 2);
  const Graph g6 = heavy_chain(6, mib);
  for (const char* m : kMethods) {
    INFO(m);
    const place::PlaceResult r = run_method(m, g6, tiny);
    CHECK(valid_devices(r.placement, g6, tiny));
    CHECK_THAT(r.report.note, Contains("fit on no device") && Contains("least-loaded"));
    CHECK(std::isinf(r.report.best_step_s));
  }
}

TEST_CASE("place/baechi m-sct: the LP makes the heavy edge the favourite child", "[place]") {
  // a -> b carries 256 MiB, a -> c 1 KiB: saving the heavy transfer is worth more.
  Graph g;
  g.name = "sct";
  for (const char* n : {"a", "b", "c"}) {
    Op op = test::timed_op(n, 1.0 / 64, 1024);
    op.id = g.num_ops();
    op.outputs.push_back(op.outputs[0]);
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, int64_t{1} << 28);
  g.add_edge(0, 1, 2, 1024);
  g.finalize();
  const Cluster c = test::full_mesh(2);
  CostModel cost;
  place::Problem problem(g, c, cost);
  const place::CostView cv(problem);
  const place::baechi::Groups groups = place::baechi::make_groups(g, cv, true);
  const place::baechi::Favourites lp =
      place::baechi::favourite_children(g, cv, groups, 1000, 10, 0.5);
  CHECK(lp.from_lp);
  CHECK(lp.child == std::vector<int32_t>{1, -1, -1});
  CHECK(lp.lp_makespan_s > 0);
  // The approximation (forced with lp_max_ops 0) picks the same: the largest transfer.
  const place::baechi::Favourites approx =
      place::baechi::favourite_children(g, cv, groups, 0, 10, 0.5);
  CHECK_FALSE(approx.from_lp);
  CHECK_THAT(approx.why, Contains("lp_max_ops 0"));
  CHECK(approx.child == std::vector<int32_t>{1, -1, -1});
  // Through the registry: b stays with a in both cases; the note says which was used.
  const place::PlaceResult r = run_method("m-sct", g, c);
  CHECK(r.placement.device[1] == r.placement.device[0]);
  CHECK_THAT(r.report.note, Contains("from the LP"));
  const place::PlaceResult f = run_method("m-sct", g, c, R"({"lp_max_ops": 0})");
  CHECK(f.placement.device[1] == f.placement.device[0]);
  CHECK_THAT(f.report.note, Contains("by largest transfer") && Contains("no LP"));
}

TEST_CASE("place/baechi m-sct fallback on a real graph: valid, colocation kept", "[place]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  const place::PlaceResult lp = run_method("m-sct", g, c);
  const place::PlaceResult approx = run_method("m-sct", g, c, R"({"lp_max_ops": 10})");
  CHECK_THAT(lp.report.note, Contains("from the LP"));
  CHECK_THAT(approx.report.note, Contains("no LP"));
  for (const auto* r : {&lp, &approx}) {
    CHECK(valid_devices(r->placement, g, c));
    CHECK(test::groups_together(g, r->placement));
    CHECK(std::isfinite(r->report.best_step_s));
  }
}

TEST_CASE("place/baechi options are strict", "[place]") {
  const place::Registry& r = place::registry();
  auto prep = [&](const char* m, const char* opts) {
    return place::prepare(r, m, nlohmann::json::parse(opts), "opts.json");
  };
  CHECK(place::prepare(r, "m-topo").options.json().dump() ==
        R"({"preprocess":true,"memory":"baechi","slack":0.0,"oom_retries":4})");
  CHECK(place::prepare(r, "m-etf").options.json().dump() ==
        R"({"preprocess":true,"memory":"baechi"})");
  CHECK(place::prepare(r, "m-sct").options.integer("lp_max_ops") > 0);
  for (const char* m : kMethods) {
    INFO(m);
    CHECK_FALSE(r.get(m).search);
    CHECK_THROWS_AS(prep(m, R"({"nosuch": 1})"), InputError);
    CHECK_THROWS_AS(prep(m, R"({"preprocess": 1})"), InputError);
    CHECK_THROWS_AS(prep(m, R"({"memory": "lots"})"), InputError);
  }
  CHECK_THROWS_AS(prep("m-sct", R"({"lp_max_ops": -1})"), InputError);
  CHECK_THROWS_AS(prep("m-sct", R"({"threshold": 2})"), InputError);
  CHECK_THROWS_AS(prep("m-topo", R"({"slack": -1})"), InputError);
}

TEST_CASE("place/baechi methods are deterministic", "[place]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  for (const char* m : kMethods) {
    INFO(m);
    const place::PlaceResult a = run_method(m, g, c, nullptr, 1);
    const place::PlaceResult b = run_method(m, g, c, nullptr, 7);
    CHECK(a.placement.device == b.placement.device);
    if (std::string(m) != "m-sct") CHECK(a.report.note == b.report.note);  // m-sct's: LP time
  }
}
