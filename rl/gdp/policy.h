// The GDP policy network (Zhou et al. 2019), from nn/ modules: one forward pass places every
// op of a graph (a single shot, not op by op).
//
//   x (N, F) | embed(op type) (N, E) -> h0 = relu(W_in [x | e] + W_g stats + b)   (N, D)
//   h = GraphSAGE_k(h0)                     predecessors and successors apart      (N, D)
//   h_t = h in topological order                                                   (N, D)
//   film = Superposition(h_t)               graph embedding gates each layer       (2L, D)
//   o = TransformerXL(h_t, film)            segments of S nodes, memory M, rel pos (N, D)
//       (ablation "attention": false -> o = film(relu(W_m h_t + b_m)), a per-node MLP;
//        "lstm": true -> o = film(LSTM(h_t)), one LSTM over the nodes in topological order:
//        HDP's recurrent placer on GDP's embeddings, the paper's RQ2)
//   node logits = W_o o + b_o                                                      (N, A)
//       (head "position": W_o's rows are computed from the devices, not learned per slot:
//        W_o = W_2 tanh(W_1 phi + b_1), b_o = w_b . tanh(W_1 phi + b_1), where phi (A, P) holds
//        each device's position p = (k + 0.5) / D as low harmonics of p, 1 / D, its memory and
//        speed relative to the cluster's largest, and whether it is the anchored slot. A
//        device's logit is then a smooth function of its position in [0, 1], so one network
//        serves any D: a 3- or 6-way split is the same function read at other points.)
//   unit logits = mean over each placement unit's nodes, + mask                    (U, A)
// A = max_devices; the columns of devices the cluster does not have are masked (-1e9), so one
// policy serves clusters of 2..A devices (head "slots": column k is device k's own weights,
// trained only by clusters with more than k devices; docs/policy.md, "The head"). A unit is a
// colocation group or a lone op (place/units.h): a group takes one decision.
//
// Symmetry anchor: on a cluster whose devices are interchangeable (identical specs and
// identical routes to the others, as in every preset), a placement and its relabelings have the
// same step time, so the expected policy gradient vanishes at the uniform initial policy (a
// saddle that only noise escapes). With `anchor` the topologically first unit is pinned to
// device 0 (its other columns masked): one representative per relabeling class of device 0,
// no placement lost up to symmetry, and a gradient from the first iteration
// (docs/policy.md, "Symmetry").
//
// Glossary: N = ops, U = placement units, A = device slots, F = node features (rl/gdp/features.h),
// E = op-type embedding, D = width, L = attention layers, S = segment, M = memory.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/rng.h"
#include "nn/autograd.h"
#include "nn/lstm.h"
#include "nn/parameters.h"
#include "nn/sage.h"
#include "nn/superposition.h"
#include "nn/transformer_xl.h"
#include "place/units.h"
#include "rl/gdp/features.h"
#include "sim/cost_model.h"

