// A training run on disk (`gdp train`), whatever the method: what it trains on, where it
// writes, and how it resumes. The learner comes from a LearnerRegistry (rl/run/registry.h;
// rl/methods.h has the project's). Layout of DIR:
//   config.json      the run's settings (rl/run/run_dir.h) and the method's resolved
//                    configuration (its Learner::config_json keys)
//   log.csv          one row per iteration and graph (columns: rl/run/stats.h)
//   best.json        the best placement (one graph); best-<graph>.json per graph (a suite)
//   state.json + ckpt-<iteration>.bin   the checkpoint (rl/run/learner.h FramedLearner),
//                    written atomically
//   summary.json     best and reference step times, samples, wall time, samples and seconds
//                    to the best, per graph
// A resumed run (`--resume DIR`) cuts the log back to the checkpoint and continues the same
// stream: its best.json and log rows (all but the wall-clock columns) equal an uninterrupted
// run's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rl/run/learner.h"
#include "rl/run/registry.h"
#include "rl/run/run_dir.h"

namespace gdp::rl {

// One line per iteration for the console.
using IterationFn = std::function<void(const std::vector<IterationStats>&, const Learner&)>;

// Starts a run in `dir` (created; an existing run there is an error: resume it instead).
void train(const LearnerRegistry& learners, const RunSpec& spec, const std::string& dir,
           const IterationFn& on_iteration = {});
// Continues the run in `dir` from its checkpoint to its budget (or at most `max_iterations`
// more, when positive). No budget given at the start: 5,000 samples per graph.
void resume(const LearnerRegistry& learners, const std::string& dir,
            const IterationFn& on_iteration = {}, int64_t max_iterations = 0);

// "cpu" or "cuda"; cuda without a visible GPU (or a build without CUDA) is an InputError.
void check_device(const std::string& device);

}  // namespace gdp::rl
