// The PPO training loop of the GDP policy, on one graph (GDP-one) or several at once
// (GDP-batch): each iteration samples K placements per graph from one forward pass, simulates
// them in parallel (Simulator::step_times through place::Run, which counts the samples and keeps
// each graph's best placement and its curve), turns step times into rewards against a reference
// placement, and updates the policy over a few epochs with Adam and gradient clipping.
// Checkpoints hold everything a resumed run needs to continue the same run (parameters, Adam
// state, the sampling stream, every graph's best and counters).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/rng.h"
#include "nn/optim.h"
#include "place/anneal.h"
#include "place/problem.h"
#include "place/run.h"
#include "rl/gdp/elites.h"
#include "rl/gdp/explore.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/ppo.h"
#include "rl/learner.h"
#include "rl/reward.h"
#include "sim/cost_model.h"

namespace gdp::rl {

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

struct TrainConfig {
  // The named regime whose defaults the other keys start from (docs/ppo.md): "search", the
  // levers that win on one graph (GDP-one, fine-tuning: local proposals, elites, warm start;
  // the defaults below); "transfer", pre-training for zero-shot transfer (`gdp train
  // --suite`): stage decisions over the stage features, K = 16 on-policy samples, no warm
  // start, no behaviour cloning, no elites, no local proposals, type dropout 0.1, families
  // weighted equally.
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

  // The defaults of a regime ("search" or "transfer"); InputError naming `source` otherwise.
  static TrainConfig preset(const std::string& regime, const std::string& source = "regime");
  // Strict: unknown keys, wrong types, impossible values -> InputError naming source and key.
  // The keys given override the defaults of the config's "regime", else of default_regime.
  static TrainConfig from_json(const nlohmann::json& j, const std::string& source,
                               const std::string& default_regime = "search");
  nlohmann::ordered_json to_json() const;
};

// Where the last iteration's time went (seconds, all graphs).
struct PhaseTimes {
  double forward_s = 0;   // policy forward passes
  double sample_s = 0;    // sampling K placements and their old log-probabilities
  double simulate_s = 0;  // Simulator::step_times of the K placements
  double backward_s = 0;  // PPO loss and backward passes
  double update_s = 0;    // gradient clipping and Adam
  double total_s() const { return forward_s + sample_s + simulate_s + backward_s + update_s; }
};

class Trainer : public Learner {
 public:
  // Builds the policy (a fresh one from `config.policy` with the vocabulary of the graphs'
  // op types, or, when `init` is given, a copy of it: fine-tuning) and, per graph, the
  // simulator, the policy input and the reference step time (human, else single, else
  // round-robin; the first valid). Throws InputError when no reference is valid.
  // `device`: where the policy runs (cuda: the nn CUDA backend; sampling and the simulation
  // stay on the host).
  Trainer(TrainConfig config, std::vector<TrainGraph> graphs, const CostModel& cost, uint64_t seed,
          const Policy* init = nullptr, nn::Device device = nn::Device::cpu);
  ~Trainer() override;

  // Data-parallel over the MPI ranks (rl/dist.h; `gdp train` under mpirun): the graphs are
  // split by op count (longest first, each to the least-loaded rank); every rank gets every
  // graph's rows and state after each step. Call before the first step (a no-op outside mpirun).
  // Without it the trainer is one process's, also inside an MPI job (a `gdp suite run` worker's
  // cell).
  void distribute();

  // One iteration over every graph. Returns one row per graph.
  std::vector<IterationStats> step() override;
  // Samples K more placements per graph would exceed the budget, or its seconds are spent.
  bool done(const place::Budget& budget) const override;

  int64_t iteration() const override { return iteration_; }
  int32_t checkpoint_every() const override { return config_.checkpoint_every; }
  const PhaseTimes& last_step_times() const { return times_; }
  double wall_s() const override;
  const Policy& policy() const { return *policy_; }
  const TrainConfig& config() const { return config_; }
  size_t num_graphs() const override { return graphs_.size(); }
  const TrainGraph& graph(size_t i) const override { return graphs_[i].spec; }
  const place::Run& run(size_t i) const override { return *graphs_[i].run; }
  double reference_step_s(size_t i) const override { return graphs_[i].reference_s; }
  // Fraction of graph i's units whose greedy device is the reference's after the warm start
  // (NaN without one).
  double imitation_accuracy(size_t i) const override { return graphs_[i].imitation_accuracy; }
  const std::string& reference_method(size_t i) const override {
    return graphs_[i].reference_method;
  }

  // Checkpoint: `<dir>/ckpt-<iteration>.bin` (parameters and Adam) and `<dir>/state.json`
  // (everything else), each written atomically, the state last (it names the .bin file), so
  // a kill at any moment leaves a consistent pair. `log_bytes` is stored so that a resumed run
  // cuts the log back to this iteration.
  void save(const std::string& dir, int64_t log_bytes) const override;
  // Restores a save() of a trainer built with the same config, graphs and seed. Returns the
  // stored log_bytes. Throws InputError naming the file on anything inconsistent.
  int64_t load(const std::string& dir) override;

 private:
  struct GraphState {
    TrainGraph spec;
    OwnedRun own;
    place::Run* run = nullptr;  // own.run, or the caller's
    PolicyInput input;
    double reference_s = 0;
    std::string reference_method;
    std::vector<int32_t> reference_actions;  // (U) device of each unit in the reference
    double imitation_accuracy = std::numeric_limits<double>::quiet_NaN();
    EliteSet elites;
    place::UnitAdjacency adjacency;  // for the local proposals' boundary moves
    place::UnitScopes scopes;        // and their scope moves
    std::vector<int32_t> greedy;     // (U) the greedy actions of the last iteration (diagnostics)
    std::vector<int64_t> op_type;    // (N) the op types before TrainConfig::type_dropout
    float loss_weight = 1;           // of its loss in the iteration's sum (family_weights)
    std::unique_ptr<place::Annealer> annealer;  // the expert step's search (built on first use)
    double anneal_t0 = 0;                       // its calibrated start temperature (0: not yet)
    Rng rng;            // this graph's sampling and proposals (GDP-batch; GDP-one uses rng_)
    int owner = 0;      // the rank that samples, simulates and differentiates it (rl/dist.h)
    bool owned = true;  // owner == this rank
  };
  Rng& rng_of(GraphState& st) { return graphs_.size() == 1 ? rng_ : st.rng; }
  // A graph's state for the checkpoint and for the ranks' exchange, and back.
  nlohmann::ordered_json graph_json(const GraphState& g) const;
  void restore_graph(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                     GraphState& g);
  // Data-parallel: every rank receives the rows and states of the graphs other ranks own.
  void sync_graphs(std::vector<IterationStats>& rows);
  // The expert step on one graph (ExpertConfig): returns the samples it simulated.
  int64_t expert_search(GraphState& st, const nn::Tensor& host_logits);
  void run_warm_start(GraphState& st);  // TrainConfig::warm_start: heuristics run and counted
  void imitate();  // the warm start (TrainConfig::imitation_steps), timed into times_

  TrainConfig config_;
  CostModel cost_;
  uint64_t seed_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<nn::Adam> adam_;
  std::vector<GraphState> graphs_;
  Rng rng_;                   // minibatch order (and GDP-one's sampling)
  int rank_ = 0, ranks_ = 1;  // rl/dist.h: GraphState::owner
  int64_t iteration_ = 0;
  PhaseTimes times_;
  double wall_offset_s_ = 0;  // run seconds before a resume
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gdp::rl
