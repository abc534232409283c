// The `metis` baseline: valid placements that keep colocation groups together, determinism
// per seed, strict options, the cut of two loosely joined clusters, targets by device speed and
// capacity, the memory repair, one device, more devices than units.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <tuple>

#include "core/error.h"
#include "place/cost_view.h"
#include "place/registry.h"
#include "place/units.h"
#include "place_helpers.h"
#include "sim/sim_fixtures.h"

using namespace gdp;
using Catch::Contains;

namespace {

place::PlaceResult run_metis(const Graph& g, const Cluster& c, const char* opts = "{}",
                             uint64_t seed = 1, const CostModel& cost = CostModel()) {
  place::Problem problem(g, c, cost);
  return place::place(place::prepare(place::registry(), "metis", nlohmann::json::parse(opts)),
                      problem, place::Budget(), seed);
}

void check_colocation(const Graph& g, const Placement& p, int32_t D) {
  REQUIRE(static_cast<int32_t>(p.device.size()) == g.num_ops());
  const place::Units u = place::Units::colocation(g);
  for (int32_t op = 0; op < g.num_ops(); ++op) {
    CHECK(p.device[op] >= 0);
    CHECK(p.device[op] < D);
    CHECK(p.device[op] == p.device[u.first_op[u.unit_of[op]]]);
  }
}

// Two chains of `n` ops (1 MiB tensors) joined by one 4-byte edge from a second output of
// a[n/2] to b[n/2].
Graph two_chains(int n) {
  Graph g;
  g.name = "two_chains";
  for (const char* prefix : {"a", "b"})
    for (int i = 0; i < n; ++i) {
      Op op = test::timed_op(prefix + std::to_string(i), 1.0 / 64, 1 << 20);
      if (i == n / 2) op.outputs.push_back(TensorSpec{{1}, DType::f32, 4});
      op.id = g.num_ops();
      g.add_op(op);
    }
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i + 1 < n; ++i) g.add_edge(c * n + i, 0, c * n + i + 1, 1 << 20);
  g.add_edge(n / 2, 1, n + n / 2, 4);
  g.finalize();
  return g;
}

// The conservative estimate per device: op memory + each received tensor once per device.
std::vector<int64_t> memory_estimate(const Graph& g, const Placement& p, int32_t D) {
  std::vector<int64_t> load(D, 0);
  for (int32_t op = 0; op < g.num_ops(); ++op) {
    const Op& o = g.op(op);
    load[p.device[op]] += o.resident_bytes() + o.output_bytes() + o.temp_bytes;
  }
  std::set<std::tuple<int32_t, int32_t, int32_t>> got;  // (src, output, device)
  for (const Edge& e : g.edges())
    if (p.device[e.src] != p.device[e.dst] &&
        got.insert({e.src, e.src_output, p.device[e.dst]}).second)
      load[p.device[e.dst]] += e.bytes;
  return load;
}

}  // namespace

TEST_CASE("place/metis places a real graph validly with its colocation groups together",
          "[place][metis]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  REQUIRE(place::Units::colocation(g).num_units() < g.num_ops());  // it has groups
  const place::PlaceResult r = run_metis(g, c);
  check_colocation(g, r.placement, 4);
  CHECK(r.report.samples == 1);
  CHECK(std::isfinite(r.report.best_step_s));
  CHECK_THAT(r.report.note, Contains("METIS kway") && Contains("4 parts") && Contains("step"));
  CHECK(r.report.options.dump() ==
        R"({"scheme":"kway","objective":"cut","edge_weight":"bytes","imbalance":0.03,)"
        R"("ncuts":1,"repair":true})");
  std::set<int32_t> used(r.placement.device.begin(), r.placement.device.end());
  CHECK(used.size() > 1);
  // The other scheme, objective and edge weights work too.
  for (const char* o : {R"({"scheme": "recursive"})", R"({"objective": "volume"})",
                        R"({"edge_weight": "time", "ncuts": 3})"}) {
    INFO(o);
    const place::PlaceResult q = run_metis(g, c, o);
    check_colocation(g, q.placement, 4);
    CHECK(std::isfinite(q.report.best_step_s));
  }
}

