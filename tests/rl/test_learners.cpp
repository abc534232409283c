// The learned baselines in `gdp train` sessions (rl/hdp/learner.cpp, rl/placeto/learner.cpp,
// rl/run/session.h): HDP and Placeto runs are deterministic, a stopped run resumes into the
// uninterrupted one (log, best placements, summary), Placeto trains one policy across a suite and
// places an unseen graph zero-shot from the run, and wrong combinations are clear errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/io.h"
#include "datasets/suite.h"
#include "place/registry.h"
#include "place_helpers.h"
#include "rl/placeto/method.h"
#include "rl/run/session.h"
#include "rl_fixtures.h"
#include "test_paths.h"

using namespace gdp;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

rl::RunSpec hdp_spec(const fs::path& graph_file, int64_t samples) {
  rl::RunSpec s;
  s.method = "hdp";
  s.options = {{"hidden_size", 16}, {"num_groups", 6}, {"num_children", 2}, {"lr", 0.01}};
  s.graph_path = graph_file.string();
  s.cluster = "v100x2-nvlink";
  s.budget.samples = samples;
  s.checkpoint_every = 3;
  s.seed = 7;
  return s;
}

// The first four graphs of the smoke suite, written as a suite of graph files.
fs::path small_suite(const fs::path& dir) {
  fs::create_directories(dir);
  const auto entries = datasets::load_suite(test::source_dir() + "/datasets/suites/smoke.json");
  nlohmann::ordered_json s;
  s["format"] = "gdp-suite";
  s["version"] = 1;
  s["name"] = "learners";
  s["entries"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < 3; ++i) {
    const fs::path f = dir / (entries[i].name + ".json");
    write_graph_file(entries[i].graph, f.string());
    // Devices 2, 4, 2: one policy serves both sizes (device slots masked).
    s["entries"].push_back({{"name", entries[i].name},
                            {"graph", f.string()},
                            {"cluster", i == 1 ? "v100x4-nvlink" : "v100x2-nvlink"}});
  }
  const fs::path p = dir / "suite.json";
  write_text_file_atomic(p.string(), s.dump(1));
  return p;
}

rl::RunSpec placeto_spec(const fs::path& suite, int64_t samples) {
  rl::RunSpec s;
  s.method = "placeto";
  s.options = {{"width", 8}, {"rounds", 2}, {"max_nodes", 20}};
  s.suite_path = suite.string();
  s.budget.samples = samples;
  s.seed = 3;
  return s;
}

}  // namespace

