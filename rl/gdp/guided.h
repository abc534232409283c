// A GDP policy steering annealing (gdp-anneal, and the trainer's expert-iteration step):
// its per-unit device distribution becomes the anneal guide (place/anneal.h), its greedy
// placement and samples become starts.
#pragma once

#include <cstdint>
#include <string>

#include "nn/tensor.h"
#include "place/anneal.h"
#include "rl/gdp/policy.h"

namespace gdp::rl {

// The policy's per-unit device distribution as an anneal guide: softmax of unit logits (U, A)
// (masked columns 0), relative to unit 0's device when `anchored`.
place::AnnealGuide guide_of(const nn::Tensor& logits, bool anchored, double mix);

// gdp-anneal's plan on run.problem(): the guide (mix), and as starts the greedy placement and
// `samples` samples drawn with a stream from run.seed() (fewer when the budget leaves less
// than 8 samples after them). `label` names the policy in the note. `units` must be the
// policy's units (colocation units; std::logic_error otherwise).
place::GuidePlan policy_plan(const Policy& policy, place::Run& run, const place::Units& units,
                             int64_t samples, double mix, const std::string& label);

}  // namespace gdp::rl
