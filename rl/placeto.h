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

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "nn/graph_ops.h"
#include "nn/parameters.h"
#include "nn/tensor.h"
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
class PlacetoPolicy {
 public:
  PlacetoPolicy(int32_t num_devices, PolicyConfig config, uint64_t seed);
  // placement (N) devices, visited (N) 0/1, current in [0, N).
  nn::Var logits(const CoarseGraph& cg, const std::vector<int32_t>& placement,
                 const std::vector<uint8_t>& visited, int32_t current) const;
  nn::ParameterBuffer& params() { return params_; }
  int32_t num_devices() const { return num_devices_; }
  const PolicyConfig& config() const { return config_; }

 private:
  struct Fnn {
    std::vector<nn::Var> w, b;  // w (OUT, IN) per layer
    nn::Var forward(const nn::Var& x) const;
  };
  Fnn make_fnn(const std::string& name, const std::vector<int32_t>& sizes, nn::Rng& rng);

  int32_t num_devices_;
  PolicyConfig config_;
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
