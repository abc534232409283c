// The GDP policy network: configuration, per-graph inputs, forward pass, sampling.
#include "rl/gdp/policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "core/error.h"
#include "core/json_strict.h"
#include "nn/graph_ops.h"
#include "nn/ops.h"
#include "nn/sampling.h"
#include "place/stages.h"
#include "rl/gdp/ppo.h"
#include "sim/lower_bound.h"

namespace gdp::rl {

namespace {

constexpr double kMaskLogit = kMaskedLogit;  // rl/gdp/ppo.h
// The cut head (PolicyConfig::cut_head): z = kCutTrunkGain w . o + kCutSkipGain w_x . c + b.
// Adam moves every weight by about lr a step whatever its gradient's scale, so a gain is a
// per-path step size: the trunk path (64 inputs of unit variance) at 0.1, so that one step moves
// mu by a few hundredths; the skip over the few structural coordinates c at 5, so that a
// coordinate can carry mu across [0, 1] within tens of steps (measured: with the skip over all
// 82 input columns at gain 10, the first update moved the policy by an approximate KL of 2).
constexpr double kCutTrunkGain = 0.1;
constexpr double kCutSkipGain = 5;
// cut_graph_skip: the skip's weights are w_x + kCutGraphGain W_g . s over the graph statistics
// s (about 20 of them, each of order 1), so that one step of W_g moves a skip weight by about as
// much as one step of w_x.
constexpr double kCutGraphGain = 0.05;

int32_t int_key(const StrictJson& sj, const nlohmann::json& j, const char* key, int32_t def,
                int32_t lo, int32_t hi) {
  if (!j.contains(key)) return def;
  return static_cast<int32_t>(sj.integer(j, key, "", lo, hi));
}
bool bool_key(const StrictJson& sj, const nlohmann::json& j, const char* key, bool def) {
  return j.contains(key) ? sj.boolean(j, key, "") : def;
}

// Rows standardized per channel over the graph's ops (mean 0, variance 1), then reordered to
// topological order: what the attention and the cut head's own encoder read.
template <typename T>
nn::BasicVar<T> standardized_in_topo_order(const nn::BasicVar<T>& h,
                                           const std::vector<int64_t>& topo) {
  const nn::BasicVar<T> centered = nn::sub(h, nn::mean(h, 0, true));
  const nn::BasicVar<T> spread =
      nn::sqrt(nn::add_scalar(nn::mean(nn::square(centered), 0, true), T(1e-5)));
  return nn::gather_rows(nn::div(centered, spread), topo);
}

}  // namespace

const std::vector<int32_t>& mix_columns() {
  static const std::vector<int32_t> c{feat::stage_time, feat::stage_memory, feat::stage_fold,
                                      feat::stage_width};
  return c;
}

std::vector<int32_t> cut_columns(int32_t features, bool branch) {
  std::vector<int32_t> c{feat::topo_pos, feat::level};
  if (features >= 2) c.insert(c.end(), {feat::stage_time, feat::stage_memory, feat::stage_rank});
  if (features >= 4) c.insert(c.end(), {feat::stage_fold, feat::stage_share});
  if (features >= 5) c.push_back(feat::crit_top);
  if (branch) c.push_back(feat::stage_width);
  return c;
}

PolicyConfig PolicyConfig::from_json(const nlohmann::json& j, const std::string& source) {
  StrictJson sj(source);
  sj.check_keys(j, "", {}, {"max_devices",      "type_embedding", "width",
                            "sage_layers",      "attention",      "lstm",
                            "attention_layers", "heads",          "ffn",
                            "segment",          "memory",         "superposition",
                            "film_hidden",      "anchor",         "features",
                            "decision",         "head",           "head_hidden",
                            "devices_used",     "cut_head",       "cut_trunk",
                            "cut_width",        "cut_branch",     "cut_graph_skip",
                            "mix_head",         "mix_stats",      "mix_wgrad"});
  PolicyConfig c;
  c.max_devices = int_key(sj, j, "max_devices", c.max_devices, 1, 1024);
  c.type_embedding = int_key(sj, j, "type_embedding", c.type_embedding, 1, 4096);
  c.width = int_key(sj, j, "width", c.width, 1, 8192);
  c.sage_layers = int_key(sj, j, "sage_layers", c.sage_layers, 1, 16);
  c.attention = bool_key(sj, j, "attention", c.attention);
  c.lstm = bool_key(sj, j, "lstm", c.lstm);
  c.attention_layers = int_key(sj, j, "attention_layers", c.attention_layers, 1, 32);
  c.heads = int_key(sj, j, "heads", c.heads, 1, 256);
  c.ffn = int_key(sj, j, "ffn", c.ffn, 1, 65536);
  c.segment = int_key(sj, j, "segment", c.segment, 1, 1 << 20);
  c.memory = int_key(sj, j, "memory", c.memory, 0, 1 << 20);
  c.superposition = bool_key(sj, j, "superposition", c.superposition);
  c.film_hidden = int_key(sj, j, "film_hidden", c.film_hidden, 1, 65536);
  c.anchor = bool_key(sj, j, "anchor", c.anchor);
  c.features = int_key(sj, j, "features", c.features, 1, 5);
  if (j.contains("decision")) {
    c.decision = sj.string(j, "decision", "");
    if (c.decision != "op" && c.decision != "stage" && c.decision != "cut" && c.decision != "mix")
      sj.fail("decision",
              "expected \"op\", \"stage\", \"cut\" or \"mix\", got \"" + c.decision + "\"");
  }
  if (j.contains("head")) {
    c.head = sj.string(j, "head", "");
    if (c.head != "slots" && c.head != "position")
      sj.fail("head", "expected \"slots\" or \"position\", got \"" + c.head + "\"");
  }
  c.head_hidden = int_key(sj, j, "head_hidden", c.head_hidden, 1, 4096);
  c.devices_used = bool_key(sj, j, "devices_used", c.devices_used);
  c.cut_head = bool_key(sj, j, "cut_head", c.cut_head) || c.decision == "cut";
  c.cut_trunk = bool_key(sj, j, "cut_trunk", c.cut_trunk);
  c.cut_width = int_key(sj, j, "cut_width", c.cut_width, 0, 8192);
  c.cut_branch = bool_key(sj, j, "cut_branch", c.cut_branch);
  c.cut_graph_skip = bool_key(sj, j, "cut_graph_skip", c.cut_graph_skip);
  c.mix_head = bool_key(sj, j, "mix_head", c.mix_head) || c.decision == "mix";
  c.mix_stats = bool_key(sj, j, "mix_stats", c.mix_stats);
  c.mix_wgrad = bool_key(sj, j, "mix_wgrad", c.mix_wgrad);
  if (c.width % c.heads != 0)
    sj.fail("heads", "expected a divisor of width " + std::to_string(c.width) + ", got " +
                         std::to_string(c.heads));
  return c;
}

nlohmann::ordered_json PolicyConfig::to_json() const {
  nlohmann::ordered_json j;
  j["max_devices"] = max_devices;
  j["type_embedding"] = type_embedding;
  j["width"] = width;
  j["sage_layers"] = sage_layers;
  j["attention"] = attention;
  j["lstm"] = lstm;
  j["attention_layers"] = attention_layers;
  j["heads"] = heads;
  j["ffn"] = ffn;
  j["segment"] = segment;
  j["memory"] = memory;
  j["superposition"] = superposition;
  j["film_hidden"] = film_hidden;
  j["anchor"] = anchor;
  j["features"] = features;
  j["decision"] = decision;
  j["head"] = head;
  j["head_hidden"] = head_hidden;
  j["devices_used"] = devices_used;
  j["cut_head"] = cut_head;
  j["cut_trunk"] = cut_trunk;
  j["cut_width"] = cut_width;
  j["cut_branch"] = cut_branch;
  j["cut_graph_skip"] = cut_graph_skip;
  j["mix_head"] = mix_head;
  j["mix_stats"] = mix_stats;
  j["mix_wgrad"] = mix_wgrad;
  return j;
}

template <typename T>
std::vector<int32_t> BasicPolicy<T>::node_columns() const {
  const int32_t first = config_.features == 1   ? kNodeFeaturesV1
                        : config_.features == 3 ? kNodeFeaturesV3
                                                : kNodeFeaturesV2;
  std::vector<int32_t> cols(static_cast<size_t>(first));
  std::iota(cols.begin(), cols.end(), 0);
  if (config_.features >= 4) {
    cols.push_back(feat::stage_fold);
    cols.push_back(feat::stage_share);
  }
  if (config_.features >= 5)
    cols.insert(cols.end(), {feat::crit_top, feat::crit_bottom, feat::crit_slack});
  return cols;
}

template <typename T>
BasicPolicy<T>::BasicPolicy(const PolicyConfig& config, OpVocabulary vocab, uint64_t seed)
    : config_(config), vocab_(std::move(vocab)), rng_(seed) {
  const PolicyConfig& c = config_;
  const int32_t D = c.width, E = c.type_embedding, A = c.max_devices;
  auto bound = [](int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
  type_table_ = params_.add_normal("embed.type", {vocab_.size(), E}, 1.0, rng_);
  const int32_t F = node_width(), G = graph_width();
  w_in_ = params_.add_uniform("in.w", {D, 2 * F + E}, bound(2 * F + E), rng_);
  b_in_ = params_.add_uniform("in.b", {D}, bound(2 * F + E), rng_);
  w_g_ = params_.add_uniform("in.w_graph", {D, G}, bound(G), rng_);
  sage_ = std::make_unique<nn::BasicSageEncoder<T>>(
      params_, "sage", nn::SageConfig{D, D, c.sage_layers, true}, rng_);
  const bool xl = c.attention && !c.lstm;
  const int32_t film_layers = xl ? c.attention_layers : 1;
  if (c.superposition)
    film_ = std::make_unique<nn::BasicSuperposition<T>>(
        params_, "film", nn::SuperpositionConfig{D, c.film_hidden, film_layers}, rng_);
  if (c.lstm) {
    lstm_ = std::make_unique<nn::BasicLstmCell<T>>(params_, "lstm", nn::LstmConfig{D, D}, rng_);
  } else if (xl) {
    xl_ = std::make_unique<nn::BasicTransformerXL<T>>(
        params_, "xl",
        nn::TransformerXLConfig{D, c.heads, c.attention_layers, c.ffn, c.segment, c.memory, false,
                                1e-5},
        rng_);
  } else {
    w_m_ = params_.add_uniform("mlp.w", {D, D}, bound(D), rng_);
    b_m_ = params_.add_uniform("mlp.b", {D}, bound(D), rng_);
  }
  // A small output layer: the first placements are close to uniform, as PPO wants.
  if (c.head == "position") {
    const int32_t H = c.head_hidden, P = kDeviceFeatures;
    w_h1_ = params_.add_uniform("head.w1", {H, P}, bound(P), rng_);
    b_h1_ = params_.add_uniform("head.b1", {H}, bound(P), rng_);
    w_h2_ = params_.add_uniform("head.w2", {D, H}, 0.01 * bound(D), rng_);
    w_hb_ = params_.add_constant("head.wb", {1, H}, T(0));
  } else {
    w_out_ = params_.add_uniform("out.w", {A, D}, 0.01 * bound(D), rng_);
    b_out_ = params_.add_constant("out.b", {A}, T(0));
  }
  if (c.devices_used) {  // starts near uniform over L, as the unit rows do
    w_c_ = params_.add_uniform("count.w", {A, D}, 0.01 * bound(D), rng_);
    b_c_ = params_.add_constant("count.b", {A}, T(0));
    w_cg_ = params_.add_uniform("count.w_graph", {A, G}, 0.01 * bound(G), rng_);
  }
  if (c.cut_head) {  // last, so that the parameters before it are those of a policy without it
    // mu starts near the middle of the devices for every unit (b = 0.5; the skip's small
    // random weights spread it by about one device on 8, which breaks the tie between a cut
    // and its mirror image that a zero start would sit on), with a width of s = 1 device.
    const int32_t Wc = c.cut_width > 0 ? c.cut_width : D;  // what the readout w reads
    if (c.cut_width > 0) {  // an encoder of its own: input layer and GraphSAGE, no attention
      w_cut_in_ = params_.add_uniform("cut.in.w", {Wc, 2 * F}, bound(2 * F), rng_);
      b_cut_in_ = params_.add_uniform("cut.in.b", {Wc}, bound(2 * F), rng_);
      w_cut_g_ = params_.add_uniform("cut.in.w_graph", {Wc, G}, bound(G), rng_);
      sage_cut_ = std::make_unique<nn::BasicSageEncoder<T>>(
          params_, "cut.sage", nn::SageConfig{Wc, Wc, c.sage_layers, true}, rng_);
    }
    w_cut_ = params_.add_uniform("cut.w", {1, Wc}, bound(Wc), rng_);
    const int64_t C = static_cast<int64_t>(cut_columns(c.features, c.cut_branch).size());
    w_cut_x_ = params_.add_uniform("cut.w_x", {1, C}, 0.01, rng_);
    b_cut_ = params_.add_constant("cut.b", {1}, T(0.5));
    log_cut_width_ = params_.add_constant("cut.log_width", {1}, T(0));
    if (c.cut_graph_skip) w_cut_xg_ = params_.add_constant("cut.w_x_graph", {C, G}, T(0));
  }
  if (c.mix_head) {  // last: logits near uniform over the bins (small weights, zero bias)
    const int32_t M = static_cast<int32_t>(mix_columns().size());
    const int32_t I = (c.mix_stats ? G : 1) + 2 * M;
    w_mix_ = params_.add_uniform("mix.w", {(1 + M) * A, I}, 0.01 * bound(I), rng_);
    b_mix_ = params_.add_constant("mix.b", {(1 + M) * A}, T(0));
    if (c.mix_wgrad) {  // the shift row: parameters of its own, so that a head gains it
      w_shift_ = params_.add_uniform("mix.shift.w", {A, I}, 0.01 * bound(I), rng_);
      b_shift_ = params_.add_constant("mix.shift.b", {A}, T(0));
    }
  }
}

int64_t copy_parameters_by_name(const nn::ParameterBuffer& from, nn::ParameterBuffer& to) {
  const nn::Tensor src = from.values().cpu().contiguous();
  nn::Tensor dst = to.values();
  if (dst.device() != nn::Device::cpu)
    throw std::invalid_argument("copy_parameters_by_name: the target must be on the cpu");
  int64_t copied = 0;
  for (const auto& e : from.entries()) {
    const auto* t = to.find(e.name);
    if (!t) continue;
    if (t->shape != e.shape)
      throw std::invalid_argument("copy_parameters_by_name: parameter '" + e.name +
                                  "' has another shape in the target");
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    std::copy(src.data() + e.offset, src.data() + e.offset + n, dst.data() + t->offset);
    ++copied;
  }
  return copied;
}

std::vector<float> device_features(const Cluster& c, int32_t max_devices, bool anchored) {
  const int32_t D = c.num_devices(), P = kDeviceFeatures;
  double mem = 0, flops = 0;
  for (const auto& d : c.devices) {
    mem = std::max(mem, static_cast<double>(d.memory_bytes));
    flops = std::max(flops, d.peak_fp32_flops);
  }
  std::vector<float> f(static_cast<size_t>(max_devices) * P, 0.0f);
  for (int32_t k = 0; k < std::min(D, max_devices); ++k) {
    float* r = f.data() + static_cast<size_t>(k) * P;
    const double p = (k + 0.5) / D;
    for (int32_t j = 1; j <= 4; ++j) {
      r[2 * (j - 1)] = static_cast<float>(std::cos(j * M_PI * p));
      r[2 * (j - 1) + 1] = static_cast<float>(std::sin(j * M_PI * p));
    }
    r[devfeat::position] = static_cast<float>(p);
    r[devfeat::inv_count] = static_cast<float>(1.0 / D);
    const DeviceSpec& spec = c.devices[static_cast<size_t>(k)];
    r[devfeat::memory] = mem > 0 ? static_cast<float>(spec.memory_bytes / mem) : 0.0f;
    r[devfeat::flops] = flops > 0 ? static_cast<float>(spec.peak_fp32_flops / flops) : 0.0f;
    r[devfeat::anchor] = anchored && k == 0 ? 1.0f : 0.0f;
    r[devfeat::one] = 1.0f;
  }
  return f;
}

template <typename T>
BasicPolicyInput<T> BasicPolicy<T>::prepare(const Graph& g, const Cluster& c, const CostModel& cost,
                                            const std::string& decision) const {
  const std::string& unit = decision.empty() ? config_.decision : decision;
  if (unit != "op" && unit != "stage" && unit != "cut" && unit != "mix")
    throw std::invalid_argument(
        "policy prepare: decision must be \"op\", \"stage\", \"cut\" or \"mix\", got \"" + unit +
        "\"");
  if (unit == "cut" && !config_.cut_head)
    throw std::invalid_argument("policy prepare: decision \"cut\" needs a policy with a cut head");
  if (unit == "mix" && !config_.mix_head)
    throw std::invalid_argument("policy prepare: decision \"mix\" needs a policy with a mix head");
  const int32_t D = c.num_devices();
  if (D > config_.max_devices)
    throw InputError("policy: cluster '" + c.name + "' has " + std::to_string(D) +
                     " devices; this policy places on at most max_devices = " +
                     std::to_string(config_.max_devices));
  BasicPolicyInput<T> in;
  in.features = featurize(g, c, vocab_, cost);
  in.cut = unit == "cut";
  in.units = unit != "op"
                 ? place::stage_units(g, in.features.stage_rank, in.features.num_stage_ranks)
                 : place::Units::colocation(g);
  in.mix_shift = unit == "mix" && config_.mix_wgrad;
  if (in.mix_shift)
    in.units = place::split_units(g, in.units, place::weight_gradient_ops(g), &in.mix_part);
  in.num_devices = D;
  const int32_t N = g.num_ops(), U = in.units.num_units(), A = config_.max_devices;
  in.unit_of_topo.resize(N);
  std::vector<T> count(U, T(0));
  for (int32_t k = 0; k < N; ++k) {
    const int32_t u = in.units.unit_of[in.features.topo[k]];
    in.unit_of_topo[k] = u;
    count[u] += T(1);
  }
  std::vector<T> scale(U);
  for (int32_t u = 0; u < U; ++u) scale[u] = T(1) / count[u];
  in.unit_scale = nn::BasicTensor<T>::from_vector({U, 1}, scale);
  in.mix = unit == "mix";
  in.devices_used = config_.devices_used && !in.mix;
  const std::vector<int32_t>& mix_cols = mix_columns();
  const int32_t M = static_cast<int32_t>(mix_cols.size());
  if (in.mix) {
    in.mix_rows = 1 + M + (in.mix_shift ? 1 : 0);
    in.mix_bins = std::min(A, 8);
  }
  const int32_t R = in.num_rows();
  std::vector<T> mask(static_cast<size_t>(R) * A, T(0));
  for (int32_t u = 0; u < R; ++u)
    for (int32_t a = D; a < A; ++a) mask[static_cast<size_t>(u) * A + a] = T(kMaskLogit);
  if (in.mix)  // the rows are bins, not devices: the first min(A, 8) of each row are open
    for (int32_t r = 0; r < R; ++r)
      for (int32_t a = 0; a < A; ++a)
        mask[static_cast<size_t>(r) * A + a] = a < in.mix_bins ? T(0) : T(kMaskLogit);
  if (in.mix_shift)  // the shift row: s < D
    for (int32_t a = D; a < A; ++a) mask[static_cast<size_t>(R - 1) * A + a] = T(kMaskLogit);
  in.anchored = !in.mix && config_.anchor && D > 1 && c.devices_interchangeable();
  if (in.anchored)
    for (int32_t a = 1; a < D; ++a) mask[a] = T(kMaskLogit);  // unit 0: device 0 only
  if (in.devices_used) {  // no L whose devices 0..L-1 cannot hold what every placement holds
    const int32_t least = fewest_devices_holding(c, memory_lower_bound_bytes(g));
    for (int32_t L = 1; L < D; ++L)  // L = D stays open even when nothing fits
      if (least == 0 || L < least) mask[static_cast<size_t>(U) * A + L - 1] = T(kMaskLogit);
  }
  in.mask = nn::BasicTensor<T>::from_vector({R, A}, mask);
  if (in.mix) {  // each unit's mean coordinates; the coordinates' mean and std over the ops
    const nn::Tensor& xf = in.features.x;
    in.mix_unit.assign(static_cast<size_t>(U) * M, 0.0);
    std::vector<double> sum(M, 0), sq(M, 0);
    for (int32_t v = 0; v < N; ++v)
      for (int32_t j = 0; j < M; ++j) {
        const double c_vj = xf[static_cast<int64_t>(v) * kNodeFeatures + mix_cols[j]];
        in.mix_unit[static_cast<size_t>(in.units.unit_of[v]) * M + j] += c_vj;
        sum[j] += c_vj;
        sq[j] += c_vj * c_vj;
      }
    for (int32_t u = 0; u < U; ++u)
      for (int32_t j = 0; j < M; ++j)
        in.mix_unit[static_cast<size_t>(u) * M + j] *= static_cast<double>(scale[u]);
    // [graph statistics | mean | std], or [log2 D | mean | std] without mix_stats.
    const int32_t G = config_.mix_stats ? graph_width() : 1;
    std::vector<T> mx(static_cast<size_t>(G + 2 * M));
    const float* gs = in.features.graph_stats.data();
    if (config_.mix_stats)
      for (int32_t k = 0; k < G; ++k) mx[k] = static_cast<T>(gs[k]);
    else
      mx[0] = static_cast<T>(std::log2(static_cast<double>(D)));
    for (int32_t j = 0; j < M; ++j) {
      const double mean = N > 0 ? sum[j] / N : 0;
      mx[G + j] = static_cast<T>(mean);
      mx[G + M + j] = static_cast<T>(N > 0 ? std::sqrt(std::max(0.0, sq[j] / N - mean * mean)) : 0);
    }
    in.mix_x = nn::BasicTensor<T>::from_vector({1, G + 2 * M}, mx);
  }
  if (in.cut) {
    std::vector<T> bins(static_cast<size_t>(A), T(0));
    for (int32_t k = 0; k < D; ++k) bins[static_cast<size_t>(k)] = T(k + 0.5);
    in.cut_bins = nn::BasicTensor<T>::from_vector({1, A}, bins);
    const std::vector<int32_t> cols = cut_columns(config_.features, config_.cut_branch);
    const int64_t C = static_cast<int64_t>(cols.size());
    std::vector<T> cx(static_cast<size_t>(N) * C);
    for (int32_t k = 0; k < N; ++k)  // topological order, as o
      for (int64_t j = 0; j < C; ++j)
        cx[static_cast<size_t>(k * C + j)] = static_cast<T>(
            in.features.x[in.features.topo[k] * kNodeFeatures + cols[static_cast<size_t>(j)]]);
    in.cut_x = nn::BasicTensor<T>::from_vector({N, C}, cx);
  }
  if (config_.head == "position") {
    const std::vector<float> f = device_features(c, A, in.anchored);
    in.device_x =
        nn::BasicTensor<T>::from_vector({A, kDeviceFeatures}, std::vector<T>(f.begin(), f.end()));
  }
  // [x | x standardized per column over this graph's ops]: the raw features keep the absolute
  // scale that transfers between graphs; the standardized copy makes the differences between
  // the ops of one graph as large as the features allow (without it the node embeddings of a
  // graph are nearly equal and the policy can only learn one device preference for all).
  {
    const nn::Tensor& xf = in.features.x;
    const std::vector<int32_t> cols = node_columns();  // the columns the policy reads
    const int64_t W = xf.dim(1), F = static_cast<int64_t>(cols.size());
    std::vector<T> xs(static_cast<size_t>(N) * 2 * F);
    for (int64_t f = 0; f < F; ++f) {
      const int64_t k = cols[static_cast<size_t>(f)];
      double mean = 0, sq = 0;
      for (int64_t i = 0; i < N; ++i) mean += xf[i * W + k];
      mean /= N;
      for (int64_t i = 0; i < N; ++i) sq += (xf[i * W + k] - mean) * (xf[i * W + k] - mean);
      const double inv = 1.0 / std::sqrt(sq / N + 1e-6);
      for (int64_t i = 0; i < N; ++i) {
        xs[i * 2 * F + f] = static_cast<T>(xf[i * W + k]);
        xs[i * 2 * F + F + f] = static_cast<T>((xf[i * W + k] - mean) * inv);
      }
    }
    in.x = nn::BasicTensor<T>::from_vector({N, 2 * F}, xs);
  }
  {
    const float* gs = in.features.graph_stats.data();
    in.stats =
        nn::BasicTensor<T>::from_vector({1, graph_width()}, std::vector<T>(gs, gs + graph_width()));
  }
  return in;
}

template <typename T>
nn::BasicVar<T> BasicPolicy<T>::forward(const BasicPolicyInput<T>& in) const {
  using V = nn::BasicVar<T>;
  const V x(in.x), stats(in.stats);
  if (in.mix) {  // the blend's rows from the graph alone: no trunk
    if (!w_mix_.defined())
      throw std::invalid_argument("policy forward: a \"mix\" input needs a policy with a mix head");
    V flat = nn::linear(V(in.mix_x), w_mix_, b_mix_);  // (1, R A)
    if (in.mix_shift) {
      if (!w_shift_.defined())
        throw std::invalid_argument("policy forward: a shift row needs a policy with mix_wgrad");
      flat = nn::concat<T>({flat, nn::linear(V(in.mix_x), w_shift_, b_shift_)}, 1);
    }
    return nn::add(nn::reshape(flat, {in.num_rows(), config_.max_devices}), V(in.mask));
  }
  // The cut head with an encoder of its own reads no trunk (unless a devices-used row does).
  const bool own_cut = in.cut && sage_cut_;
  V o;
  if (!own_cut || w_c_.defined()) {
    const V e = nn::embedding(type_table_, in.features.op_type);
    // Graph statistics enter every node as a learned bias (broadcast over the rows).
    const V h0 = nn::relu(
        nn::add(nn::linear(nn::concat<T>({x, e}, 1), w_in_, b_in_), nn::linear(stats, w_g_, V())));
    const V h = sage_->forward(h0, in.features.adj);
    // The graph embedding (superposition) sees the raw node embeddings; the attention sees them
    // standardized over the graph's ops (mean 0, variance 1 per channel): without this the
    // embeddings share a large common component, every op gets nearly the same logits and the
    // policy can only learn one device preference for all (measured: docs/policy.md).
    const V film = film_ ? film_->forward(h) : V();
    const V ht = standardized_in_topo_order(h, in.features.topo);
    if (xl_) {
      o = xl_->forward(ht, film);
    } else if (lstm_) {  // one step per node, in topological order
      const int64_t n = ht.value().dim(0);
      std::vector<V> xs(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = nn::slice(ht, 0, i, i + 1);
      o = nn::concat(nn::lstm_sequence(*lstm_, xs).hs, 0);
      if (film.defined()) o = nn::film_modulate(o, film, 0);
    } else {
      o = nn::relu(nn::linear(ht, w_m_, b_m_));
      if (film.defined()) o = nn::film_modulate(o, film, 0);
    }
  }
  V rows;  // (U, A)
  if (in.cut) {
    if (!w_cut_.defined())
      throw std::invalid_argument("policy forward: a \"cut\" input needs a policy with a cut head");
    // mu per op (topological order, as o), its mean per unit, then the quadratic in devices:
    // row u, column k: -((D mu_u - (k + 0.5)) / s)^2 / 2. The gains: kCutTrunkGain above.
    V trunk;
    if (own_cut) {  // its own input layer and GraphSAGE, standardized over the graph's ops
      const V h0c =
          nn::relu(nn::add(nn::linear(x, w_cut_in_, b_cut_in_), nn::linear(stats, w_cut_g_, V())));
      trunk =
          standardized_in_topo_order(sage_cut_->forward(h0c, in.features.adj), in.features.topo);
    } else {
      trunk = config_.cut_trunk ? o : nn::detach(o);
    }
    // The skip's weights (1, C): w_x, plus kCutGraphGain W_g . stats with cut_graph_skip.
    const V w_skip =
        w_cut_xg_.defined()
            ? nn::add(w_cut_x_, nn::scale(nn::linear(stats, w_cut_xg_, V()), T(kCutGraphGain)))
            : w_cut_x_;
    const V z = nn::add(nn::scale(nn::linear(trunk, w_cut_, V()), T(kCutTrunkGain)),
                        nn::add(nn::scale(nn::linear(V(in.cut_x), w_skip, V()), T(kCutSkipGain)),
                                b_cut_));  // (N, 1)
    const V mu = nn::mul(nn::scatter_add_rows(z, in.unit_of_topo, in.num_units()),
                         V(in.unit_scale));  // (U, 1)
    const V dist = nn::sub(nn::scale(mu, static_cast<T>(in.num_devices)), V(in.cut_bins));
    const V inv_var = nn::exp(nn::scale(log_cut_width_, T(-2)));  // 1 / s^2
    rows = nn::mul(nn::scale(nn::square(dist), T(-0.5)), inv_var);
  } else {
    V node_logits;          // (N, A)
    if (w_h1_.defined()) {  // the position head: each device's output row from its features
      const V hid = nn::tanh(nn::linear(V(in.device_x), w_h1_, b_h1_));  // (A, H)
      const V w = nn::linear(hid, w_h2_, V());                           // (A, D)
      const V bias = nn::reshape(nn::linear(hid, w_hb_, V()), {config_.max_devices});
      node_logits = nn::linear(o, w, bias);
    } else {
      node_logits = nn::linear(o, w_out_, b_out_);
    }
    rows = nn::mul(nn::scatter_add_rows(node_logits, in.unit_of_topo, in.num_units()),
                   V(in.unit_scale));
  }
  if (w_c_.defined()) {  // the devices-used row: from the mean node output and the statistics
    const V count = nn::add(nn::linear(nn::mean(o, 0, true), w_c_, b_c_),
                            nn::linear(stats, w_cg_, V()));  // (1, A)
    rows = nn::concat<T>({rows, count}, 0);
  }
  return nn::add(rows, V(in.mask));
}

std::vector<int32_t> sample_actions(const nn::Tensor& logits, int32_t K, Rng& rng,
                                    double temperature) {
  if (!(temperature > 0)) throw std::invalid_argument("sample_actions: temperature must be > 0");
  nn::Tensor l = logits.cpu().contiguous();
  if (temperature != 1) {
    l = l.clone();
    for (int64_t i = 0; i < l.numel(); ++i) l[i] /= static_cast<float>(temperature);
  }
  const int32_t U = static_cast<int32_t>(l.dim(0)), A = static_cast<int32_t>(l.dim(1));
  std::vector<int32_t> actions(static_cast<size_t>(K) * U);
  for (int32_t k = 0; k < K; ++k)
    nn::categorical_sample(actions.data() + static_cast<size_t>(k) * U, l.data(), U, A, rng);
  return actions;
}

std::vector<int32_t> greedy_actions(const nn::Tensor& logits) {
  const nn::Tensor l = logits.cpu().contiguous();
  const int32_t U = static_cast<int32_t>(l.dim(0)), A = static_cast<int32_t>(l.dim(1));
  std::vector<int32_t> actions(U);
  nn::categorical_argmax(actions.data(), l.data(), U, A);
  return actions;
}

std::vector<int32_t> unit_actions(const Placement& p, const PolicyInput& in) {
  if (in.mix)
    throw std::invalid_argument(
        "unit_actions: a \"mix\" decision has no per-unit actions (it is trained by PPO alone)");
  const place::Units& units = in.units;
  std::vector<int32_t> a(static_cast<size_t>(units.num_units()));
  for (int32_t u = 0; u < units.num_units(); ++u)
    a[static_cast<size_t>(u)] =
        p.device[static_cast<size_t>(units.first_op[static_cast<size_t>(u)])];
  if (in.anchored) place::anchor_labels(a);
  return encode_devices(std::move(a), in);
}

std::vector<int32_t> encode_devices(std::vector<int32_t> d, const PolicyInput& in) {
  if (in.cut && in.anchored) {  // positions: the devices renumbered in the order units use them
    std::vector<int32_t> label(static_cast<size_t>(in.num_devices), -1);
    int32_t next = 0;
    for (int32_t& x : d) {
      if (label[static_cast<size_t>(x)] < 0) label[static_cast<size_t>(x)] = next++;
      x = label[static_cast<size_t>(x)];
    }
  }
  if (!in.devices_used) return d;
  const int64_t D = in.num_devices;
  int64_t L = 1;
  for (int32_t x : d) L = std::max<int64_t>(L, x + 1);
  for (int32_t& x : d) x = static_cast<int32_t>((x * D + L - 1) / L);  // ceil(x D / L)
  d.push_back(static_cast<int32_t>(L - 1));
  return d;
}

std::vector<int32_t> unit_devices(const PolicyInput& in, const std::vector<int32_t>& actions,
                                  int32_t k) {
  const size_t U = static_cast<size_t>(in.num_units()), R = static_cast<size_t>(in.num_rows());
  const size_t at = static_cast<size_t>(k) * R;
  if (in.mix) {  // mu_u = b + sum_j w_j (c_uj - 0.5), device floor(D mu_u) clamped
    const size_t M = R - 1 - (in.mix_shift ? 1 : 0);
    const int32_t D = in.num_devices;
    const double b = static_cast<double>(actions[at]) / in.mix_bins;
    const int32_t shift = in.mix_shift ? actions[at + R - 1] : 0;
    std::vector<int32_t> d(U);
    for (size_t u = 0; u < U; ++u) {
      double mu = b;
      for (size_t j = 0; j < M; ++j)
        mu += kMixWeights[actions[at + 1 + j]] * (in.mix_unit[u * M + j] - 0.5);
      d[u] = static_cast<int32_t>(std::clamp(std::floor(D * mu), 0.0, static_cast<double>(D - 1)));
      if (shift > 0 && in.mix_part[u]) d[u] = (d[u] + shift) % D;
    }
    return d;
  }
  std::vector<int32_t> d(actions.begin() + static_cast<std::ptrdiff_t>(at),
                         actions.begin() + static_cast<std::ptrdiff_t>(at + U));
  if (!in.devices_used) return d;
  const int64_t D = in.num_devices, L = actions[at + U] + 1;
  for (int32_t& x : d) x = static_cast<int32_t>(x * L / D);
  return d;
}

Placement placement_of(const place::Units& units, const std::vector<int32_t>& actions, int32_t k) {
  const size_t U = static_cast<size_t>(units.num_units());
  return units.expand(std::vector<int32_t>(actions.begin() + k * U, actions.begin() + (k + 1) * U));
}

Placement placement_of(const PolicyInput& in, const std::vector<int32_t>& actions, int32_t k) {
  return in.units.expand(unit_devices(in, actions, k));
}

nn::Tensor unit_rows(const nn::Tensor& logits, const PolicyInput& in) {
  if (in.mix)
    throw std::invalid_argument("unit_rows: a \"mix\" decision has no per-unit device rows");
  const nn::Tensor host = logits.cpu().contiguous();
  if (!in.devices_used) return host;
  const int32_t U = in.num_units(), A = static_cast<int32_t>(host.dim(1)), D = in.num_devices;
  std::vector<double> pl(static_cast<size_t>(A)), pa(static_cast<size_t>(A)),
      q(static_cast<size_t>(A));
  masked_softmax_row(host.data() + static_cast<int64_t>(U) * A, A, pl.data());
  nn::Tensor rows({U, A});
  for (int32_t u = 0; u < U; ++u) {
    masked_softmax_row(host.data() + static_cast<int64_t>(u) * A, A, pa.data());
    std::fill(q.begin(), q.end(), 0.0);
    for (int32_t L = 1; L <= D; ++L)
      for (int32_t a = 0; a < D; ++a) q[static_cast<size_t>(a * L / D)] += pl[L - 1] * pa[a];
    for (int32_t d = 0; d < A; ++d)
      rows[static_cast<int64_t>(u) * A + d] =
          q[d] > 0 ? static_cast<float>(std::log(q[d])) : kMaskedLogit;
  }
  return rows;
}

template class BasicPolicy<float>;
template class BasicPolicy<double>;

}  // namespace gdp::rl