TEST_CASE("rl/session hdp: deterministic, and a stopped run resumes into the uninterrupted one",
          "[rl][hdp]") {
  const fs::path dir = test::fresh_dir("hdp_session");
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  rl::RunSpec s = hdp_spec(graph, 40);
  rl::train(rl::learners(), s, (dir / "full").string());
  rl::train(rl::learners(), s, (dir / "again").string());
  CHECK(test::log_without_wall(dir / "full" / "log.csv") ==
        test::log_without_wall(dir / "again" / "log.csv"));
  CHECK(test::text_of(dir / "full" / "best.json") == test::text_of(dir / "again" / "best.json"));
  s.max_iterations = 7;  // checkpoints at 3, 6 and the stop
  rl::train(rl::learners(), s, (dir / "part").string());
  // A kill after a logged iteration and before its checkpoint: a stale row the resume cuts.
  { std::ofstream(dir / "part" / "log.csv", std::ios::app) << "8,16,0.1,1,1,0,1,1\n"; }
  rl::resume(rl::learners(), (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv") ==
        test::log_without_wall(dir / "full" / "log.csv"));
  CHECK(test::text_of(dir / "part" / "best.json") == test::text_of(dir / "full" / "best.json"));
  const auto sum = nlohmann::json::parse(test::text_of(dir / "full" / "summary.json"));
  CHECK(sum["method"] == "hdp");
  CHECK(sum["samples"] == 40);  // 20 iterations of 2; the reference is not a sample
  CHECK(sum["iterations"] == 20);
  CHECK(sum["reference_method"] == "human");
  CHECK(std::isfinite(sum["best_step_time_s"].get<double>()));
  const auto part = nlohmann::json::parse(test::text_of(dir / "part" / "summary.json"));
  CHECK(part["best_step_time_s"] == sum["best_step_time_s"]);
  CHECK(part["samples_to_best"] == sum["samples_to_best"]);
}

TEST_CASE("rl/session placeto: one policy across a suite, resume, zero-shot on an unseen graph",
          "[rl][placeto]") {
  const fs::path dir = test::fresh_dir("placeto_session");
  const fs::path suite = small_suite(dir / "graphs");
  rl::RunSpec s = placeto_spec(suite, 300);
  rl::train(rl::learners(), s, (dir / "full").string());
  s.max_iterations = 2;
  rl::train(rl::learners(), s, (dir / "part").string());
  rl::resume(rl::learners(), (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv", 3) ==
        test::log_without_wall(dir / "full" / "log.csv", 3));
  for (const auto& f : fs::directory_iterator(dir / "full"))
    if (f.path().filename().string().rfind("best-", 0) == 0)
      CHECK(test::text_of(f.path()) == test::text_of(dir / "part" / f.path().filename()));
  const auto sum = nlohmann::json::parse(test::text_of(dir / "full" / "summary.json"));
  CHECK(sum["method"] == "placeto");
  CHECK(sum["graphs"].size() == 3);
  CHECK(sum["samples"].get<int64_t>() <= 300);
  CHECK(sum["iterations"].get<int64_t>() >= 2);
  const auto cfg = nlohmann::json::parse(test::text_of(dir / "full" / "config.json"));
  CHECK(cfg["options"]["max_devices"] == 4);  // the largest cluster's

  // The run's policy places a graph it never saw (the smoke suite's fifth), on 4 devices.
  rl::placeto::TrainConfig trained;
  const auto policy = rl::load_placeto_policy((dir / "full").string(), &trained);
  CHECK(policy->num_devices() == 4);
  const auto entries = datasets::load_suite(test::source_dir() + "/datasets/suites/smoke.json");
  const Graph& unseen = entries[4].graph;
  const Cluster c4 = read_cluster("v100x4-nvlink");
  const nlohmann::json zs = {{"checkpoint", (dir / "full").string()}, {"samples", 3}};
  const place::PlaceResult a =
      test::run_method(test::rl_registry(), "placeto", unseen, c4, 100, 1, zs);
  const place::PlaceResult b =
      test::run_method(test::rl_registry(), "placeto", unseen, c4, 100, 1, zs);
  CHECK(a.report.samples == 4);  // greedy + 3 sampled, no training
  CHECK(std::isfinite(a.report.best_step_s));
  CHECK(a.placement.device == b.placement.device);
  CHECK_THAT(a.report.note, Contains("zero-shot"));
  for (int32_t d : a.placement.device) CHECK((d >= 0 && d < 4));
  // More devices than the policy's slots: a clear error.
  const Cluster c8 = read_cluster("v100x8-nvlink");
  CHECK_THAT(test::error_of(
                 [&] { test::run_method(test::rl_registry(), "placeto", unseen, c8, 10, 1, zs); }),
             Contains("device slots"));
}

TEST_CASE("rl/session: wrong methods, options and runs are clear errors", "[rl]") {
  const fs::path dir = test::fresh_dir("learner_errors");
  const fs::path suite = small_suite(dir / "graphs");
  rl::RunSpec s = placeto_spec(suite, 100);
  s.method = "hdp";
  s.options = nlohmann::json::object();
  CHECK_THAT(test::error_of([&] { rl::train(rl::learners(), s, (dir / "a").string()); }),
             Contains("HDP trains on one graph"));
  CHECK_FALSE(fs::exists(dir / "a" / "config.json"));
  s = placeto_spec(suite, 100);
  s.options["widht"] = 3;
  CHECK_THAT(test::error_of([&] { rl::train(rl::learners(), s, (dir / "b").string()); }),
             Contains("widht"));
  CHECK_FALSE(fs::exists(dir / "b"));
  s = placeto_spec(suite, 100);
  s.options["checkpoint"] = "x";
  CHECK_THAT(test::error_of([&] { rl::train(rl::learners(), s, (dir / "c").string()); }),
             Contains("options.checkpoint"));
  s = placeto_spec(suite, 60);
  s.max_iterations = 1;
  rl::train(rl::learners(), s, (dir / "d").string());
  CHECK_THAT(test::error_of([&] { rl::load_policy((dir / "d").string()); }),
             Contains("a GDP policy was expected"));
  CHECK_THAT(test::error_of([&] { rl::train(rl::learners(), s, (dir / "d").string()); }),
             Contains("holds a training run already"));
}
