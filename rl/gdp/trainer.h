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
#include "rl/gdp/config.h"
#include "rl/gdp/elites.h"
#include "rl/gdp/explore.h"
#include "rl/gdp/policy.h"
#include "rl/gdp/ppo.h"
#include "rl/run/learner.h"
#include "rl/run/reward.h"
#include "sim/cost_model.h"

namespace gdp::rl {

// Where the last iteration's time went (seconds, all graphs).
struct PhaseTimes {
  double forward_s = 0;   // policy forward passes
  double sample_s = 0;    // sampling K placements and their old log-probabilities
  double simulate_s = 0;  // Simulator::step_times of the K placements
  double backward_s = 0;  // PPO loss and backward passes
  double update_s = 0;    // gradient clipping and Adam
  double total_s() const { return forward_s + sample_s + simulate_s + backward_s + update_s; }
};

class Trainer : public FramedLearner {
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

  // Data-parallel over the MPI ranks (core/mpi.h; `gdp train` under mpirun): the graphs are
  // split by op count (longest first, each to the least-loaded rank); every rank gets every
  // graph's rows and state after each step. Call before the first step (a no-op outside mpirun).
  // Without it the trainer is one process's, also inside an MPI job (a `gdp suite run` worker's
  // cell).
  void distribute();

  // One iteration over every graph. Returns one row per graph.
  std::vector<IterationStats> step() override;
  // Samples K more placements per graph would exceed the budget, or its seconds are spent.
  bool done(const place::Budget& budget) const override;

  int32_t checkpoint_every() const override { return config_.checkpoint_every; }
  const PhaseTimes& last_step_times() const { return times_; }
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

  // config.json's keys: "train" (the config, with the policy's: an init's policy wins) and
  // "vocabulary" (the op types the policy embeds).
  nlohmann::ordered_json config_json() const override;
  // The stored vocabulary must equal the graphs' (the graph files unchanged since the start).
  void check_resume(const StrictJson& sj, const nlohmann::json& config) const override;

 private:
  // The checkpoint (rl/run/learner.h FramedLearner): ckpt-<iteration>.bin holds the parameters
  // and Adam; state.json the trainer's stream ("rng") and per graph its elites, greedy
  // actions, annealing temperature and stream.
  nlohmann::ordered_json save_model(const std::string& bin) const override;
  std::vector<std::string> model_keys() const override { return {"rng"}; }
  void load_model(const StrictJson& sj, const nlohmann::json& state, const std::string& bin,
                  int64_t iteration, const std::string& source) override;
  // Graph i's state (the run's, its elites, greedy actions, annealing temperature and
  // stream): for the checkpoint and for the ranks' exchange, and back.
  nlohmann::ordered_json graph_state(size_t i) const override;
  void restore_graph_state(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                           size_t i) override;

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
    int owner = 0;      // the rank that samples, simulates and differentiates it (core/mpi.h)
    bool owned = true;  // owner == this rank
  };
  Rng& rng_of(GraphState& st) { return graphs_.size() == 1 ? rng_ : st.rng; }
  // Data-parallel: every rank receives the rows and states of the graphs other ranks own.
  void sync_graphs(std::vector<IterationStats>& rows);
  // The expert step on one graph (ExpertConfig): returns the samples it simulated.
  int64_t expert_search(GraphState& st, const nn::Tensor& host_logits);

  // One iteration's phases (step): what it draws, then per graph sample -> simulate -> score
  // -> backward, then the update and the remaining epochs.
  struct Iteration {
    int32_t K = 0, K_local = 0, K_on = 0;  // samples per graph: local proposals, on-policy
    PpoConfig ppo;                         // with this iteration's entropy coefficient
    double elite_w = 0;                    // this iteration's elite weight
    bool reuse_first = true;               // the sampling pass is the first epoch's forward
  };
  struct Batch {
    std::vector<int32_t> actions;  // (K_on * U)
    std::vector<float> old_logp;   // (K_on * U)
    std::vector<double> adv;       // (K_on)
    std::vector<int32_t> elites;   // (elites * U)
    // Counterfactual probes (TrainConfig::counterfactual): the units probed (P) and their
    // normalized advantages per action column (P * A; 0 on masked columns).
    std::vector<int64_t> cf_units;
    std::vector<float> cf_adv;
    std::vector<int32_t> cf_best;  // (P) with target "best": each probe's best column
    std::vector<float> cf_m;       // (P) and its weight
  };
  struct Sampled {
    nn::Var logits;                     // the sampling pass (with its tape when reused)
    nn::Tensor host;                    // its logits on the host
    Batch batch;                        // the on-policy samples and their advantages
    std::vector<int32_t> local;         // (K_local * U) local proposals
    std::vector<Placement> placements;  // (K) on-policy first
    std::vector<double> step_s;         // (K) their simulated step times
  };
  Iteration plan_iteration() const;
  void sample(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row);
  void simulate(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row);
  void score(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row);
  // TrainConfig::counterfactual: probes of the on-policy samples (after simulate).
  void probe(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row);
  // The loss of one graph's samples, back-propagated with its weight; `first`: the row's
  // entropy is this pass's.
  void backward(const GraphState& st, const Iteration& it, const nn::Var& logits,
                const std::vector<int32_t>& acts, const std::vector<float>& old,
                const std::vector<double>& adv, const Batch& full, IterationStats& row, bool first);
  double apply_update();  // allreduce, clip, Adam; returns the gradient norm
  double more_epochs(const Iteration& it, const std::vector<Sampled>& sampled,
                     std::vector<IterationStats>& rows);  // NaN when there are none
  void lap(double& into);                                 // adds the time since tick_ to `into`
  void run_warm_start(GraphState& st);  // TrainConfig::warm_start: heuristics run and counted
  // Fine-tuning: the checkpoint's zero-shot candidates (rl/gdp/zero_shot.h) to the elites
  // (fine_tune_seeds).
  void seed_elites(const Policy& init, GraphState& st);
  void imitate();  // the warm start (TrainConfig::imitation_steps), timed into times_

  TrainConfig config_;
  CostModel cost_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<nn::Adam> adam_;
  // TrainConfig::freeze resolved once: (offset, count) of each frozen parameter in the flat
  // gradient buffer, zeroed before every update.
  std::vector<std::pair<int64_t, int64_t>> frozen_;
  std::vector<GraphState> graphs_;
  Rng rng_;                   // minibatch order (and GDP-one's sampling)
  int rank_ = 0, ranks_ = 1;  // core/mpi.h: GraphState::owner
  PhaseTimes times_;
  std::chrono::steady_clock::time_point tick_;  // lap()'s start
};

}  // namespace gdp::rl
