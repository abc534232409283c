// Placeto (Addanki et al., NeurIPS 2019; public code aravic/generalizable-device-placement), the
// learned baseline "placeto": the graph is coarsened to groups (colocation groups, then name
// scopes), a policy visits the groups one by one in topological order and moves each to a device
// chosen from a GNN embedding of the whole graph under the current placement, and every move is
// rewarded with the step-time improvement it brought (each step simulated). REINFORCE with a
// per-round baseline, as in the reference. docs/baselines.md ("Placeto") has the choices.
//
// The pieces are separate so that a trained PlacetoPolicy could later place another graph (the
// weights depend on the width and the device count only, never on the graph's size): coarsen()
// and CoarseGraph::build() prepare any graph, PlacetoPolicy::logits() runs on it.
//
// Glossary: N = coarse nodes (groups), D = devices, W = width, F = kStaticFeatures + 2 + D.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "core/rng.h"
#include "nn/graph_ops.h"
#include "nn/optim.h"
#include "nn/parameters.h"
#include "nn/tensor.h"
#include "place/options.h"
#include "place/run.h"
#include "sim/cost_model.h"

namespace gdp::rl::placeto {

// ---- Coarsening --------------------------------------------------------------------------------
// Groups of ops, numbered in the topological order of their first op. Rule (coarsen()):
//  1. the ops of a colocation group are in one group (always: placements keep groups together);
//  2. ops with the same name scope are in one group;
//  3. while there are more than max_nodes groups, the deepest scopes are cut back to their
//     parent scope ("a/b/c" -> "a/b"), the parents that remove the most groups first (ties by
//     name), never below the first scope component;
//  4. if that is still more than max_nodes, consecutive groups in topological order are merged
//     into chunks of equal count.
// Ops without a scope only merge through colocation (and step 4).
struct Coarsening {
  std::vector<int32_t> group_of;  // (num_ops) group of each op
  std::vector<int32_t> first_op;  // (N) topologically first op of each group
  int32_t num_groups() const { return static_cast<int32_t>(first_op.size()); }
  // The placement that puts every op on its group's device ((N) group_device).
  Placement expand(const std::vector<int32_t>& group_device) const;
};
// max_nodes >= 1. Deterministic; about linear in the graph per scope level.
Coarsening coarsen(const Graph& g, int32_t max_nodes);

// ---- The coarse graph the policy reads ------------------------------------------------------
constexpr int32_t kStaticFeatures = 3;  // compute time, output bytes, memory (each / its max)

struct CoarseGraph {
  int32_t num_nodes = 0;
  int32_t num_devices = 0;
  std::shared_ptr<const nn::Adjacency> adj;  // group edges (deduplicated, no self loops)
  nn::Tensor static_x;                       // (N, kStaticFeatures)
  nn::Tensor has_parent, has_child;          // (N, 1) 1 where the node has one
  // Per node: the nodes that reach it (ancestors), that it reaches (descendants), and those
  // neither (parallel), ascending. On a coarse graph with cycles a node may be both an
  // ancestor and a descendant of another; it is then in both lists.
  std::vector<std::vector<int64_t>> ancestors, descendants, parallel;