namespace gdp::rl {

struct PolicyConfig {
  int32_t max_devices = 8;       // A
  int32_t type_embedding = 16;   // E
  int32_t width = 64;            // D
  int32_t sage_layers = 2;       // k
  bool attention = true;         // false: a per-node MLP instead (ablation)
  bool lstm = false;             // true: an LSTM over the nodes instead of either (RQ2)
  int32_t attention_layers = 2;  // L
  int32_t heads = 4;
  int32_t ffn = 256;
  int32_t segment = 128;      // S
  int32_t memory = 128;       // M
  bool superposition = true;  // false: no graph-level gating (ablation)
  bool anchor = true;         // pin the first unit to device 0 on interchangeable devices
  int32_t film_hidden = 64;
  // Input feature set: 1, the first 36 node and 19 graph columns (policies trained before
  // the stage coordinates); 2, the first 39 and 20 (the stage coordinates too); 3, the
  // first 41 node columns and every graph column (the links' cost too: without it a
  // policy cannot tell NVLink from PCIe); 4, features 2's and the concurrency of each op's
  // stage rank (stage_fold, stage_share: what a cut needs to run an RNN's wavefront on every
  // device, place/stages.h); 5, features 4's and the critical path over op times (crit_top,
  // crit_bottom, crit_slack: which ops can run beside the longest path, as list schedulers
  // such as m-etf use it).
  int32_t features = 1;
  // What one decision places: "op", a colocation unit (a group or a lone op); "stage", every
  // op of one structural stage rank (place/stages.h: a parameter group and the ops that hang
  // off it, forward, backward and update), so that a reward difference has a cause the
  // network can learn (docs/ppo.md, "Transfer"); "cut", the stage units read through the cut
  // head (cut_head) instead of the device columns; "mix", the stage units cut along a blend of
  // stage coordinates whose weights are the decisions (mix_head).
  std::string decision = "op";
  // The output layer: "slots", one learned row per device slot (policies trained before the
  // position head); "position", rows computed from each device's position and specs (above).
  std::string head = "slots";
  int32_t head_hidden = 32;  // the position head's hidden width
  // One more decision per placement: how many devices to use, L in 1..D, from the graph's
  // pooled embedding and statistics (a row of its own, column L - 1; docs/policy.md, "Devices
  // used"). The unit decisions a in 0..D-1 then read as positions and are coarsened onto L
  // devices, device = floor(a L / D): L = 1 is the one-GPU placement, L = D the plain one, and a
  // contiguous run of positions stays contiguous. Every (L, a) has an exact log-probability, so
  // PPO learns "use fewer devices" from one sampled decision instead of from U unit decisions
  // that must all agree. An L whose devices 0..L-1 hold less memory than every placement
  // needs (sim/lower_bound.h, memory_lower_bound_bytes) is masked: never sampled, never greedy.
  bool devices_used = false;
  // An ordinal cut head beside the device columns (decision "cut"; docs/policy.md, "The cut
  // head"): one scalar per op, mu = 0.1 w . o + 5 w_x . c + b, where c holds the op's
  // structural coordinates (topological position, level, and the stage coordinates of its
  // feature set: a linear skip), pooled per stage unit as the mean over its ops; the unit's
  // logit for device k of D is -((k + 0.5 - D mu) / s)^2 / 2, s a learned width in devices.
  // mu is a position in [0, 1] along the devices whatever D is, so the same output is a
  // contiguous cut on 2 or on 6 GPUs, and a network whose mu follows a stage coordinate places
  // as a stage-cut of it would. Exact log-probabilities (the rows are categorical), so PPO and
  // every decoder treat it as any other decision. Implied by decision "cut" and by a training
  // run whose `decisions` list it (rl/gdp/config.h).
  bool cut_head = false;
  // Whether the cut head's loss trains the trunk (o) too; false: it reads o as it is, so
  // training a cut leaves the op and stage readings as their own losses make them.
  bool cut_trunk = false;
  // > 0: the cut head reads an encoder of its own (an input layer and sage_layers of GraphSAGE,
  // this wide, no attention) instead of the trunk, so that it learns what it needs without
  // moving the op and stage readings; 0: it reads the trunk's output.
  int32_t cut_width = 0;
  // The cut head's skip also reads stage_width (place/stages.h, by_width: parallel branches
  // side by side), so that mu can cut across the branches of a block as well as along depth.
  bool cut_branch = false;
  // The skip's weights depend on the graph: w_x + W_g . graph statistics (W_g starts at 0), so
  // that one head can cut one graph along depth and another across its branches.
  bool cut_graph_skip = false;
  // A head of few decisions per placement (decision "mix"; docs/policy.md, "The mix head"):
  // one cut of the stage units along a blend of their stage coordinates (mix_columns), mu_u =
  // b + sum_j w_j (c_uj - 0.5), device floor(D mu_u) clamped, where the bias b and each weight
  // w_j are one categorical decision over fixed bins (kMixBias, kMixWeights), their logits a
  // linear function of the graph statistics and of the coordinates' mean and spread over the
  // graph. Five decisions place a graph of any size, each with an exact log-probability, so one
  // scalar reward resolves them at a few samples (the exploration the per-unit readings lack:
  // a whole blend, e.g. the branches side by side, is one draw).
  bool mix_head = false;
  // What the mix head reads: true, the graph statistics and the coordinates' mean and spread;
  // false, the coordinates' mean and spread and the device count only (no absolute size, which
  // a linear map extrapolates badly from the pre-training graphs to a 53k-op one).
  bool mix_stats = true;
  // The mix head's weight gradients (place/stages.h, weight_gradient_ops) as units of their own,
  // and one more decision row: the shift s in [0, D) that puts each of them on device (d + s)
  // mod D, d its rank's device (s = 0 is the placement without it). A matrix product's weight
  // gradient then runs beside the input gradient on the critical path (what annealing finds on
  // ViT). The head reads the same inputs with or without it; the row has parameters of its own
  // (mix.shift.*), so that a run over a checkpoint with a mix head adds it (--init) and can
  // train it alone (TrainConfig::freeze).
  bool mix_wgrad = false;

