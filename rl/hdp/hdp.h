// HDP, the hierarchical device placer of Mirhoseini et al. (ICLR 2018, "A Hierarchical Model
// for Device Placement"), a learned baseline trained by REINFORCE against the simulator. It
// follows TensorFlow grappler's hierarchical_controller.py (docs/baselines.md ("HDP") says where it
// differs):
//   grouper: op embedding [type index | output shapes | adjacency] -> linear (no bias, no
//            nonlinearity) -> linear -> softmax over G groups, one sample per colocation unit;
//   group embedding: [dag row | dag column | op-type counts | summed output-shape features],
//            each row divided by (its max + 1);
//   placer:  bi-LSTM encoder over the G group embeddings (H/2 per direction), attention memory
//            h_i W1; LSTM decoder fed the previous group's device embedding (a learned "go"
//            embedding first), attention v^T tanh(h W2 + mem), logits [h | context] W_softmax,
//            divided by the temperature, tanh * tanh_constant, plus logits noise early on;
//   training: minimize mean_k (R_k - b) (log p_group,k + log p_place,k), R = sqrt(step time),
//            an invalid placement costs sqrt(failing_signal); b a moving average (bl_dec);
//            Adam, global-norm clipping, staircase lr decay.
//
// Glossary: U = placement units (colocation groups, place/units.h), G = groups, D = devices,
// V = op types of the graph, E = group embedding width (2G + V + S), S = max_num_outputs *
// max_output_size, A = adj_embed_dim, H = hidden_size, K = placements per iteration.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/rng.h"
#include "nn/autograd.h"
#include "nn/lstm.h"
#include "nn/optim.h"
#include "nn/parameters.h"
#include "place/options.h"
#include "place/run.h"
#include "place/units.h"

namespace gdp::rl {

// Defaults are the reference's hierarchical_controller_hparams() where they apply.
// Defaults: the settings that work on this project's graphs and budgets (preset "tuned":
// H = 128, 4 placements per update, lr 0.01); the reference's (hierarchical_controller.py:
// H = 512, 1 placement, lr 0.1) are `reference()` and the method's option "preset":
// "reference". Why: docs/baselines.md, "HDP presets".
struct HdpConfig {
  int32_t hidden_size = 128;          // H (even: H/2 per encoder direction)
  int32_t grouping_hidden_size = 64;  // grouper feed-forward width
  int32_t num_groups = 0;             // G; 0 = min(256, 20 * devices)
  int32_t adj_embed_dim = 20;         // A
  int32_t max_num_outputs = 5;
  int32_t max_output_size = 5;
  double forget_bias_init = 1.0;
  double temperature = 1.0;
  double tanh_constant = 1.0;  // > 0: logits = tanh(logits) * tanh_constant
  double logits_std_noise = 0.5;
  int64_t stop_noise_step = 750;          // noise while iteration <= this
  double failing_signal = 100.0;          // seconds charged to an invalid placement
  std::string reward_function = "sqrt";   // "sqrt", "id", "log" (log1p)
  bool start_with_failing_signal = true;  // baseline starts at the failing cost (else 0)
  double bl_dec = 0.9;
  double grad_bound = 1.0;
  double lr = 0.01;
  double lr_dec = 0.95;
  int64_t start_decay_step = 400;
  int64_t decay_steps = 50;
  int64_t stop_updating_after_steps = 1000;  // then only valid placements update
  int32_t num_children = 4;                  // K

  // The reference's settings: H = 512, K = 1, lr 0.1, everything else as the defaults.
  static HdpConfig reference() {
    HdpConfig c;
    c.hidden_size = 512;
    c.num_children = 1;
    c.lr = 0.1;
    return c;
  }
};

// The cost REINFORCE minimizes for one placement: reward_function(step_s), or of the failing
// signal when the placement is invalid (out of memory). "sqrt": sqrt(100 s) = 10 by default.
double hdp_cost(double step_s, bool valid, double failing_signal = 100.0,
                const std::string& reward_function = "sqrt");
// The reference's learning rate at 0-based iteration `step`: lr before start_decay_step, then
// lr * lr_dec ^ floor((step - start_decay_step) / decay_steps).
double hdp_learning_rate(const HdpConfig& c, int64_t step);

// What the model needs of a graph, computed once.
struct HdpInputs {
  int32_t num_units = 0;    // U
  int32_t num_groups = 0;   // G
  int32_t num_devices = 0;  // D
  int32_t num_types = 0;    // V
  int32_t op_width = 0;     // 1 + S + A
  int32_t shape_width = 0;  // S
  place::Units units;
  std::vector<double> op_embedding;  // (U, op_width), the reference's fields scaled to O(1)
  std::vector<double> unit_shapes;   // (U, S) summed over the unit's ops, 0 where absent
  std::vector<std::vector<std::pair<int32_t, int32_t>>> unit_types;  // (U) (type, ops)
  std::vector<std::pair<int32_t, int32_t>> op_pairs;  // (src unit, dst unit) per op-level edge
  int32_t group_width() const { return 2 * num_groups + num_types + shape_width; }  // E
};
HdpInputs hdp_inputs(const Graph& g, int32_t num_devices, const HdpConfig& c);

template <typename T>
class BasicHdpModel {
 public:
  BasicHdpModel(const HdpInputs& in, const HdpConfig& c, uint64_t seed);

