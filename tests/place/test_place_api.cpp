// The placer interface: registry lookups, strict options (unknown key, wrong type, out of
// range: errors naming the method and the key), budgets, the built-in methods' contracts, and
// the random search's determinism, colocation and sample accounting.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"
#include "place/methods.h"
#include "place/registry.h"
#include "place/units.h"
#include "place_helpers.h"
#include "sim/sim_fixtures.h"
#include "test_paths.h"

using namespace gdp;
using Catch::Contains;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("place/registry lists the built-in methods and rejects unknown names", "[place]") {
  const place::Registry& r = place::registry();
  const std::vector<std::string> names = r.names();
  for (const char* m : {"single", "round-robin", "human", "random"})
    CHECK(std::find(names.begin(), names.end(), m) != names.end());
  CHECK(r.find("nosuch") == nullptr);
  CHECK_THROWS_AS(r.get("nosuch"), UsageError);
  CHECK_THAT(error_of([&] { r.get("nosuch"); }),
             Contains("nosuch") && Contains("single, round-robin, human, random"));
  place::Registry mine;
  place::register_builtin_methods(mine);
  CHECK_THROWS_AS(mine.add(place::single_method()), std::logic_error);
  const std::string list = place::describe_methods(r);
  for (const char* m : {"single", "round-robin", "human", "random", "samples", "device"})
    CHECK_THAT(list, Contains(m));
}

TEST_CASE("place/options are strict and resolved with their defaults", "[place]") {
  const place::Registry& r = place::registry();
  const auto resolved = place::prepare(r, "random").options.json();
  CHECK(resolved.dump() == R"({"samples":0,"batch":64})");
  CHECK(place::prepare(r, "random", nlohmann::json::parse(R"({"samples": 5})"))
            .options.integer("samples") == 5);
  auto err = [&](const char* method, const char* opts) {
    return error_of([&] { place::prepare(r, method, nlohmann::json::parse(opts), "opts.json"); });
  };
  CHECK_THAT(err("random", R"({"sample": 5})"),
             Contains("opts.json") && Contains("method 'random'") && Contains("options.sample") &&
                 Contains("unknown option") && Contains("samples, batch"));
  CHECK_THAT(err("random", R"({"samples": 1.5})"),
             Contains("options.samples") && Contains("expected an integer"));
  CHECK_THAT(err("random", R"({"samples": "5"})"),
             Contains("options.samples") && Contains("expected an integer"));
  CHECK_THAT(err("random", R"({"batch": 0})"),
             Contains("options.batch") && Contains("[1, 1048576]") && Contains("got 0"));
  CHECK_THAT(err("random", R"({"samples": -1})"), Contains("options.samples"));
  CHECK_THAT(err("random", R"([1, 2])"), Contains("expected a JSON object"));
  CHECK_THAT(err("human", R"({"x": 1})"),
             Contains("method 'human'") && Contains("takes no options"));
  CHECK_THAT(err("single", R"({"device": true})"), Contains("options.device"));
  CHECK_THROWS_AS(place::prepare(r, "random", nlohmann::json::parse(R"({"sample": 5})")),
                  InputError);
}

TEST_CASE("place/options from a command-line argument: text or file, strict JSON", "[place]") {
  CHECK(place::parse_options_arg(R"( {"samples": 3})")["samples"] == 3);
  CHECK_THROWS_AS(place::parse_options_arg(R"({"samples": 3, "samples": 4})"), InputError);
  const auto path = std::filesystem::path(test::binary_dir()) / "place_opts_test.json";
  std::ofstream(path) << R"({"batch": 2})";
  CHECK(place::parse_options_arg(path.string())["batch"] == 2);
  CHECK_THAT(error_of([] { place::parse_options_arg("/nonexistent/opts.json"); }),
             Contains("/nonexistent/opts.json"));
  // JSON that is not an object, inline or in a file, says that options are an object.
  CHECK_THAT(error_of([] { place::parse_options_arg("[1,2]"); }),
             Contains("options must be a JSON object") && Contains("[1,2]"));
  CHECK_THAT(error_of([] { place::parse_options_arg("3"); }),
             Contains("options must be a JSON object"));
  const auto arr = std::filesystem::path(test::binary_dir()) / "place_opts_array.json";
  std::ofstream(arr) << "[1, 2]";
  CHECK_THAT(error_of([&] { place::parse_options_arg(arr.string()); }),
             Contains("place_opts_array.json") && Contains("options must be a JSON object") &&
                 Contains("array"));
}

TEST_CASE("place/single and round-robin: contracts, colocation and bad devices", "[place]") {
  const Graph g = test::small_colocated_graph();
  const Cluster c = test::full_mesh(3);
  CHECK(test::place_by("single", g, c).device == std::vector<int32_t>{0, 0, 0, 0});
  CostModel cost;
  place::Problem problem(g, c, cost);
  const auto two =
      place::prepare(place::registry(), "single", nlohmann::json::parse(R"({"device": 2})"));
  CHECK(place::place(two, problem, {}, 1).placement.device == std::vector<int32_t>{2, 2, 2, 2});
  const auto nine =
      place::prepare(place::registry(), "single", nlohmann::json::parse(R"({"device": 9})"));
  CHECK_THAT(error_of([&] { place::place(nine, problem, {}, 1); }),
             Contains("device 9") && Contains("3 devices"));
  // Topological order a, b, c, d: b -> 1, c with its group (1), d -> 3 mod 3 = 0.
  CHECK(test::place_by("round-robin", g, c).device == std::vector<int32_t>{0, 1, 1, 0});
}

