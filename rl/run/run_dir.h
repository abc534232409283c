// A training run's directory (`gdp train --out DIR`) as the run layer sees it, whatever the
// method: the run's own settings (RunSpec) in DIR/config.json, beside keys the method owns, and
// the parameters of its last checkpoint. rl/run/session.h writes and resumes runs; a method's
// loader (rl/gdp/load.h, rl/placeto/learner.cpp) reads its trained policy back through this.
//   config.json  {format "gdp-train-run", version 1, method, graph, cluster, suite, profile,
//                 init, seed, device, budget {samples, seconds}, max_iterations,
//                 checkpoint_every, and the method's keys (gdp: train, vocabulary; hdp,
//                 placeto: options)}
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_strict.h"
#include "nn/parameters.h"
#include "nn/tensor.h"
#include "place/run.h"

namespace gdp::rl {

// What a run trains on and how (the method's own configuration is `options`, opaque here).
struct RunSpec {
  std::string method = "gdp";  // a learner's name (rl/run/registry.h)
  // The method's configuration as the user gave it (gdp: a TrainConfig JSON; hdp, placeto:
  // their place/ options). The method checks it and fills in its defaults.
  nlohmann::json options = nlohmann::json::object();
  std::string options_source;  // where options came from, for messages ("" = "train")
  // Iterations between checkpoints; -1: the learner's default.
  int32_t checkpoint_every = -1;
  // Either one graph and a cluster (GDP-one), or a suite (GDP-batch: every entry).
  std::string graph_path;
  std::string cluster;  // preset or file
  std::string suite_path;
  std::string profile_path;  // device profile for the cost model ("" = built-in)
  std::string init_dir;      // a training DIR whose policy starts this run (fine-tuning)
  place::Budget budget;      // samples over all graphs, seconds
  uint64_t seed = 1;
  std::string device = "cpu";  // "cpu" or "cuda"
  int64_t max_iterations = 0;  // > 0: also stop after this many iterations (tests, experiments)
};

// Where the learner's network runs: spec.device ("cpu" or "cuda").
inline nn::Device device_of(const RunSpec& s) {
  return s.device == "cuda" ? nn::Device::cuda : nn::Device::cpu;
}

// config.json's run keys (the method's keys are added by its learner: Learner::config_json).
nlohmann::ordered_json run_spec_to_json(const RunSpec& s);

// A run's config.json, read: the run keys parsed into `spec` (its options left empty), the whole
// document in `json`, and a StrictJson (whose source() is the file's path) for the method's keys.
struct RunConfig {
  RunSpec spec;
  nlohmann::json json;
  StrictJson sj;
};
// `dir` must be a run directory: InputError saying a `gdp train --out` directory was expected
// otherwise. Keys other than the run's are left to check_method_keys.
RunConfig read_run_config(const std::string& dir);
// Every key of the document is a run key or one of `method_keys`.
void check_method_keys(const RunConfig& c, const std::vector<std::string>& method_keys);
// A run of `method` (its config.json read and its keys checked), for loading its trained policy:
// InputError "a <what> policy was expected; this run trained '<other>'" otherwise.
RunConfig read_method_run(const std::string& dir, const std::string& method, const char* what,
                          const std::vector<std::string>& method_keys);
// The "options" key of a run whose learner is configured by place options (RunLearner writes
// it: HDP, Placeto).
nlohmann::json stored_place_options(const RunConfig& c);

// A run directory, or one of its checkpoint files (DIR/ckpt-N.bin): the directory, and the .bin
// to load ("" = the one the run's state.json names). InputError when `path` is neither.
struct RunPath {
  std::string dir, bin;
};
RunPath resolve_run_path(const std::string& path);
// The parameters of the run's checkpoint (state.json names it, or `bin`) into `params`;
// InputError "the checkpoint does not fit this policy" when the shapes differ.
void load_parameters(const std::string& dir, nn::ParameterBuffer& params,
                     const std::string& bin = "");

}  // namespace gdp::rl