  // Strict: unknown keys, wrong types and impossible values are InputErrors naming `source`
  // and the key. Missing keys keep their defaults.
  static PolicyConfig from_json(const nlohmann::json& j, const std::string& source);
  nlohmann::ordered_json to_json() const;  // every key
};

// What the policy needs of one (graph, cluster), computed once and reused every iteration.
template <typename T>
struct BasicPolicyInput {
  NodeFeatures features;
  place::Units units;
  std::vector<int64_t> unit_of_topo;  // (N) unit of the op at each topological position
  nn::BasicTensor<T> unit_scale;      // (U, 1) 1 / ops in the unit
  nn::BasicTensor<T> mask;            // (R, A) 0 for allowed devices, -1e9 for the others
  bool anchored = false;              // unit 0 pinned to device 0 (PolicyConfig::anchor)
  nn::BasicTensor<T> x, stats;        // features as T
  nn::BasicTensor<T> device_x;        // (A, P) the position head's device features (zeros else)
  int32_t num_devices = 0;
  bool devices_used = false;     // the logits' last row is the devices-used decision (PolicyConfig)
  bool cut = false;              // decision "cut": the unit rows come from the cut head
  nn::BasicTensor<T> cut_bins;   // (1, A) k + 0.5 for the devices k < D, 0 beyond (masked)
  nn::BasicTensor<T> cut_x;      // (N, C) the structural coordinates the cut head's skip reads
  bool mix = false;              // decision "mix": the rows are the blend's bias and weights
  int32_t mix_rows = 0;          // 1 + M with mix (+ 1 with mix_shift)
  int32_t mix_bins = 0;          // open bins per row: min(A, 8)
  nn::BasicTensor<T> mix_x;      // (1, I) [graph statistics |] the coordinates' mean and std
  std::vector<double> mix_unit;  // (U * M) each unit's mean coordinates (mix_columns)
  bool mix_shift = false;        // mix_wgrad: the last row is the weight gradients' shift
  std::vector<uint8_t> mix_part;  // (U) with mix_shift: 1 for a unit of weight gradients
  int32_t num_units() const { return units.num_units(); }
  // Decisions per placement (R): the units, and the devices-used row where there is one; with
  // "mix", the blend's 1 + M rows. The actions of K samples are (K * R), sample-major.
  int32_t num_rows() const { return mix ? mix_rows : num_units() + (devices_used ? 1 : 0); }
  // Moves the tensors the forward pass reads to `device` (the policy's parameters must be
  // there too: ParameterBuffer::to_device).
  void to_device(nn::Device device) {
    x = x.to_device(device);
    stats = stats.to_device(device);
    unit_scale = unit_scale.to_device(device);
    mask = mask.to_device(device);
    if (device_x.numel() > 0) device_x = device_x.to_device(device);
    if (cut_bins.numel() > 0) cut_bins = cut_bins.to_device(device);
    if (cut_x.numel() > 0) cut_x = cut_x.to_device(device);
    if (mix_x.numel() > 0) mix_x = mix_x.to_device(device);
  }
};

template <typename T>
class BasicPolicy {
 public:
  // Parameters initialized from `seed` (the same seed gives the same network).
  BasicPolicy(const PolicyConfig& config, OpVocabulary vocab, uint64_t seed);
  BasicPolicy(const BasicPolicy&) = delete;
  BasicPolicy& operator=(const BasicPolicy&) = delete;

