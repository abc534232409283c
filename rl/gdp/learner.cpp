// GDP's learner for `gdp train` (rl/gdp/method.h gdp_learner): PPO over a TrainConfig
// (rl/gdp/trainer.h), from scratch or from an init run's policy (fine-tuning), data-parallel
// under mpirun.
#include "rl/gdp/load.h"
#include "rl/gdp/method.h"
#include "rl/gdp/trainer.h"

namespace gdp::rl {

LearnerMethod gdp_learner() {
  LearnerMethod m;
  m.name = "gdp";
  m.options_flag = "--config";
  m.config_keys = gdp_config_keys();
  m.data_parallel = true;
  m.stored_options = stored_train_json;
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
