// The first stage of the GDP policy: a Graph on a Cluster -> per-op features (continuous,
// scale-free, bounded), op-type vocabulary indices for a learned embedding, the nn adjacency
// of the data edges, the topological order the attention runs in, and graph-level statistics
// for the superposition network. The feature table is in docs/policy.md ("Features").
//
// Glossary: N = ops (nodes), V = vocabulary size (with the unknown slot), K = kNodeFeatures,
// G = kGraphFeatures.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "nn/graph_ops.h"
#include "nn/tensor.h"
#include "sim/cost_model.h"

namespace gdp::rl {

// Op-type vocabulary: index 0 is the unknown-type slot; known types 1..V-1. The empty type
// is never in the vocabulary (it maps to 0).
class OpVocabulary {
 public:
  OpVocabulary();  // only the unknown slot
  // The types of these graphs, most frequent first (ties by name, bytewise), at most
  // max_size - 1 of them. max_size >= 1 (std::invalid_argument otherwise).
  static OpVocabulary from_graphs(const std::vector<const Graph*>& graphs, int32_t max_size = 512);
  // Strict reader of to_json()'s output; errors (InputError) name `source` and the JSON path.
  static OpVocabulary from_json(const nlohmann::json& j, const std::string& source);
  // The same from text (a key repeated in one object is an error too).
  static OpVocabulary from_json_text(const std::string& text, const std::string& source);
  nlohmann::ordered_json to_json() const;  // {"unknown": 0, "types": ["MatMul", ...]}

  int32_t index(const std::string& type) const;                             // 0 when unknown
  int32_t size() const { return static_cast<int32_t>(types_.size()) + 1; }  // V
  const std::vector<std::string>& types() const { return types_; }          // index k+1 = types_[k]
  const std::string& type(int32_t index) const;  // "" for 0; index in [0, V)

 private:
  explicit OpVocabulary(std::vector<std::string> types);

