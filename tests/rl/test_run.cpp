// The run layer (rl/run/) knows no method: a learner it has never heard of, defined here and
// registered in a registry of its own, gets the whole of `gdp train`'s run (config.json with its
// own keys, log, best placement, checkpoint frame, resume, summary) without a line of rl/
// changing. Also the statistics table and the learner registry's errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/io.h"
#include "core/rng.h"
#include "place/units.h"
#include "place_helpers.h"
#include "rl/run/registry.h"
#include "rl/run/session.h"
#include "rl/run/stats.h"
#include "rl_fixtures.h"

using namespace gdp;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// Uniform random search as a learner: each iteration simulates `k` placements drawn uniformly.
// Its state: the stream (in state.json) and a byte count in its .bin.
class UniformLearner : public rl::RunLearner {
 public:
  UniformLearner(int32_t k, std::vector<rl::TrainGraph> graphs, const CostModel& cost,
                 uint64_t seed)
      : RunLearner(std::move(graphs), cost, "uniform", seed, 2), k_(k), rng_(seed) {}

  std::vector<rl::IterationStats> step() override {
    ++iteration_;
    std::vector<rl::IterationStats> rows;
    for (size_t i = 0; i < graphs_.size(); ++i) {
      place::Run& run = *graphs_[i].run;
      const int32_t N = run.problem().graph().num_ops(), D = run.problem().num_devices();
      std::vector<Placement> ps(static_cast<size_t>(k_));
      for (Placement& p : ps)
        for (int32_t v = 0; v < N; ++v)
          p.device.push_back(static_cast<int32_t>(rng_.below(static_cast<uint64_t>(D))));
      for (Placement& p : ps) place::enforce_colocation(run.problem().graph(), p);
      const std::vector<double> t = run.evaluate(ps);
      rl::IterationStats r = row(i);
      double sum = 0;
      int valid = 0;
      for (double x : t)
        if (std::isfinite(x)) sum += x, ++valid;
      r.mean_step_s = valid ? sum / valid : std::numeric_limits<double>::infinity();
      r.invalid_frac = 1.0 - static_cast<double>(valid) / k_;
      rows.push_back(r);
    }
    return rows;
  }
  bool done(const place::Budget& b) const override {
    return b.samples > 0 && total_samples() + k_ * static_cast<int64_t>(graphs_.size()) > b.samples;
  }
  nlohmann::ordered_json config_json() const override {
    nlohmann::ordered_json j;
    j["uniform"] = {{"k", k_}};
    return j;
  }

 private:
  nlohmann::ordered_json save_agent(const std::string& bin) const override {
    std::ofstream(bin) << "uniform " << iteration_ << "\n";
    return {{"rng", rng_.state()}};
  }
  void load_agent(const nlohmann::json& j, const std::string& bin,
                  const std::string& source) override {
    if (!fs::exists(bin)) throw InputError(source + ": " + bin + " is missing");
    if (!rng_.set_state(j.at("rng").get<std::string>()))
      throw InputError(source + ": model.rng: expected a generator state");
  }

  int32_t k_;
  Rng rng_;
};

rl::LearnerRegistry uniform_registry() {
  rl::LearnerRegistry r;
  rl::LearnerMethod m;
  m.name = "uniform";
  m.config_keys = {"uniform"};
  m.stored_options = [](const rl::RunConfig& c) { return c.sj.object(c.json, "uniform", ""); };
  m.make = [](const rl::LearnerArgs& a) -> std::unique_ptr<rl::Learner> {
    const int32_t k = a.spec.options.value("k", 4);
    if (k < 1) throw InputError(a.source + ": k: expected >= 1");
    return std::make_unique<UniformLearner>(k, a.graphs, a.cost, a.spec.seed);
  };
  r.add(m);
  return r;
}

}  // namespace