TEST_CASE("place/units: colocation groups are one unit, numbered in topological order", "[place]") {
  const Graph g = test::small_colocated_graph();
  const place::Units u = place::Units::colocation(g);
  CHECK(u.num_units() == 3);
  CHECK(u.unit_of == std::vector<int32_t>{0, 1, 1, 2});
  CHECK(u.first_op == std::vector<int32_t>{0, 1, 3});
  CHECK(u.expand({2, 0, 1}).device == std::vector<int32_t>{2, 0, 0, 1});
  Placement p{{1, 0, 1, 1}};
  place::enforce_colocation(g, p);
  CHECK(p.device == std::vector<int32_t>{1, 0, 0, 1});
}

TEST_CASE("place/random: best of N, colocation kept, deterministic, within the budget", "[place]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  CostModel cost;
  place::Problem problem(g, c, cost);
  const auto& reg = place::registry();
  auto run = [&](const char* opts, place::Budget b, uint64_t seed) {
    return place::place(place::prepare(reg, "random", nlohmann::json::parse(opts)), problem, b,
                        seed);
  };
  const place::PlaceResult a = run(R"({"samples": 50})", {}, 7);
  CHECK(a.report.samples == 50);
  CHECK(a.report.method == "random");
  CHECK(a.report.options["samples"] == 50);
  // The returned placement is the best it saw, and its step time is what it reported.
  const double t = problem.simulator().step_times({a.placement})[0];
  CHECK(t == a.report.best_step_s);
  REQUIRE_FALSE(a.report.curve.empty());
  for (size_t k = 1; k < a.report.curve.size(); ++k) {
    CHECK(a.report.curve[k].best_step_s < a.report.curve[k - 1].best_step_s);
    CHECK(a.report.curve[k].samples > a.report.curve[k - 1].samples);
  }
  CHECK(a.report.curve.back().best_step_s == a.report.best_step_s);
  // Colocation groups stay together: every sample is valid structurally.
  const place::Units u = place::Units::colocation(g);
  for (int32_t op = 0; op < g.num_ops(); ++op)
    CHECK(a.placement.device[op] == a.placement.device[u.first_op[u.unit_of[op]]]);
  // Same seed, same placement, whatever the batch size; another seed, another search.
  CHECK(run(R"({"samples": 50, "batch": 7})", {}, 7).placement.device == a.placement.device);
  CHECK(run(R"({"samples": 50})", {}, 8).placement.device != a.placement.device);
  // Budgets: the budget caps the option; with no option the budget's samples are used.
  CHECK(run(R"({"samples": 50})", {20, 0}, 7).report.samples == 20);
  CHECK(run(R"({})", {30, 0}, 7).report.samples == 30);
  CHECK(run(R"({})", {}, 7).report.samples == 1000);
  const place::PlaceResult timed = run(R"({})", {0, 0.2}, 7);
  CHECK(timed.report.samples >= 1);
  CHECK(timed.report.wall_s < 30);
}

TEST_CASE("place/run: evaluate counts samples, keeps the best, refuses to exceed the budget",
          "[place]") {
  const Graph g = test::small_colocated_graph();
  const Cluster c = test::full_mesh(2);
  CostModel cost;
  place::Problem problem(g, c, cost);
  place::Run run(problem, "t", place::Budget{3, 0}, 1);
  const std::vector<double> t = run.evaluate({Placement{{0, 0, 0, 0}}, Placement{{0, 1, 0, 0}}});
  CHECK(run.samples() == 2);
  CHECK(std::isinf(t[1]));  // colocation group split
  CHECK(run.best().device == std::vector<int32_t>{0, 0, 0, 0});
  CHECK(run.samples_left() == 1);
  CHECK_THROWS_AS(run.evaluate({Placement{{0, 0, 0, 0}}, Placement{{0, 0, 0, 1}}}),
                  std::logic_error);
  run.count_samples(5);  // outside the budget (heuristics' memory checks)
  CHECK(run.samples() == 7);
  CHECK(run.exhausted());
  std::vector<place::Progress> seen;
  place::Run r2(problem, "t", place::Budget{4, 0}, 1,
                [&](const place::Progress& p) { seen.push_back(p); });
  r2.evaluate(Placement{{0, 0, 0, 1}});
  r2.progress("hello");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].samples == 1);
  CHECK(seen[0].fraction == 0.25);
  CHECK(seen[0].message == "hello");
  CHECK(seen[0].best_step_s == r2.best_step_s());
}

TEST_CASE("place/problem: the caller's cost model reaches the shared simulator", "[place]") {
  Graph g;
  g.name = "flops";
  Op op;
  op.name = "m";
  op.type = "MatMul";
  op.flops = 1e12;
  op.outputs.push_back(TensorSpec{{4}, DType::f32, 16});
  g.add_op(op);
  op.name = "n";
  op.id = 1;
  g.add_op(op);
  g.add_edge(0, 0, 1, 16);
  g.finalize();
  const Cluster c = read_cluster("v100x2-nvlink");
  const CostModel fast;
  const CostModel slow = test::half_efficiency_model();
  place::Problem pf(g, c, fast), ps(g, c, slow);
  const Placement p{{0, 1}};
  CHECK(&pf.simulator() == &pf.simulator());
  CHECK(ps.simulator().step_times({p})[0] != pf.simulator().step_times({p})[0]);
}
