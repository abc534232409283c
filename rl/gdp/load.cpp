// GDP's policy from a training run (rl/gdp/load.h).
#include "rl/gdp/load.h"

#include "core/error.h"
#include "rl/gdp/config.h"

namespace gdp::rl {

const std::vector<std::string>& gdp_config_keys() {
  static const std::vector<std::string> k = {"train", "vocabulary"};
  return k;
}

nlohmann::json stored_train_json(const RunConfig& c) {
  nlohmann::json train = c.sj.object(c.json, "train", "");
  if (!train.contains("regime")) train["regime"] = "search";  // before the regimes
  if (!train.contains("elite")) {
    train["elite"] = {{"size", 0}};
    train["explore"] = {{"local_fraction", 0}};
    train["warm_start"] = nlohmann::json::array();
    train["ppo"]["baseline"] = "mean";
  }
  // Before the devices-used decision: a run without the key has no such row, whatever its
  // regime's preset now says.
  if (!train.contains("policy") || !train["policy"].contains("devices_used"))
    train["policy"]["devices_used"] = false;
  return train;
}

std::unique_ptr<Policy> load_policy(const std::string& path) {
  const RunPath rp = resolve_run_path(path);
  const RunConfig c = read_method_run(rp.dir, "gdp", "GDP", gdp_config_keys());
  const std::string& file = c.sj.source();
  const TrainConfig config = TrainConfig::from_json(stored_train_json(c), file + ": train");
  auto policy = std::make_unique<Policy>(
      config.policy,
      OpVocabulary::from_json(c.sj.object(c.json, "vocabulary", ""), file + ": vocabulary"),
      c.spec.seed);
  load_parameters(rp.dir, policy->params(), rp.bin);
  return policy;
}

}  // namespace gdp::rl