  struct Rollout {
    std::vector<std::vector<int32_t>> groups;   // (K, U) group of each unit
    std::vector<std::vector<int32_t>> devices;  // (K, G) device of each group
    nn::BasicVar<T> log_prob;                   // (K) log p_group + log p_place
    double entropy = 0;  // mean entropy of the device softmax over groups and samples
  };
  // Samples K placements (with the logits noise when `noise`), recording the graph for the
  // gradient of log_prob.
  Rollout sample(int32_t k, Rng& rng, bool noise);
  // log p of given groupings and device choices (no noise): the reference's "target" mode.
  nn::BasicVar<T> log_prob(const std::vector<std::vector<int32_t>>& groups,
                           const std::vector<std::vector<int32_t>>& devices);
  // The group embedding (G, E) of one grouping, as the reference's create_group_embeddings.
  std::vector<T> group_embedding(const std::vector<int32_t>& groups) const;
  // The placement (num_ops) of one sample.
  Placement placement(const Rollout& r, int32_t k) const;

  nn::BasicParameterBuffer<T>& params() { return params_; }
  const HdpInputs& inputs() const { return in_; }
  // Moves the parameters and constants to `device` (cuda: float models, builds with CUDA);
  // sampling stays on the host.
  void to_device(nn::Device device);

 private:
  Rollout run(int32_t k, Rng* rng, bool noise, const std::vector<std::vector<int32_t>>* groups,
              const std::vector<std::vector<int32_t>>* devices);

  HdpInputs in_;
  HdpConfig c_;
  nn::BasicParameterBuffer<T> params_;
  nn::Device device_ = nn::Device::cpu;
  nn::BasicVar<T> op_emb_;  // (U, op_width) constant
  nn::BasicVar<T> w_grouping_ff_, w_grouping_softmax_;
  std::unique_ptr<nn::BasicLstmCell<T>> enc_fw_, enc_bw_, dec_;
  nn::BasicVar<T> device_embeddings_, device_softmax_, device_go_, attn_w_1_, attn_w_2_, attn_v_;
};

using HdpModel = BasicHdpModel<float>;
using HdpModelD = BasicHdpModel<double>;

// HDP's training state on one problem: the model, Adam, the sampling stream and the
// moving-average baseline. Each step() is one REINFORCE iteration of K placements simulated
// through a place::Run. Driven by train_hdp (the "hdp" method) and by `gdp train --method hdp`
// (rl/hdp_learner.cpp), which checkpoints it with save()/load().
class HdpAgent {
 public:
  HdpAgent(const place::Problem& problem, const HdpConfig& c, uint64_t seed,
           nn::Device device = nn::Device::cpu);

  struct StepStats {
    int32_t samples = 0;
    double mean_step_s = 0;  // over the valid samples (+inf when none)
    double invalid_frac = 0;
    double entropy = 0;  // of the device softmax
    double loss = 0;     // mean (cost - baseline) * log p
    Placement last;      // the last placement sampled
  };
  // One iteration of min(K, k) samples (k >= 1: what the budget allows).
  StepStats step(place::Run& run, int64_t k);
  int64_t iterations() const { return step_; }
  double baseline() const { return baseline_; }
  const HdpConfig& config() const { return c_; }
  HdpModel& model() { return model_; }

  // The parameters and Adam in `bin` (nn/checkpoint.h); the rest as JSON.
  nlohmann::ordered_json save(const std::string& bin) const;
  void load(const nlohmann::json& state, const std::string& bin, const std::string& source);

 private:
  HdpConfig c_;
  HdpModel model_;
  Rng rng_;
  std::unique_ptr<nn::Adam> adam_;
  double baseline_ = 0;
  int64_t step_ = 0;
};

struct HdpTrainResult {
  int64_t iterations = 0;
  double entropy = 0;  // of the last iteration
  Placement last;      // the last placement sampled (the fallback when none was valid)
};
// Trains a fresh model on run.problem() until `max_samples` placements have been simulated
// (or the run's budget is spent), every sample through run.evaluate.
HdpTrainResult train_hdp(place::Run& run, const HdpConfig& c, int64_t max_samples);

// The "hdp" method's options (place/options.h) as a configuration: the one reading of them,
// for the method and for `gdp train --method hdp`.
HdpConfig hdp_config(const place::Options& o);

}  // namespace gdp::rl