TEST_CASE("rl/run: a learner the run layer never heard of trains, checkpoints and resumes",
          "[rl]") {
  const fs::path dir = test::fresh_dir("run_layer");
  fs::create_directories(dir);
  const fs::path graph = dir / "g.json";
  write_graph_file(test::small_rnnlm(), graph.string());
  const rl::LearnerRegistry reg = uniform_registry();
  rl::RunSpec s;
  s.method = "uniform";
  s.options = {{"k", 3}};
  s.graph_path = graph.string();
  s.cluster = "v100x2-nvlink";
  s.budget.samples = 30;
  s.seed = 11;
  rl::train(reg, s, (dir / "full").string());
  const auto config = nlohmann::json::parse(test::text_of(dir / "full" / "config.json"));
  CHECK(config["method"] == "uniform");
  CHECK(config["uniform"]["k"] == 3);
  const auto sum = nlohmann::json::parse(test::text_of(dir / "full" / "summary.json"));
  CHECK(sum["samples"] == 30);
  CHECK(sum["iterations"] == 10);
  CHECK(fs::exists(dir / "full" / "best.json"));
  CHECK(fs::exists(dir / "full" / "ckpt-10.bin"));
  // Stopped after 3 iterations (checkpoints at 2 and at the stop), resumed to the budget: the
  // same log rows and best placement as the uninterrupted run.
  s.max_iterations = 3;
  rl::train(reg, s, (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv") !=
        test::log_without_wall(dir / "full" / "log.csv"));
  rl::resume(reg, (dir / "part").string());
  CHECK(test::log_without_wall(dir / "part" / "log.csv") ==
        test::log_without_wall(dir / "full" / "log.csv"));
  CHECK(test::text_of(dir / "part" / "best.json") == test::text_of(dir / "full" / "best.json"));
  // The project's registry does not know it, and says which methods it does know.
  CHECK_THAT(test::error_of([&] { rl::resume(rl::learners(), (dir / "part").string()); }),
             Contains("expected one of gdp, hdp, placeto") && Contains("'uniform'"));
  // Its own options are checked by its own code.
  s.options = {{"k", 0}};
  CHECK_THAT(test::error_of([&] { rl::train(reg, s, (dir / "bad").string()); }),
             Contains("k: expected >= 1"));
  CHECK_FALSE(fs::exists(dir / "bad" / "config.json"));
}

TEST_CASE("rl/run stats: one table gives the log's columns and the ranks' exchange", "[rl]") {
  CHECK(rl::log_header(false).rfind("iteration,samples,wall_s,best_step_s,", 0) == 0);
  CHECK(rl::log_header(true).rfind("iteration,graph,samples,", 0) == 0);
  CHECK(rl::stats_width() == rl::stat_fields().size() + 1);
  rl::IterationStats r;
  r.iteration = 7;
  r.graph = "g";
  r.samples = 123;
  r.wall_s = 1.5;
  r.best_step_s = std::numeric_limits<double>::infinity();
  r.signal_t = 0.25;
  r.local_samples = 4;
  r.cf_agree = 0.5;
  std::vector<double> x(rl::stats_width());
  rl::pack_stats(r, x.data());
  rl::IterationStats back;
  back.graph = "g";
  rl::unpack_stats(x.data(), back);
  CHECK(rl::log_row(back, true) == rl::log_row(r, true));
  CHECK(rl::log_row(r, false) ==
        "7,123,1.5,inf,0,0,0,0,nan,0.25,nan,0,0,nan,nan,nan,nan,nan,4,nan,0.5\n");
  // Every column of the header has a value in a row.
  const std::string h = rl::log_header(true), row = rl::log_row(r, true);
  CHECK(std::count(h.begin(), h.end(), ',') == std::count(row.begin(), row.end(), ','));
}

TEST_CASE("rl/run registry: duplicates and unknown names", "[rl]") {
  rl::LearnerRegistry r = uniform_registry();
  CHECK(r.has("uniform"));
  CHECK_FALSE(r.has("gdp"));
  CHECK_THROWS_AS(r.add(r.find("uniform", "test")), std::logic_error);
  CHECK_THAT(test::error_of([&] { r.find("nope", "somewhere"); }),
             Contains("somewhere: method: expected one of uniform, got 'nope'"));
  // The project's: one line each in rl/methods.cpp.
  CHECK(rl::learners().names() == std::vector<std::string>{"gdp", "hdp", "placeto"});
  CHECK(rl::learners().find("gdp", "t").data_parallel);
  CHECK(rl::learners().find("gdp", "t").options_flag == "--config");
}
