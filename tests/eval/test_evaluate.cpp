// The evaluator: the grid of entries x methods x seeds, typed validity for every way a cell
// can fail, geometric means over pairs valid under both, determinism, references, JSON.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"
#include "datasets/suite.h"
#include "eval/evaluate.h"
#include "place_helpers.h"
#include "test_paths.h"

using namespace gdp;
using Catch::Contains;

namespace {

datasets::SuiteEntry entry_of(const std::string& name, Graph g, const std::string& cluster) {
  datasets::SuiteEntry e;
  e.name = name;
  e.graph = std::move(g);
  e.cluster = read_cluster(cluster);
  e.cluster_name = cluster;
  return e;
}

// Two ops holding 10 GiB of weights each: together they overflow one 16 GiB V100 (the
// v100x2-nvlink preset), apart they fit.
Graph heavy() {
  Graph g;
  g.name = "heavy";
  for (int i = 0; i < 2; ++i) {
    Op op;
    op.id = i;
    op.name = "w" + std::to_string(i);
    op.type = "MatMul";
    op.flops = 1e9;
    op.param_bytes = int64_t{10} << 30;
    op.outputs.push_back(TensorSpec{{256}, DType::f32, 1024});
    g.add_op(op);
  }
  g.add_edge(0, 0, 1, 1024);
  g.finalize();
  return g;
}

eval::Spec spec_of(std::vector<std::pair<std::string, std::string>> methods,
                   std::vector<uint64_t> seeds = {1}) {
  eval::Spec s;
  for (auto& [m, o] : methods)
    s.methods.push_back({m, o.empty() ? nlohmann::json() : nlohmann::json::parse(o), "", ""});
  s.seeds = std::move(seeds);
  return s;
}

}  // namespace

TEST_CASE("eval/grid: entries x methods x seeds in order, with typed validity", "[eval]") {
  std::vector<datasets::SuiteEntry> es;
  es.push_back(entry_of("rnn", test::small_rnnlm(), "v100x2-nvlink"));
  es.push_back(entry_of("heavy", heavy(), "v100x2-nvlink"));
  const eval::Spec spec = spec_of({{"single", ""},
                                   {"round-robin", ""},
                                   {"random", R"({"samples": 16})"},
                                   {"single", R"({"device": 7})"}},
                                  {1, 2});
  const auto recs = eval::evaluate(es, spec, CostModel());
  REQUIRE(recs.size() == 2 * 4 * 2);
  CHECK(recs[0].graph == "rnn");
  CHECK(recs[0].method == "single");
  CHECK(recs[0].seed == 1);
  CHECK(recs[1].seed == 2);
  CHECK(recs[4].method == "random");
  CHECK(recs[8].graph == "heavy");
  for (const auto& r : recs) {
    INFO(r.graph << " " << r.method << " " << r.seed << ": " << r.reason);
    CHECK(r.cluster == "v100x2-nvlink");
    if (r.method == "single" && r.options["device"] == 7) {
      CHECK(r.validity == eval::Validity::method_failed);
      CHECK_THAT(r.reason, Contains("device 7"));
      CHECK(r.peak_memory_bytes.empty());
      continue;
    }
    CHECK(r.peak_memory_bytes.size() == 2);
    // Every cell carries its graph's lower bound; a valid step is at or above it.
    CHECK(r.lower_bound_s > 0);
    if (r.valid()) CHECK(r.gap_to_bound() >= 1.0);
    if (r.graph == "heavy" && r.method == "single") {
      CHECK(r.validity == eval::Validity::out_of_memory);
      CHECK(std::isinf(r.step_time_s));
      CHECK(r.peak_memory_bytes[0] > (int64_t{16} << 30));
    } else {
      CHECK(r.valid());
      CHECK(r.step_time_s > 0);
      CHECK(r.reason.empty());
    }
  }
  CHECK(recs[4].samples == 16);
  CHECK(recs[0].samples == 0);
  // Geometric means over the cells valid under both.
  const eval::GeoMean self = eval::geomean_speedup(recs, "round-robin", "round-robin");
  CHECK(self.n == 4);
  CHECK(self.value == Approx(1.0));
  const eval::GeoMean rr = eval::geomean_speedup(recs, "round-robin", "single");
  CHECK(rr.n == 2);  // heavy/single is out of memory: only the rnn pairs count
  const auto& s1 = recs[0];
  const auto& r1 = recs[2];
  CHECK(rr.value == Approx(s1.step_time_s / r1.step_time_s));
  CHECK(eval::geomean_speedup(recs, "nosuch", "single").n == 0);
}

