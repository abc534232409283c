// Zero-shot placement: reading a trained policy on a graph it has never seen, with no update.
// Every candidate comes from the network's outputs (each reading's greedy placement, read at
// other device counts, and samples), every one simulated through the run and counted. Used by
// the place method "gdp" (rl/gdp/method.cpp) and by fine-tuning, whose elites start from the
// candidates (Trainer, TrainConfig::fine_tune_seeds and fine_tune_zero_shot).
#pragma once

#include <string>
#include <vector>

#include "place/run.h"
#include "rl/gdp/config.h"  // ZeroShotOptions
#include "rl/gdp/policy.h"

namespace gdp::rl {

struct ZeroShotResult {
  std::vector<Placement> candidates;  // in the order simulated (a repaired one not included)
  std::vector<double> step_s;         // each candidate's step time (inf: out of memory)
  std::string note;                   // where the best came from, and how many were valid
};

// The candidates of `policy` on the run's problem, each simulated through `run` (counted; a
// budget too small for every reading's greedy placement keeps the first readings). When none is
// valid, the greedy placement and then the candidates in order are repaired (place/repair.h,
// every simulation counted) until one fits. The run's best is the result.
// `also`, when given, is a second trained policy whose readings (all of them) add their greedy
// placements and their device counts to the candidates, in place of as many samples; they
// draw no samples (ZeroShotOptions::also names its checkpoint for the note).
ZeroShotResult zero_shot(place::Run& run, const Policy& policy, const ZeroShotOptions& o,
                         const Policy* also = nullptr);

}  // namespace gdp::rl
