// GDP's policy from a training run, and its learner for `gdp train` (rl/gdp/load.h,
// rl/gdp/trainer.h gdp_learner).
#include "rl/gdp/load.h"

#include "core/error.h"
#include "rl/gdp/method.h"
#include "rl/gdp/trainer.h"

namespace gdp::rl {

namespace {

const std::vector<std::string> kConfigKeys = {"train", "vocabulary"};

}  // namespace

nlohmann::json stored_train_json(const RunConfig& c) {
  nlohmann::json train = c.sj.object(c.json, "train", "");
  if (!train.contains("regime")) train["regime"] = "search";  // before the regimes
  if (!train.contains("elite")) {
    train["elite"] = {{"size", 0}};
    train["explore"] = {{"local_fraction", 0}};
    train["warm_start"] = nlohmann::json::array();
    train["ppo"]["baseline"] = "mean";
  }
  return train;
}

std::unique_ptr<Policy> load_policy(const std::string& path) {
  const RunPath rp = resolve_run_path(path);
  const RunConfig c = read_run_config(rp.dir);
  if (c.spec.method != "gdp")
    throw InputError(c.path + ": method: a GDP policy was expected; this run trained '" +
                     c.spec.method + "'");
  check_method_keys(c, kConfigKeys);
  const TrainConfig config = TrainConfig::from_json(stored_train_json(c), c.path + ": train");
  auto policy = std::make_unique<Policy>(
      config.policy,
      OpVocabulary::from_json(c.sj.object(c.json, "vocabulary", ""), c.path + ": vocabulary"),
      c.spec.seed);
  load_parameters(rp.dir, policy->params(), rp.bin);
  return policy;
}

LearnerMethod gdp_learner() {
  LearnerMethod m;
  m.name = "gdp";
  m.summary = "GDP: GraphSAGE + segment-recurrent attention + superposition, PPO";
  m.options_flag = "--config";
  m.config_keys = kConfigKeys;
  m.data_parallel = true;
  m.stored_options = [](const RunConfig& c) { return stored_train_json(c); };
  m.make = [](const LearnerArgs& a) -> std::unique_ptr<Learner> {
    // Pre-training on a suite defaults to the transfer regime, one graph to the search regime;
    // the options' "regime" key overrides either.
    const TrainConfig config = TrainConfig::from_json(
        a.spec.options, a.source, a.spec.suite_path.empty() ? "search" : "transfer");
    std::unique_ptr<Policy> init;
    if (!a.spec.init_dir.empty()) init = load_policy(a.spec.init_dir);
    auto t = std::make_unique<Trainer>(config, a.graphs, a.cost, a.spec.seed, init.get(),
                                       device_of(a.spec));
    t->distribute();  // data-parallel under mpirun (core/mpi.h)
    return t;
  };
  return m;
}

}  // namespace gdp::rl