  // Features per group: the cost model's time of its ops on devices[0] (measured when
  // measured), the bytes of the edges leaving the group, and its resident + output bytes.
  static CoarseGraph build(const Graph& g, const Cluster& c, const CostModel& cost,
                           const Coarsening& groups);
};

// ---- Policy --------------------------------------------------------------------------------
struct PolicyConfig {
  int32_t width = 32;  // W
  int32_t rounds = 8;  // message-passing rounds per direction (the reference's 8)
};

// Node features (F): static features, "visited" and "current" markers, one-hot device. Then:
//   s = node_fnn(x)                                             (N, W), FNN W-W-W
//   forward pass, `rounds` times: h = s + has_parent * relu(g_fw(mean_parents relu(f_fw(h))))
//   backward pass likewise over children; e = [h_fw | h_bw]     (N, 2W)
//   for the current node v: a_P = relu(g_P(mean_{u in anc(v)} relu(f_P(e_u)))), likewise a_C
//   over descendants and a_R over parallel nodes (zeros mean for an empty set)
//   logits = classifier([a_P | a_C | a_R | e_v])                (1, D), FNN 8W-16W-8W-D
// Every f, g is a two-layer FNN with a relu between its layers.
// The policy has A = num_devices device slots (one-hot width and logits); a graph on a cluster
// of D < A devices masks the logits of slots D..A-1 (-1e9), so one policy trained across graphs
// serves clusters of 1..A devices.
class PlacetoPolicy {
 public:
  PlacetoPolicy(int32_t num_devices, PolicyConfig config, uint64_t seed);
  // placement (N) devices, visited (N) 0/1, current in [0, N). (1, A) logits on the policy's
  // device.
  nn::Var logits(const CoarseGraph& cg, const std::vector<int32_t>& placement,
                 const std::vector<uint8_t>& visited, int32_t current) const;
  nn::ParameterBuffer& params() { return params_; }
  const nn::ParameterBuffer& params() const { return params_; }
  int32_t num_devices() const { return num_devices_; }
  const PolicyConfig& config() const { return config_; }
  // Moves the parameters to `device` (cuda: builds with CUDA); sampling stays on the host.
  void to_device(nn::Device device);

 private:
  struct Fnn {
    std::vector<nn::Var> w, b;  // w (OUT, IN) per layer
    nn::Var forward(const nn::Var& x) const;
  };
  Fnn make_fnn(const std::string& name, const std::vector<int32_t>& sizes, nn::Rng& rng);

  int32_t num_devices_;
  PolicyConfig config_;
  nn::Device device_ = nn::Device::cpu;
  nn::ParameterBuffer params_;
  Fnn node_, f_fw_, g_fw_, f_bw_, g_bw_, f_p_, g_p_, f_c_, g_c_, f_r_, g_r_, classifier_;
};

// ---- Training within a run --------------------------------------------------------------------
struct TrainConfig {
  int32_t max_nodes = 1000;        // coarse-node limit
  int32_t min_episodes = 10;       // limit lowered so that this many episodes fit the budget
  PolicyConfig policy;             //
  double lr = 1e-3;                // Adam
  double entropy = 0.01;           // entropy bonus weight
  double discount = 1.0;           // of the per-step rewards
  int32_t baseline_episodes = 10;  // per-round baseline: mean return of the last K episodes
  double grad_clip = 1.25;         // global-norm bound (the reference's grad_bound)
  double invalid_penalty = 2.0;    // an invalid placement counts as this x serial time
  std::string init = "random";     // initial placement: "random" (fixed per run) or "zero"
  int64_t default_samples = 2000;  // when the run's budget sets no sample limit
  int32_t max_devices = 0;         // policy device slots A; 0 = the (largest) cluster's D
};

// The "placeto" method's options as a configuration (the one reading of them, for the method
// and for `gdp train --method placeto`).
TrainConfig train_config(const place::Options& o);

// Placeto's training state: one policy (with Adam and the sampling stream) and, per graph, its
// coarse graph, the fixed initial placement and the per-round baseline history. An episode on
// graph i visits its groups in order; training episodes simulate every move through the graph's
// place::Run and update the policy (REINFORCE); placement-only episodes (zero-shot) simulate the
// final placement once. Driven by train() (the "placeto" method, one graph) and by
// `gdp train --method placeto` (rl/placeto_learner.cpp: one graph or a suite, checkpointed).
class Agent {
 public:
  // A = max_devices slots; a fresh policy seeded by `seed`.
  Agent(const TrainConfig& cfg, int32_t max_devices, uint64_t seed,
        nn::Device device = nn::Device::cpu);
  // Starts from a trained policy instead (its slots and width).
  Agent(const TrainConfig& cfg, const PlacetoPolicy& policy, uint64_t seed,
        nn::Device device = nn::Device::cpu);