TEST_CASE("eval/split colocation and malformed placements are typed", "[eval]") {
  Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x2-nvlink");
  CostModel cost;
  place::Problem problem(g, c, cost);
  eval::Record r;
  Placement split{std::vector<int32_t>(g.num_ops(), 0)};
  int32_t grouped = -1;
  for (int32_t i = 0; i < g.num_ops(); ++i)
    if (!g.op(i).colocation.empty()) grouped = i;
  REQUIRE(grouped >= 0);
  split.device[grouped] = 1;
  eval::simulate_into(problem, split, r);
  CHECK(r.validity == eval::Validity::split_colocation);
  eval::simulate_into(problem, Placement{{0, 1}}, r);
  CHECK(r.validity == eval::Validity::malformed_placement);
  eval::simulate_into(problem, Placement{std::vector<int32_t>(g.num_ops(), 5)}, r);
  CHECK(r.validity == eval::Validity::malformed_placement);
  CHECK(std::string(eval::validity_name(r.validity)) == "malformed_placement");
}

TEST_CASE("eval/methods and options are checked before anything runs", "[eval]") {
  std::vector<datasets::SuiteEntry> es;
  es.push_back(entry_of("rnn", test::small_rnnlm(), "v100x2-nvlink"));
  int ran = 0;
  auto count = [&](const eval::Record&, size_t, size_t) { ++ran; };
  CHECK_THROWS_AS(eval::evaluate(es, spec_of({{"single", ""}, {"nosuch", ""}}), CostModel(),
                                 place::registry(), count),
                  UsageError);
  CHECK_THROWS_AS(eval::evaluate(es, spec_of({{"single", ""}, {"random", R"({"n": 1})"}}),
                                 CostModel(), place::registry(), count),
                  InputError);
  CHECK(ran == 0);
}

TEST_CASE("eval/deterministic: the same spec gives the same records and placements", "[eval]") {
  std::vector<datasets::SuiteEntry> es;
  es.push_back(entry_of("rnn", test::small_rnnlm(), "v100x4-nvlink"));
  es.push_back(entry_of("rnn_k80", test::small_rnnlm(), "k80x2-pcie"));
  eval::Spec spec = spec_of({{"random", R"({"samples": 24})"}, {"human", ""}}, {3, 4});
  spec.keep_placements = true;
  size_t last_done = 0, total = 0;
  const auto a = eval::evaluate(es, spec, CostModel(), place::registry(),
                                [&](const eval::Record&, size_t done, size_t n) {
                                  CHECK(done == last_done + 1);
                                  last_done = done;
                                  total = n;
                                });
  CHECK(last_done == a.size());
  CHECK(total == a.size());
  const auto b = eval::evaluate(es, spec, CostModel());
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].placement.device == b[i].placement.device);
    CHECK(a[i].step_time_s == b[i].step_time_s);
    CHECK(eval::to_json(a[i])["step_time_s"] == eval::to_json(b[i])["step_time_s"]);
  }
  // Seeds differ for the random search.
  CHECK(a[0].placement.device != a[1].placement.device);
}

TEST_CASE("eval/reference placements of a suite are cells of their own", "[eval]") {
  Graph g = test::small_rnnlm();
  std::vector<datasets::SuiteEntry> es;
  es.push_back(entry_of("with_ref", g, "v100x2-nvlink"));
  es.push_back(entry_of("without", g, "v100x2-nvlink"));
  es[0].placements["mine"] = Placement{std::vector<int32_t>(g.num_ops(), 1)};
  eval::Spec spec = spec_of({{"single", ""}});
  spec.references = true;
  const auto recs = eval::evaluate(es, spec, CostModel());
  REQUIRE(recs.size() == 3);  // with_ref: single, ref:mine; without: single
  CHECK(recs[1].method == "ref:mine");
  CHECK(recs[1].valid());
  CHECK(recs[1].step_time_s == recs[0].step_time_s);  // device 1 is a twin of device 0
  CHECK(recs[2].graph == "without");
}

TEST_CASE("eval/records as JSON", "[eval]") {
  std::vector<datasets::SuiteEntry> es;
  es.push_back(entry_of("heavy", heavy(), "v100x2-nvlink"));
  const auto recs =
      eval::evaluate(es, spec_of({{"single", ""}, {"random", R"({"samples": 8})"}}), CostModel());
  const auto j = eval::to_json(recs);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["validity"] == "out_of_memory");
  CHECK(j[0]["valid"] == false);
  CHECK(j[0]["step_time_s"].is_null());
  CHECK_THAT(j[0]["reason"].get<std::string>(), Contains("out of memory"));
  CHECK(j[1]["validity"] == "valid");
  CHECK(j[1]["samples"] == 8);
  CHECK(j[1]["options"]["samples"] == 8);
  CHECK(j[1]["peak_memory_bytes"].size() == 2);
  CHECK(j[1]["curve"].is_array());
  for (const char* k : {"graph", "cluster", "method", "seed", "ops", "wall_s", "note"})
    CHECK(j[1].contains(k));
  CHECK(j[0]["lower_bound_s"].get<double>() > 0);
  CHECK(j[0]["gap_to_bound"].is_null());  // out of memory: no gap
  CHECK(j[1]["gap_to_bound"].get<double>() ==
        Approx(j[1]["step_time_s"].get<double>() / j[1]["lower_bound_s"].get<double>()));
}