TEST_CASE("place/metis is deterministic per seed", "[place][metis]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = make_cluster_preset("v100x4-nvlink");
  for (uint64_t seed : {uint64_t{1}, uint64_t{7}, uint64_t{123456789012}}) {
    const Placement a = test::place_by("metis", g, c, CostModel(), seed);
    const Placement b = test::place_by("metis", g, c, CostModel(), seed);
    CHECK(a.device == b.device);
  }
}

TEST_CASE("place/metis options are strict", "[place][metis]") {
  const place::Registry& r = place::registry();
  auto bad = [&](const char* opts) {
    CHECK_THROWS_AS(place::prepare(r, "metis", nlohmann::json::parse(opts)), InputError);
  };
  bad(R"({"imbalanse": 0.1})");
  bad(R"({"objective": "bogus"})");
  bad(R"({"scheme": "bisect"})");
  bad(R"({"imbalance": 0})");
  bad(R"({"imbalance": 11})");
  bad(R"({"ncuts": 0})");
  bad(R"({"repair": 1})");
  bad(R"({"scheme": "recursive", "objective": "volume"})");
  try {
    place::prepare(r, "metis", nlohmann::json::parse(R"({"scheme": "recursive", "objective":
                   "volume"})"));
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Contains("metis") && Contains("kway"));
  }
  CHECK(place::prepare(r, "metis", nlohmann::json::parse(R"({"imbalance": 0.5})"))
            .options.number("imbalance") == 0.5);
}

TEST_CASE("place/metis splits two loosely joined chains at the tiny edge", "[place][metis]") {
  const Graph g = two_chains(10);
  const Cluster c = test::full_mesh(2);
  for (uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    const place::PlaceResult r = run_metis(g, c, "{}", seed);
    const auto& d = r.placement.device;
    for (int i = 1; i < 10; ++i) {
      CHECK(d[i] == d[0]);
      CHECK(d[10 + i] == d[10]);
    }
    CHECK(d[0] != d[10]);
    CHECK_THAT(r.report.note, Contains("cut 4 B"));
  }
}

TEST_CASE("place/metis targets time by device speed and memory by capacity", "[place][metis]") {
  // A chain of 12 equal ops on two devices: device 1 twice as fast with twice the memory, so
  // both targets are 1/3 : 2/3.
  Graph g;
  g.name = "chain12";
  for (int i = 0; i < 12; ++i) {
    Op op = test::timed_op("op" + std::to_string(i), 1.0 / 64, 1 << 20);
    op.measured.push_back({"U", 1.0 / 128});
    op.id = g.num_ops();
    g.add_op(op);
  }
  for (int i = 0; i + 1 < 12; ++i) g.add_edge(i, 0, i + 1, 1 << 20);
  g.finalize();
  Cluster c = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, int64_t{1} << 30);
  c.devices[1].kind = "U";
  c.devices[1].memory_bytes = int64_t{2} << 30;
  const place::PlaceResult r = run_metis(g, c);
  int on_fast = 0;
  for (int32_t d : r.placement.device) on_fast += d == 1;
  CHECK(on_fast >= 7);
  CHECK(on_fast <= 9);
  CHECK_THAT(r.report.note, Contains("targets by speed and capacity"));
  // Identical devices: uniform targets, an even split.
  const Cluster same = test::full_mesh(2);
  const place::PlaceResult u = run_metis(g, same);
  int on_1 = 0;
  for (int32_t d : u.placement.device) on_1 += d == 1;
  CHECK(on_1 == 6);
  CHECK_THAT(u.report.note, !Contains("targets by speed"));
}

