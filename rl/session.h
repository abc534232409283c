// A training run on disk (`gdp train`): what it trains on, where it writes, and how it
// resumes. The learner is GDP's PPO trainer (method "gdp", rl/gdp/trainer.h) or a learned baseline
// ("hdp", "placeto": rl/learners.h); all three share this layout. Layout of DIR:
//   config.json      the resolved configuration: method, its options (hdp, placeto) or the
//                    training and policy config and op vocabulary (gdp), seed, graphs (files or
//                    a suite), cluster, cost profile, budget, init
//   log.csv          one row per iteration and graph
//   best.json        the best placement (GDP-one); best-<graph>.json per graph (GDP-batch)
//   state.json + ckpt-<iteration>.bin   the checkpoint (rl/gdp/trainer.h), written atomically
//   summary.json     best and reference step times, samples, wall time, samples and seconds
//                    to the best, per graph
// A resumed run (`--resume DIR`) cuts the log back to the checkpoint and continues the same
// stream: its best.json and log rows (all but the wall-clock columns) equal an uninterrupted
// run's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "place/run.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/trainer.h"
#include "rl/learner.h"
#include "rl/placeto/placeto.h"

namespace gdp::rl {

struct SessionSpec {
  std::string method = "gdp";  // "gdp", "hdp" or "placeto"
  // hdp, placeto: the method's options (place/ registry: checked, defaults filled in).
  nlohmann::json options = nlohmann::json::object();
  // Iterations between checkpoints; -1: the learner's default (gdp: its TrainConfig's; hdp:
  // 100 iterations; placeto: every iteration, an episode per graph).
  int32_t checkpoint_every = -1;
  // Either one graph and a cluster (GDP-one), or a suite (GDP-batch: every entry).
  std::string graph_path;
  std::string cluster;  // preset or file
  std::string suite_path;
  std::string profile_path;  // device profile for the cost model ("" = built-in)
  std::string init_dir;      // a training DIR whose policy starts this run (fine-tuning)
  TrainConfig config;
  place::Budget budget;  // samples over all graphs, seconds
  uint64_t seed = 1;
  std::string device = "cpu";  // "cpu" or "cuda"
  int64_t max_iterations = 0;  // > 0: also stop after this many iterations (tests, experiments)
};

// One line per iteration for the console.
using IterationFn = std::function<void(const std::vector<IterationStats>&, const Learner&)>;

// Starts a run in `dir` (created; an existing run there is an error: resume it instead).
void train(const SessionSpec& spec, const std::string& dir, const IterationFn& on_iteration = {});
// Continues the run in `dir` from its checkpoint to its budget (or at most `max_iterations`
// more, when positive). No budget given at the start: 5,000 samples per graph.
void resume(const std::string& dir, const IterationFn& on_iteration = {},
            int64_t max_iterations = 0);

// The policy of a GDP training DIR (config.json + its checkpoint), for zero-shot placement and
// fine-tuning; or of one of its checkpoint files (DIR/ckpt-N.bin). A path that is neither is an
// InputError that says a run directory was expected.
std::unique_ptr<Policy> load_policy(const std::string& path);
// The policy of a Placeto training DIR (`gdp train --method placeto`), for zero-shot placement;
// *config gets its training configuration.
std::unique_ptr<placeto::PlacetoPolicy> load_placeto_policy(const std::string& dir,
                                                            placeto::TrainConfig* config);

// "cpu" or "cuda"; cuda without a visible GPU (or a build without CUDA) is an InputError.
void check_device(const std::string& device);

}  // namespace gdp::rl
