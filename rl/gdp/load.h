// A trained GDP policy read back from its training run (rl/run/run_dir.h), for zero-shot
// placement, fine-tuning and guided annealing (the place methods "gdp" and "gdp-anneal").
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rl/gdp/policy.h"
#include "rl/run/run_dir.h"

namespace gdp::rl {

// The policy of a GDP training DIR (config.json + its checkpoint), or of one of its
// checkpoint files (DIR/ckpt-N.bin). A path that is neither is an InputError that says a run
// directory was expected; a run of another method, an InputError naming it.
std::unique_ptr<Policy> load_policy(const std::string& path);

// The "train" object of a GDP run's config.json, as a TrainConfig JSON. A run written before
// the trainer's levers (no "elite" key) continues as it was trained: the keys it lacks take
// their pre-lever values, not today's defaults.
nlohmann::json stored_train_json(const RunConfig& c);
// The keys of config.json a GDP run owns: "train" and "vocabulary".
const std::vector<std::string>& gdp_config_keys();

}  // namespace gdp::rl