  // Throws InputError when the cluster has more devices than max_devices. The cost model
  // prices the ops' time features (the caller's, so that --profile reaches them). `decision`
  // ("op", "stage" or "cut"; empty: the config's) chooses what one decision places: the node
  // logits are the same, only their pooling into unit rows differs, so a policy trained with
  // one can be decoded with the other (zero-shot's option "decode"); "cut" reads the cut head
  // (std::invalid_argument for a policy without one) over the stage units.
  BasicPolicyInput<T> prepare(const Graph& g, const Cluster& c, const CostModel& cost = CostModel(),
                              const std::string& decision = "") const;
  // Decision logits (R, A), masked beyond the cluster's devices: the U units' rows, then the
  // devices-used row (PolicyConfig::devices_used).
  nn::BasicVar<T> forward(const BasicPolicyInput<T>& in) const;

  const PolicyConfig& config() const { return config_; }
  const OpVocabulary& vocabulary() const { return vocab_; }
  // Feature columns the network reads (PolicyConfig::features).
  int32_t node_width() const { return static_cast<int32_t>(node_columns().size()); }
  // The columns of NodeFeatures::x it reads, in order.
  std::vector<int32_t> node_columns() const;
  int32_t graph_width() const {
    return config_.features == 1                            ? kGraphFeaturesV1
           : config_.features == 2 || config_.features >= 4 ? kGraphFeaturesV2
                                                            : kGraphFeatures;
  }
  nn::BasicParameterBuffer<T>& params() { return params_; }
  const nn::BasicParameterBuffer<T>& params() const { return params_; }

