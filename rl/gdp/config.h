// The configuration of GDP's PPO trainer (rl/gdp/trainer.h): the training loop's knobs, the
// levers of the search regime and the named regimes whose defaults they start from
// (docs/ppo.md, "Regimes"). JSON in and out: rl/gdp/config.cpp.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rl/gdp/explore.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/ppo.h"
#include "rl/run/reward.h"

namespace gdp::rl {

// How a trained policy is read zero-shot (rl/gdp/zero_shot.h): the gdp place method's options,
// and fine-tuning's seeds (TrainConfig::fine_tune_zero_shot).
struct ZeroShotOptions {
  int64_t samples = 63;  // 1 + samples candidates in all (other readings' greedy ones included)
  double temperature = 1;
  // The greedy placement read at every device count the memory bound allows, in place of as
  // many samples.
  bool every_count = true;
  // The readings: "own", "op", "stage", "cut", "mix", "both" or "all" (rl/gdp/method.cpp's
  // option help says what each is).
  std::string decode = "all";
  // How the samples are split between several readings: "best" or "even".
  std::string allocate = "best";
  std::string source = "the policy";  // the checkpoint, for the note and errors
  // A second checkpoint whose readings' greedy placements (at every device count) join the
  // candidates, drawing no samples ("": none; the gdp method's option; not read by
  // fine-tuning's seeds).
  std::string also;
};
// The values decode and allocate take (the gdp method's options and the config's
// fine_tune_zero_shot section both check against these).
inline const std::vector<std::string> kZeroShotDecodes = {"own", "op",   "stage", "cut",
                                                          "mix", "both", "all"};
inline const std::vector<std::string> kZeroShotAllocations = {"even", "best"};

// Elite imitation (docs/ppo.md, "Levers"): a cross-entropy term toward the best placements
// found so far, beside the PPO loss: loss += weight_t * mean_{e,u} -log p(a_eu).
struct EliteConfig {
  int32_t size = 2;              // elites kept per graph (0: off)
  double weight = 1.0;           // of the cross-entropy term
  int32_t decay_iterations = 0;  // weight_t falls linearly to 0 over this many (0: constant)
};

// Expert iteration (docs/ppo.md, "Expert iteration"): each iteration, after its K samples,
// every graph gets a short annealing search (place/anneal.h) from the best of its elites,
// steered by the policy's current per-unit distribution; the search's best joins the elites,
// which the cross-entropy term (EliteConfig) imitates beside the PPO loss. Search improves
// the policy's samples; the policy learns the search's best; the next search starts from a
// sharper policy.
struct ExpertConfig {
  int32_t anneal_samples = 0;  // per graph and iteration (0: off); the search's critical-path
                               // refresh is one more
  double mix = 0.5;            // the guide: (1 - mix) policy + mix uniform
  double t_ratio = 0.1;        // final / start temperature of each search
  // T0: calibrated on a graph's first search (its first min(64, anneal_samples / 2)
  // proposals), then kept for that graph (in the checkpoint).
};

// Counterfactual probes (docs/ppo.md, "Counterfactual probes"): a per-unit signal from the
// simulator beside the PPO loss. Each iteration, per graph, `units` probes: an on-policy sample
// k and a unit u drawn uniformly, and the sample re-simulated with u on each other device
// (D - 1 simulations, counted in the budget). The rewards r_d of u on device d (the sample's
// own for its device) give per-probe advantages A_d = r_d - mean_d r_d, divided by their root
// mean square over the graph's probes and clipped to [-3, 3]; the loss adds
//   -weight * mean_probes sum_d p(d | u) A_d
// (the all-actions policy gradient of one unit's exact counterfactuals: what one reward per
// placement resolves only at K ~ U samples). With target "best", instead a cross-entropy toward
// each probe's best device weighted by that device's advantage (clipped to [0, 3]):
//   -weight * mean_probes m log p(best | u)
// (policy improvement toward the unit's best response, which does not fade as the policy
// sharpens). Per-unit device decisions only ("op", "stage" without the devices-used row);
// 0 units: off.
struct CounterfactualConfig {
  int32_t units = 0;                // probes per graph and iteration
  double weight = 1.0;              // of the term
  std::string target = "expected";  // "expected" (all-actions gradient) or "best"
};

struct TrainConfig {
  // The named regime whose defaults the other keys start from (docs/ppo.md): "search", the
  // levers that win on one graph (GDP-one, fine-tuning: local proposals, elites, warm start;
  // the defaults below); "transfer", pre-training for zero-shot transfer (`gdp train
  // --suite`): plain PPO, op decisions over the stage and concurrency features, K = 16 on-policy
  // samples, a mean baseline, no warm start, no behaviour cloning, no elites, no local
  // proposals.
  std::string regime = "search";
  PolicyConfig policy;
  PpoConfig ppo;
  RewardConfig reward;
  int32_t samples_per_iteration = 8;  // K, per graph
  int32_t epochs = 2;                 // PPO epochs over the K samples
  int32_t minibatches = 1;            // per epoch (the K samples split in this many)
  double lr = 3e-3;
  double grad_clip = 1.0;         // global L2 norm
  int32_t checkpoint_every = 10;  // iterations (0: only at the end)
  // The reference placement (human, else single, else round-robin) is simulated as each
  // graph's first sample, so the best placement reported is never worse than it. Off: the
  // best is the policy's own (ablations, "pure" GDP).
  bool keep_reference = true;
  // Warm start: before the first PPO update, this many Adam steps on the cross-entropy between
  // the policy and each graph's reference placement (behavior cloning; the anchored unit's
  // device relabeled to 0 on interchangeable devices). PPO then searches around the
  // reference instead of around the uniform placement. 0: off (the paper's GDP).
  int32_t imitation_steps = 20;
  // The placements the warm start imitates: empty, the reference; else these place methods
  // (e.g. human, m-etf, m-sct, metis) are run on each graph, each simulated once and counted
  // in the budget (with the simulations the method itself reports), the fastest imitated, and
  // all of them offered to the elites.
  std::vector<std::string> warm_start{"human", "m-etf", "m-sct", "metis"};
  EliteConfig elite;
  ExploreConfig explore{0.875, 0.1, 0.1};
  ExpertConfig expert;
  CounterfactualConfig counterfactual;
  // The entropy bonus falls linearly to 0 over this many iterations (0: constant).
  int32_t entropy_decay_iterations = 0;
  // Each iteration, each op's type is replaced by the unknown slot (vocabulary index 0) with
  // this chance, the same for the sampling pass and the updates: the unknown row and the
  // other features learn to place ops of types pre-training never saw (PipeDream layers,
  // PyTorch imports).
  double type_dropout = 0;
  // GDP-batch: each graph's loss weighs 1 / (families x graphs of its family) instead of
  // 1 / graphs, so that 32 random graphs do not outvote 8 models (TrainGraph::family).
  bool family_weights = false;
  // What one decision places, per training graph: empty, the policy's decision alone; else
  // each graph is trained once per entry ("op", "stage", "cut"), each with its own K samples,
  // log rows and a share of its loss weight, from the same network read each way (the later
  // entries' rows are named "<graph>@<decision>"). A network trained so places a graph's ops
  // one by one where that wins (a Transformer's intra-layer split) and its stages as wholes
  // where that wins (an RNN's layer pipeline), and zero-shot reads every one (the place
  // method's option "decode"). "cut" gives the policy a cut head (PolicyConfig::cut_head),
  // also over a checkpoint that lacks one (--init: the head starts at its initial values).
  std::vector<std::string> decisions;
  // Parameters that do not train: names or name prefixes (e.g. "mix.w", "mix.b": the mix head's
  // blend stays as the checkpoint has it and only its shift row trains). Their gradients are
  // zeroed before every update, so that with Adam's fresh moments they stay bit for bit. A
  // prefix that names no parameter is an InputError.
  std::vector<std::string> freeze;
  // Fine-tuning (a checkpoint to start from). The network keeps the checkpoint's policy config
  // and parameters; these three say how the search around it starts (docs/ppo.md, "Fine-tuning
  // a stage policy into op decisions"; the defaults are the search regime's, the best measured on
  // pipedream.json).
  // fine_tune_decision: "" keeps the checkpoint's decision; "op" (search's default) decides per
  // colocation unit over the same node logits (a stage's logits are the mean over its nodes),
  // so that a stage-trained policy can place the ops of one layer apart.
  std::string fine_tune_decision = "op";
  // The checkpoint's zero-shot candidates (rl/gdp/zero_shot.h with its defaults: every reading's
  // greedy placement, then samples, this many in all), simulated first (counted) and offered to
  // the elites (with elite.size > 0). 0: off. 64 is the zero-shot method's own count.
  int32_t fine_tune_seeds = 64;
  // How those candidates are read (section "fine_tune_zero_shot": decode, allocate,
  // temperature, every_count; `samples` is fine_tune_seeds - 1). The gdp place method sets it
  // from its own options, so that `fine_tune` seeds from the zero-shot placement it would give.
  ZeroShotOptions fine_tune_zero_shot;
  // The warm start's heuristics still run (counted) and join the elites, but are never cloned
  // (imitation_steps is 0 over a checkpoint): the network keeps its start.
  bool fine_tune_warm_start = true;

  // The defaults of a regime ("search" or "transfer"); InputError naming `source` otherwise.
  static TrainConfig preset(const std::string& regime, const std::string& source = "regime");
  // Strict: unknown keys, wrong types, impossible values -> InputError naming source and key.
  // The keys given override the defaults of the config's "regime", else of default_regime.
  static TrainConfig from_json(const nlohmann::json& j, const std::string& source,
                               const std::string& default_regime = "search");
  nlohmann::ordered_json to_json() const;
};

}  // namespace gdp::rl
