// Expert iteration in the GDP trainer (rl/gdp/trainer.h ExpertConfig): a short guided anneal per
// graph and iteration whose best joins the elites. It resumes to the uninterrupted run, counts
// its samples in the budget, and its search improves on what the samples alone find.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "core/io.h"
#include "place_helpers.h"
#include "rl/gdp/trainer.h"
#include "rl/run/session.h"
#include "rl_fixtures.h"

using namespace gdp;
using namespace gdp::test;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

rl::TrainConfig expert_config(int32_t anneal_samples) {
  rl::TrainConfig c = test::tiny_config();
  c.elite.size = 2;
  c.explore.local_fraction = 0.5;
  c.expert.anneal_samples = anneal_samples;
  c.checkpoint_every = 2;
  return c;
}

void write_suite(const fs::path& p) {
  std::ofstream(p) << R"({"format": "gdp-suite", "version": 1, "name": "two",
    "entries": [
      {"name": "rnn", "model": "rnnlm", "options": {"layers": 2, "batch": 4, "seq_len": 4, "hidden": 32, "vocab": 50}, "cluster": "v100x2-nvlink"},
      {"name": "wave", "model": "wavenet", "options": {"stacks": 1, "batch": 1, "seq_len": 64, "hidden": 8}, "cluster": "v100x4-nvlink"}
    ]})";
}

}  // namespace

TEST_CASE("rl/expert iteration over a suite resumes to the uninterrupted run", "[rl][expert]") {
  const fs::path dir = fresh_dir("expert_resume");
  fs::create_directories(dir);
  write_suite(dir / "suite.json");
  rl::RunSpec s;
  s.suite_path = (dir / "suite.json").string();
  s.options = expert_config(16).to_json();
  s.budget.samples = 2 + 5 * 2 * (8 + 17);  // the references, then 5 iterations
  s.seed = 4;
  rl::train(rl::learners(), s, (dir / "full").string());
  s.max_iterations = 3;
  rl::train(rl::learners(), s, (dir / "part").string());
  rl::resume(rl::learners(), (dir / "part").string());
  CHECK(log_without_wall(dir / "part" / "log.csv", 3) ==
        log_without_wall(dir / "full" / "log.csv", 3));
  for (const char* f : {"best-rnn.json", "best-wave.json"})
    CHECK(text_of(dir / "part" / f) == text_of(dir / "full" / f));
  const auto sum = nlohmann::json::parse(text_of(dir / "full" / "summary.json"));
  CHECK(sum["samples"].get<int64_t>() <= s.budget.samples);
  // The state keeps each graph's calibrated search temperature.
  CHECK_THAT(text_of(dir / "full" / "state.json"), Contains("anneal_t0"));
  // Each row counts the search's samples (16 proposals and a critical path) with the 4 local
  // (then the counterfactual columns, nan without probes).
  CHECK(text_of(dir / "full" / "log.csv").find(",21,nan,nan\n") != std::string::npos);
}

TEST_CASE("rl/expert iteration: the search's best joins the elites and beats the samples alone",
          "[rl][expert]") {
  const Graph g = test::small_rnnlm();
  const Cluster c = read_cluster("v100x4-nvlink");
  auto best_after = [&](int32_t anneal, int iterations) {
    rl::Trainer t(expert_config(anneal), {{"rnn", &g, &c, nullptr}}, CostModel(), 9);
    for (int i = 0; i < iterations; ++i) t.step();
    return t.run(0).best_step_s();
  };
  // At an equal number of samples (8 per iteration without; 8 + 65 with): the searched run is
  // at least as good, and strictly better here.
  const double searched = best_after(64, 4);
  const double plain = best_after(0, (4 * (8 + 65)) / 8);
  INFO("expert " << searched << " s, plain " << plain << " s");
  CHECK(searched < plain);
  // Off by default, and its keys are checked.
  CHECK(rl::TrainConfig().expert.anneal_samples == 0);
  CHECK_THAT(
      error_of([] {
        rl::TrainConfig::from_json(
            nlohmann::json::parse(R"({"elite": {"size": 0}, "expert": {"anneal_samples": 8}})"),
            "t.json");
      }),
      Contains("t.json: expert") && Contains("elite.size"));
  CHECK_THAT(error_of([] {
               rl::TrainConfig::from_json(nlohmann::json::parse(R"({"expert": {"mixx": 1}})"),
                                          "t.json");
             }),
             Contains("mixx"));
}
