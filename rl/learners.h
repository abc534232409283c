// The learned baselines as rl::Learner (rl/learner.h), for `gdp train --method hdp|placeto`:
// the same session (config.json, log.csv, best placements, checkpoints, --resume,
// summary.json) as GDP's PPO trainer.
//   hdp:     one graph (HDP is transductive: the grouper and placer are sized by the graph);
//            an iteration is one REINFORCE update of num_children placements.
//   placeto: one graph or a suite (one policy across graphs: Placeto is inductive); an
//            iteration is one training episode on every graph.
// Neither simulates the reference placement as a sample (GDP's keep_reference): both start
// from their own policy, as in their papers; the reference is simulated outside the budget for
// the summary's speed-up only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/tensor.h"
#include "place/run.h"
#include "rl/hdp/hdp.h"
#include "rl/learner.h"
#include "rl/placeto/placeto.h"
#include "sim/cost_model.h"

namespace gdp::rl {

// checkpoint_every: iterations between checkpoints (0: only at the end).
std::unique_ptr<Learner> make_hdp_learner(const HdpConfig& config, std::vector<TrainGraph> graphs,
                                          const CostModel& cost, uint64_t seed, nn::Device device,
                                          int32_t checkpoint_every);

// `budget` sizes each graph's node limit (max_nodes lowered so that min_episodes episodes of
// every graph fit its share of a sample budget). `init`: start from a trained policy.
std::unique_ptr<Learner> make_placeto_learner(const placeto::TrainConfig& config,
                                              std::vector<TrainGraph> graphs, const CostModel& cost,
                                              uint64_t seed, nn::Device device,
                                              const place::Budget& budget, int32_t checkpoint_every,
                                              const placeto::PlacetoPolicy* init = nullptr);

// The device slots a Placeto policy needs for these graphs: config.max_devices, else the
// largest cluster's device count.
int32_t placeto_slots(const placeto::TrainConfig& config, const std::vector<TrainGraph>& graphs);

}  // namespace gdp::rl