 private:
  PolicyConfig config_;
  OpVocabulary vocab_;
  Rng rng_;  // initialization only; declared before the modules it initializes
  nn::BasicParameterBuffer<T> params_;
  nn::BasicVar<T> type_table_;         // (V, E)
  nn::BasicVar<T> w_in_, b_in_, w_g_;  // (D, F + E), (D), (D, G)
  std::unique_ptr<nn::BasicSageEncoder<T>> sage_;
  std::unique_ptr<nn::BasicSuperposition<T>> film_;
  std::unique_ptr<nn::BasicTransformerXL<T>> xl_;
  nn::BasicVar<T> w_m_, b_m_;                   // (D, D), (D): the MLP of the no-attention ablation
  std::unique_ptr<nn::BasicLstmCell<T>> lstm_;  // the recurrent placer (config.lstm)
  nn::BasicVar<T> w_out_, b_out_;               // (A, D), (A): the slots head
  nn::BasicVar<T> w_h1_, b_h1_, w_h2_, w_hb_;   // (H, P), (H), (D, H), (1, H): the position head
  nn::BasicVar<T> w_c_, b_c_, w_cg_;            // (A, D), (A), (A, G): the devices-used row
  nn::BasicVar<T> w_cut_, w_cut_x_, b_cut_, log_cut_width_;  // (1, D), (1, C), (1), (1)
  nn::BasicVar<T> w_cut_in_, b_cut_in_, w_cut_g_;  // the cut head's own encoder (cut_width)
  nn::BasicVar<T> w_cut_xg_;                       // (C, G) cut_graph_skip
  nn::BasicVar<T> w_mix_, b_mix_;                  // ((1 + M) A, G + 2M), ((1 + M) A) mix_head
  nn::BasicVar<T> w_shift_, b_shift_;              // (A, G + 2M), (A) mix_wgrad's shift row
  std::unique_ptr<nn::BasicSageEncoder<T>> sage_cut_;
};

// The node feature columns (rl::feat) the cut head's skip reads under a feature set
// (PolicyConfig::features): topo_pos and level; the stage coordinates from features 2 on; the
// concurrency (stage_fold, stage_share) from features 4 on; crit_top with features 5.
// Structural coordinates only: a cut is a position along the graph's depth.
std::vector<int32_t> cut_columns(int32_t features, bool branch = false);
// The mix head (PolicyConfig::mix_head): the stage coordinates it blends (stage_time,
// stage_memory, stage_fold, stage_width; M = 4), and its bins, B = min(A, 8) open per row: row
// 0 the bias b, bin k giving k / B (b = 0 with every weight 0: one device; b = 0.5 with the
// width's weight 1: the width control); rows 1..M the weights, bin k giving kMixWeights[k].
const std::vector<int32_t>& mix_columns();
inline constexpr double kMixWeights[8] = {-1, -0.5, 0, 0.25, 0.5, 0.75, 1, 1.5};

// Copies every parameter of `from` into the parameter of the same name and shape in `to`;
// returns how many were copied (a policy given a head its checkpoint lacks keeps that head's
// initial values). Throws std::invalid_argument on a name whose shapes differ.
int64_t copy_parameters_by_name(const nn::ParameterBuffer& from, nn::ParameterBuffer& to);

using Policy = BasicPolicy<float>;
using PolicyD = BasicPolicy<double>;
using PolicyInput = BasicPolicyInput<float>;
using PolicyInputD = BasicPolicyInput<double>;

// The policy's actions (R) for a placement: each unit's device (its first op's), relabeled on
// an anchored input so that unit 0 is on label 0 (a relabeling has the same step time), then
// encode_devices.
std::vector<int32_t> unit_actions(const Placement& p, const PolicyInput& in);
// Actions (R) for unit devices d (U, in the policy's label space): d itself (on an anchored cut
// input, its devices renumbered in the order the units first use them: a placement's positions
// along a cut, the same step on interchangeable devices, so that the targets of every graph
// and of successive elites agree), or with the devices-used row its canonical latent form, the
// fewest devices L = 1 + max_u d_u and positions a_u = ceil(d_u D / L), which decode back to d
// exactly (floor(a_u L / D) = d_u). So one placement has one encoding (elites deduplicate on it)
// and imitating a one-GPU placement teaches L = 1.
std::vector<int32_t> encode_devices(std::vector<int32_t> d, const PolicyInput& in);
// The unit devices (U) of sample k of actions (K * R): with the devices-used row, each unit's
// position coarsened onto the sample's L devices, floor(a L / D).
std::vector<int32_t> unit_devices(const PolicyInput& in, const std::vector<int32_t>& actions,
                                  int32_t k);

// The position head's device features (P = kDeviceFeatures columns): per device slot k < D of
// cluster c, the harmonics cos(j pi p), sin(j pi p) (j = 1..4, columns 2(j-1) and 2(j-1)+1) of
// p = (k + 0.5) / D, then the named columns below; zeros for the slots k >= D (masked).
// (A, P), row-major.
namespace devfeat {
enum DeviceColumn : int32_t {
  position = 8,  // p
  inv_count,     // 1 / D
  memory,        // memory over the cluster's largest
  flops,         // peak fp32 flops over the cluster's largest
  anchor,        // 1 on the anchored slot (slot 0 when `anchored`)
  one,           // a constant 1 (what tells an open slot from a masked one)
  kCount
};
}  // namespace devfeat
constexpr int32_t kDeviceFeatures = devfeat::kCount;
std::vector<float> device_features(const Cluster& c, int32_t max_devices, bool anchored);

// Sampling from unit logits (values, no tape), softmax(logits / temperature). actions (K * U),
// sample-major; the same rng state gives the same actions.
std::vector<int32_t> sample_actions(const nn::Tensor& logits, int32_t K, Rng& rng,
                                    double temperature = 1);
std::vector<int32_t> greedy_actions(const nn::Tensor& logits);
// The placement of sample k: every op on its unit's device. actions (K * U).
Placement placement_of(const place::Units& units, const std::vector<int32_t>& actions, int32_t k);
// The same for the policy's actions (K * R): the ops of unit u on unit_devices(in, actions, k)[u].
Placement placement_of(const PolicyInput& in, const std::vector<int32_t>& actions, int32_t k);
// Each unit's distribution over devices as logits (U, A), on the host: the unit rows of the
// decision logits (R, A); with the devices-used row, the log of the marginal
//   P(d | u) = sum_L P(L) sum_{a : floor(a L / D) = d} P(a | u),
// kMaskedLogit where it is 0. For annealing guides and local proposals, which move devices.
nn::Tensor unit_rows(const nn::Tensor& logits, const PolicyInput& in);

}  // namespace gdp::rl
