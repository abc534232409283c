// Random graph families: sizes within 10% of the target, deterministic bytes per seed, valid
// training DAGs (strict round trip, colocated updates, a valid simulation).
#include <catch2/catch.hpp>
#include <cstdio>
#include <set>
#include <string>

#include "core/graph.h"
#include "core/io.h"
#include "core/placement.h"
#include "datasets/random_families.h"
#include "datasets/registry.h"
#include "place_helpers.h"
#include "sim/simulator.h"

using namespace gdp;
using namespace gdp::datasets;

namespace {

Graph make(const std::string& family, int64_t ops, uint64_t seed) {
  RandomGraphOptions o;
  REQUIRE(parse_random_family(family, &o.family));
  o.ops = ops;
  o.seed = seed;
  return make_random_graph(o);
}

}  // namespace

TEST_CASE("datasets/random family sizes within 10% of the target", "[datasets]") {
  for (const std::string& family : random_family_names())
    for (int64_t ops : {100, 1000, 10000})
      for (uint64_t seed : {1, 2}) {
        const Graph g = make(family, ops, seed);
        INFO(family << " ops " << ops << " seed " << seed << " -> " << g.num_ops());
        CHECK(g.num_ops() >= 0.9 * ops);
        CHECK(g.num_ops() <= 1.1 * ops);
        const GraphSummary s = g.summary();
        CHECK(s.ops_backward > 0);
        CHECK(s.ops_update > 0);
        CHECK(s.flops_backward > s.flops_forward);
      }
}

TEST_CASE("datasets/random 100000 ops once", "[datasets]") {
  const Graph g = make("layered", 100000, 3);
  std::printf("random layered 100000: %d ops, %lld edges\n", g.num_ops(),
              static_cast<long long>(g.num_edges()));
  CHECK(g.num_ops() >= 90000);
  CHECK(g.num_ops() <= 110000);
}

TEST_CASE("datasets/random determinism: same seed same bytes, other seed other graph",
          "[datasets]") {
  for (const std::string& family : random_family_names()) {
    INFO(family);
    const std::string a = graph_to_json(make(family, 600, 11));
    const std::string b = graph_to_json(make(family, 600, 11));
    const std::string c = graph_to_json(make(family, 600, 12));
    CHECK(a == b);
    CHECK(a != c);
  }
}

TEST_CASE("datasets/random graphs are valid training DAGs", "[datasets]") {
  const Cluster cluster = read_cluster("v100x4-nvlink");
  std::set<std::string> types;
  for (const std::string& family : random_family_names())
    for (uint64_t seed : {1, 2, 3}) {
      const Graph g = make(family, 2000, seed);
      INFO(family << " seed " << seed);
      REQUIRE(g.finalized());
      // The strict reader accepts what we write, and it round-trips.
      const std::string json = graph_to_json(g);
      const Graph back = parse_graph_json(json, family);
      CHECK(graph_to_json(back) == json);
      // One update per variable, colocated with it; every forward op with a consumer or the loss.
      int64_t vars = 0, updates = 0;
      for (int32_t i = 0; i < g.num_ops(); ++i) {
        const Op& op = g.op(i);
        types.insert(op.type);
        if (op.type == "VariableV2") {
          ++vars;
          CHECK(op.param_bytes > 0);
        }
        if (op.type == "ApplyAdam") {
          ++updates;
          int32_t v = g.find_op(op.colocation);
          REQUIRE(v >= 0);
          CHECK(g.op(v).type == "VariableV2");
        }
      }
      CHECK(updates == vars);
      // Round-robin placement (colocation kept) simulates validly on four V100s.
      Simulator sim(g, cluster, CostModel());
      SimResult r = sim.run(test::place_by("round-robin", g, cluster));
      INFO(r.reason);
      CHECK(r.valid);
      CHECK(r.step_time_s > 0);
    }
  // The families draw from a realistic palette: convs, matmuls, norms, element-wise ops.
  for (const char* t : {"Conv2D", "MatMul", "FusedBatchNormV3", "Relu", "AddN", "ApplyAdam",
                        "Conv2DBackpropFilter", "Conv2DBackpropInput"})
    CHECK(types.count(t) == 1);
}

TEST_CASE("datasets/random through the registry", "[datasets]") {
  GenOptions o;
  set_option(o, "family", "nas_cell");
  set_option(o, "ops", "500");
  set_option(o, "seed", "4");
  const Graph g = generate("random", o);
  CHECK(g.num_ops() >= 450);
  CHECK(g.num_ops() <= 550);
  CHECK(g.name == "random_nas_cell_500_s4");
  GenOptions bad = o;
  bad.family = "mystery";
  CHECK_THROWS_WITH(generate("random", bad), Catch::Contains("layered"));
  GenOptions big = o;
  big.ops = 10;
  CHECK_THROWS_WITH(generate("random", big), Catch::Contains("ops"));
}