  std::vector<std::string> types_;                  // (V - 1)
  std::unordered_map<std::string, int32_t> index_;  // type -> 1..V-1
};

constexpr int32_t kNodeFeatures = 47;   // K: width of NodeFeatures::x
constexpr int32_t kGraphFeatures = 22;  // G: width of NodeFeatures::graph_stats
// The first feature set (policies trained before the stage coordinates, PolicyConfig
// features 1) reads only the leading columns: the columns added since are appended.
constexpr int32_t kNodeFeaturesV1 = 36;
constexpr int32_t kGraphFeaturesV1 = 19;
// The columns a policy with "features": 2 reads (the stage coordinates, before the links).
constexpr int32_t kNodeFeaturesV2 = 39;
constexpr int32_t kGraphFeaturesV2 = 20;
// "features": 3 reads the first 41 node columns (the links, before the concurrency) and all
// graph columns; "features": 4 reads the first 39 (features 2's) and the concurrency columns,
// and features 2's graph columns (policy.h, PolicyConfig::features); "features": 5 reads
// features 4's columns and the critical-path columns, and features 2's graph columns.
constexpr int32_t kNodeFeaturesV3 = 41;

// Column indices of NodeFeatures::x (docs/policy.md has the transforms).
namespace feat {
enum NodeColumn : int32_t {
  phase_forward = 0,  // phase one-hot (3)
  phase_backward,
  phase_update,
  class_matmul,  // cost-model op class one-hot (6), classify_op(type)
  class_conv,
  class_elementwise,
  class_reduction,
  class_memory,
  class_other,
  num_outputs,
  out_rank,  // rank of the first output
  out_dim0,  // first 4 dims of the first output
  out_dim1,
  out_dim2,
  out_dim3,
  flops,
  bytes_accessed,
  measured_time,   // the measured time used (0 when none)
  measured_exact,  // 1: a measurement for devices[0].kind
  measured_any,    // 1: only a "*" measurement
  cost_time,       // the cost model's time on devices[0] (measured when measured)
  param_bytes,
  optimizer_bytes,
  output_bytes,
  temp_bytes,
  resident_frac,  // (param + optimizer) / smallest device capacity
  output_frac,    // output bytes / smallest device capacity
  in_degree,      // distinct predecessors
  out_degree,     // distinct successors
  in_edge_bytes,  // bytes of all in-edges
  out_edge_bytes,
  topo_pos,            // k / (N - 1) at topological position k
  level,               // longest path from a source (in edges) / the largest such
  has_group,           // colocation group present
  group_size,          // log10(ops in the group)
  unit_resident_frac,  // resident bytes of the op's unit (group, else the op) / capacity
  // Structural stage coordinates (place/stages.h), features 2 on:
  stage_time,    // midpoint of the op's stage rank in cumulative op time, [0, 1]
  stage_memory,  // the same in cumulative resident + output bytes
  stage_rank,    // (rank + 0.5) / ranks
  // The links, features 3 on: what sending the op's outputs to another device costs.
  out_comm_time,  // latency + out-edge bytes / bandwidth, averaged over device pairs
  comm_ratio,     // out_comm_time / the op's cost_time
  // Concurrency of the op's stage rank (place/stages.h), features 4:
  stage_fold,   // midpoint of the rank in the cumulative time of the ranks concurrent with it
  stage_share,  // the rank's time over its concurrent ranks' time, (0, 1]
  // The critical path over op times (cost_time), features 5: where the op lies on the longest
  // path through it, over the graph's longest path P.
  crit_top,     // longest path of op times before the op starts / P, [0, 1]
  crit_bottom,  // longest path from the op's start to the end, its own time included / P
  crit_slack,   // 1 - (crit_top + crit_bottom): how far the op can slip without lengthening P
  // Branches (place/stages.h, by_width): parallel branches of the forward pass side by side,
  // read by the cut head's skip with PolicyConfig::cut_branch.
  stage_width,  // the midpoint of the op's rank's branch interval, [0, 1]
  kNodeCount
};
enum GraphColumn : int32_t {
  g_ops = 0,
  g_edges,
  g_mean_degree,
  g_depth,
  g_depth_frac,  // depth / ops
  g_flops,
  g_cost_time,  // sum of cost_time over ops (one-device compute time)
  g_param_bytes,
  g_resident_frac,  // resident bytes / total device memory
  g_memory_frac,    // (resident + output) bytes / total device memory
  g_devices,        // devices / 8
  g_log_devices,
  g_frac_forward,
  g_frac_backward,
  g_frac_update,
  g_frac_grouped,
  g_units_frac,  // colocation units / ops
  g_frac_measured,
  g_device_memory,   // smallest device capacity, log10(1 + GB)
  g_stage_ranks,     // stage ranks (place/stages.h), log10(1 + R); features 2 on
  g_link_bandwidth,  // harmonic mean of the device pairs' route bandwidths; features 3 on
  g_comm_ratio,      // sum over ops of out_comm_time / one-device compute time
  kGraphCount
};
}  // namespace feat
static_assert(feat::kNodeCount == kNodeFeatures);
static_assert(feat::kGraphCount == kGraphFeatures);

struct NodeFeatures {
  int32_t num_nodes = 0;
  nn::Tensor x;                              // (N, K) float, continuous features, O(1) scale
  std::vector<int64_t> op_type;              // (N) vocabulary index per op (0 = unknown)
  std::shared_ptr<const nn::Adjacency> adj;  // data edges (deduplicated src->dst), N nodes
  std::vector<int64_t> topo;                 // (N) op at each topological position
  nn::Tensor graph_stats;                    // (1, G) float
  std::vector<int32_t> stage_rank;           // (N) place/stages.h's rank of each op
  int32_t num_stage_ranks = 0;
};

// Deterministic; linear in the graph. Measured time: the op's time for the cluster's device
// kind (devices[0].kind), else a "*" entry, else none (flags measured_exact / measured_any
// say which). cost_time comes from `cost` (the default cost model in the 3-argument form) on
// devices[0]. Throws InputError for a graph that is not finalized, a cluster without devices,
// or an op with a negative or non-finite flops, bytes_accessed or measured time.
NodeFeatures featurize(const Graph& g, const Cluster& c, const OpVocabulary& vocab);
NodeFeatures featurize(const Graph& g, const Cluster& c, const OpVocabulary& vocab,
                       const CostModel& cost);

}  // namespace gdp::rl
