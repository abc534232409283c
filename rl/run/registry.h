// The learned methods `gdp train` can run, by name, in the style of place/registry.h: each
// method folder (rl/gdp, rl/hdp, rl/placeto) describes its learner in a LearnerMethod, and
// rl/methods.cpp registers each with one line. The run layer (rl/run/session.h) finds a method
// here and never names one.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rl/run/learner.h"
#include "rl/run/run_dir.h"
#include "sim/cost_model.h"

namespace gdp::rl {

// What a learner is built from.
struct LearnerArgs {
  const RunSpec& spec;  // its options: the user's (a new run) or the stored ones (resume)
  std::vector<TrainGraph> graphs;
  const CostModel& cost;
  std::string source;  // where the options came from, for messages
};

struct LearnerMethod {
  std::string name;
  // The command-line flag that gives the options (`gdp train --config F` or `--options O`).
  std::string options_flag = "--options";
  // The keys of config.json the method owns (Learner::config_json writes them).
  std::vector<std::string> config_keys;
  // Trains data-parallel under mpirun (core/mpi.h); else one process only.
  bool data_parallel = false;
  // The options a stored config.json holds, for resume (from its method keys).
  std::function<nlohmann::json(const RunConfig&)> stored_options;
  // Builds the learner; InputError naming args.source on bad options.
  std::function<std::unique_ptr<Learner>(const LearnerArgs&)> make;
};

class LearnerRegistry {
 public:
  void add(LearnerMethod m);  // std::logic_error on a duplicate name
  // InputError naming `source` and listing the methods when `name` is unknown.
  const LearnerMethod& find(const std::string& name, const std::string& source) const;
  bool has(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::vector<LearnerMethod>& methods() const { return methods_; }

 private:
  std::vector<LearnerMethod> methods_;
};

}  // namespace gdp::rl