TEST_CASE("place/metis repairs a placement whose memory estimate exceeds capacity",
          "[place][metis]") {
  // A chain of 6 ops (1 MiB each: 768 KiB weights + a 256 KiB output) and 4 isolated ops of
  // 64 KiB, all of equal time. Balanced on time and memory: 3 chain ops and 2 isolated ops per
  // device (3.125 MiB each), but the receiver of the cut tensor holds 256 KiB more (3.375 MiB
  // > 3.25 MiB). Moving two isolated ops to the sender fits both (3.25 MiB each).
  Graph g;
  g.name = "tight";
  const int64_t KiB = 1 << 10, MiB = 1 << 20;
  for (int i = 0; i < 10; ++i) {
    const bool chain = i < 6;
    Op op = test::timed_op("op" + std::to_string(i), 1.0 / 64, chain ? 256 * KiB : 64 * KiB);
    if (chain) op.param_bytes = 768 * KiB;
    op.id = g.num_ops();
    g.add_op(op);
  }
  for (int i = 0; i + 1 < 6; ++i) g.add_edge(i, 0, i + 1, 256 * KiB);
  g.finalize();
  const int64_t cap = 3 * MiB + MiB / 4;
  const Cluster c = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, cap);
  const place::PlaceResult plain = run_metis(g, c, R"({"repair": false})");
  const std::vector<int64_t> before = memory_estimate(g, plain.placement, 2);
  REQUIRE(std::max(before[0], before[1]) > cap);  // the partition alone does not fit
  CHECK_THAT(plain.report.note, Contains("no repair: 1 devices over capacity"));

  const place::PlaceResult r = run_metis(g, c);
  const std::vector<int64_t> after = memory_estimate(g, r.placement, 2);
  CHECK(after[0] <= cap);
  CHECK(after[1] <= cap);
  CHECK(std::isfinite(r.report.best_step_s));
  CHECK_THAT(r.report.note, Contains("repair moved 2 units") && Contains("all fit now"));

  // No fit at all (capacity below a single op's memory): said so, placement still returned.
  const Cluster tiny = test::full_mesh(2, test::kLinkBw_Bps, test::kLinkLat_s, MiB / 2);
  const place::PlaceResult t = run_metis(g, tiny);
  check_colocation(g, t.placement, 2);
  CHECK_THAT(t.report.note, Contains("still over: no fit found"));
}

TEST_CASE("place/metis on one device places everything there without METIS", "[place][metis]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = test::full_mesh(1);
  const place::PlaceResult r = run_metis(g, c);
  CHECK(r.placement.device == std::vector<int32_t>(g.num_ops(), 0));
  CHECK_THAT(r.report.note, Contains("one device"));
  CHECK(r.report.samples == 1);
}

TEST_CASE("place/metis handles more devices than units", "[place][metis]") {
  const Graph g = test::small_colocated_graph();  // 3 units
  const Cluster c = test::full_mesh(8);
  const place::PlaceResult r = run_metis(g, c);
  check_colocation(g, r.placement, 8);
  std::set<int32_t> used(r.placement.device.begin(), r.placement.device.end());
  CHECK(used.size() == 3);
  CHECK_THAT(r.report.note, Contains("3 units < 8 devices"));
  CHECK(std::isfinite(r.report.best_step_s));
  // As many units as devices goes through METIS.
  const place::PlaceResult q = run_metis(g, test::full_mesh(3));
  check_colocation(g, q.placement, 3);
  CHECK_THAT(q.report.note, Contains("METIS kway"));
}

TEST_CASE("place/metis balances a graph without edges", "[place][metis]") {
  Graph g;
  g.name = "isolated";
  for (int i = 0; i < 8; ++i) {
    Op op = test::timed_op("op" + std::to_string(i), 1.0 / 64, 1 << 20);
    op.id = g.num_ops();
    g.add_op(op);
  }
  g.finalize();
  const place::PlaceResult r = run_metis(g, test::full_mesh(2));
  int on_1 = 0;
  for (int32_t d : r.placement.device) on_1 += d == 1;
  CHECK(on_1 == 4);
  CHECK_THAT(r.report.note, Contains("cut 0 B"));
}