  // Adds a graph, coarsened to node_limit groups; `seed` fixes its initial placement. Returns
  // its index. The initial placement is simulated at the first episode (a sample).
  size_t add_graph(const place::Problem& pb, int32_t node_limit, uint64_t seed);

  struct Episode {
    bool complete = false;   // false: the budget ended inside it (no update)
    int64_t samples = 0;     // simulated during the episode
    double end_step_s = 0;   // the final placement's (charged) step time
    double mean_step_s = 0;  // over the valid step times simulated (+inf when none)
    double invalid_frac = 0;
    double entropy = 0;  // mean over the rounds
    double loss = 0;     // -sum adv * log p
  };
  // Simulates graph i's initial placement if not yet done (false: no sample allowed).
  bool begin(size_t i, place::Run& run, int64_t allowed = INT64_MAX);
  // One training episode on graph i, its simulations through `run` (the graph's problem), at
  // most `allowed` of them (and the run's budget); more needed: an incomplete episode.
  Episode train_episode(size_t i, place::Run& run, int64_t allowed = INT64_MAX);
  // One placement of graph i without learning: greedy (argmax) or sampled; simulated once.
  Episode place_episode(size_t i, place::Run& run, bool greedy);

  size_t num_graphs() const { return graphs_.size(); }
  int32_t groups(size_t i) const { return graphs_[i].cg.num_nodes; }
  const Coarsening& coarsening(size_t i) const { return graphs_[i].groups; }
  double initial_step_s(size_t i) const { return graphs_[i].initial_raw; }
  int64_t episodes(size_t i) const { return graphs_[i].episodes; }
  // Episodes in a row that sampled no move (the policy has settled).
  int32_t idle(size_t i) const { return graphs_[i].idle; }
  const PlacetoPolicy& policy() const { return *policy_; }

  nlohmann::ordered_json save(const std::string& bin) const;
  void load(const nlohmann::json& state, const std::string& bin, const std::string& source);

 private:
  struct GraphCtx {
    const place::Problem* pb = nullptr;
    Coarsening groups;
    CoarseGraph cg;
    double penalty_s = 0;
    std::vector<int32_t> init;
    bool started = false;  // the initial placement was simulated
    double initial_raw = 0, t0 = 1;
    std::vector<std::deque<double>> history;  // per round: returns of the last K episodes
    int64_t episodes = 0;
    int32_t idle = 0;
  };
  bool start(GraphCtx& g, place::Run& run, int64_t allowed);
  double charge(const GraphCtx& g, double t) const { return std::isfinite(t) ? t : g.penalty_s; }

  TrainConfig cfg_;
  std::unique_ptr<PlacetoPolicy> policy_;
  std::unique_ptr<nn::Adam> adam_;
  Rng rng_;
  std::vector<GraphCtx> graphs_;
};

struct TrainReport {
  int64_t episodes = 0;       // complete episodes (each followed by an update)
  int32_t groups = 0;         // coarse nodes
  int32_t node_limit = 0;     // the limit used (max_nodes, lowered for the budget)
  double last_episode_s = 0;  // wall seconds of the last complete episode (with update)
  double initial_step_s = 0;  // the initial placement's step time (+inf: invalid)
  bool partial = false;       // the budget ended inside an episode (not trained on)
  bool settled = false;       // stopped: 20 episodes in a row sampled no change
};

// Trains a fresh policy on run.problem() within the run's budget; every simulation goes through
// run.evaluate (the best placement and the curve are the run's). max_episodes > 0 stops earlier.
TrainReport train(place::Run& run, const TrainConfig& config, int64_t max_episodes = 0);

}  // namespace gdp::rl::placeto
