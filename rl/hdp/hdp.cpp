// HDP (Mirhoseini et al. 2018): model and REINFORCE trainer. See rl/hdp/hdp.h.
#include "rl/hdp/hdp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/json_strict.h"
#include "nn/checkpoint.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "nn/sampling.h"

namespace gdp::rl {

double hdp_cost(double step_s, bool valid, double failing_signal,
                const std::string& reward_function) {
  const double t = valid && std::isfinite(step_s) ? step_s : failing_signal;
  if (reward_function == "sqrt") return std::sqrt(t);
  if (reward_function == "id") return t;
  if (reward_function == "log") return std::log1p(t);
  throw InputError("hdp: unknown reward_function '" + reward_function + "' (known: sqrt, id, log)");
}

double hdp_learning_rate(const HdpConfig& c, int64_t step) {
  if (step < c.start_decay_step) return c.lr;
  const int64_t k = (step - c.start_decay_step) / std::max<int64_t>(1, c.decay_steps);
  return c.lr * std::pow(c.lr_dec, static_cast<double>(k));
}

namespace {

// An output dimension as a feature: log2(1 + d) / 16 (2^16 -> 1). The reference feeds the raw
// size; scaled here so that the O(1)-initialized linear layers do not saturate.
double dim_feature(int64_t d) { return std::log2(1.0 + static_cast<double>(d)) / 16.0; }

}  // namespace

HdpInputs hdp_inputs(const Graph& g, int32_t num_devices, const HdpConfig& c) {
  if (num_devices < 1) throw InputError("hdp: the cluster has no devices");
  HdpInputs in;
  in.units = place::Units::colocation(g);
  const int32_t U = in.units.num_units();
  in.num_units = U;
  in.num_devices = num_devices;
  in.num_groups = c.num_groups > 0 ? c.num_groups : std::min(256, 20 * num_devices);
  const int32_t S = c.max_num_outputs * c.max_output_size;
  const int32_t A = c.adj_embed_dim;
  in.shape_width = S;
  in.op_width = 1 + S + A;

  // Op types used by the graph, by name (the reference: the cluster's available ops that the
  // graph uses).
  std::map<std::string, int32_t> type_index;
  for (const Op& op : g.ops()) type_index.emplace(op.type, 0);
  int32_t v = 0;
  for (auto& [name, idx] : type_index) idx = v++;
  in.num_types = v;

  in.op_embedding.assign(static_cast<size_t>(U) * in.op_width, 0.0);
  in.unit_shapes.assign(static_cast<size_t>(U) * S, 0.0);
  in.unit_types.assign(U, {});
  std::vector<std::map<int32_t, int32_t>> types(U);
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.op(i);
    const int32_t u = in.units.unit_of[i];
    ++types[u][type_index[op.type]];
    for (size_t o = 0; o < op.outputs.size() && o < static_cast<size_t>(c.max_num_outputs); ++o)
      for (size_t j = 0;
           j < op.outputs[o].shape.size() && j < static_cast<size_t>(c.max_output_size); ++j)
        if (op.outputs[o].shape[j] > 0)
          in.unit_shapes[static_cast<size_t>(u) * S + o * c.max_output_size + j] +=
              dim_feature(op.outputs[o].shape[j]);
  }
  for (int32_t u = 0; u < U; ++u)
    for (const auto& [t, n] : types[u]) in.unit_types[u].push_back({t, n});

  // The unit's op embedding from its first op: [type index | output shapes (-1 where absent)
  // | adjacency pairs (neighbour position, +1 out / -1 in), zero-padded to A].
  for (int32_t u = 0; u < U; ++u) {
    const Op& op = g.op(in.units.first_op[u]);
    double* row = &in.op_embedding[static_cast<size_t>(u) * in.op_width];
    row[0] = static_cast<double>(type_index[op.type]) / std::max(1, v);
    for (int32_t k = 0; k < S; ++k) row[1 + k] = -1.0;
    for (size_t o = 0; o < op.outputs.size() && o < static_cast<size_t>(c.max_num_outputs); ++o)
      for (size_t j = 0;
           j < op.outputs[o].shape.size() && j < static_cast<size_t>(c.max_output_size); ++j)
        if (op.outputs[o].shape[j] >= 0)
          row[1 + o * c.max_output_size + j] = dim_feature(op.outputs[o].shape[j]);
  }
  std::set<std::pair<int32_t, int32_t>> op_edges, unit_edges;
  for (const Edge& e : g.edges()) op_edges.insert({e.src, e.dst});
  for (const auto& [s, d] : op_edges) {
    const int32_t us = in.units.unit_of[s], ud = in.units.unit_of[d];
    in.op_pairs.push_back({us, ud});
    if (us != ud) unit_edges.insert({us, ud});
  }
  std::vector<std::vector<double>> adj(U);
  const double scale = 1.0 / std::max(1, U);
  for (const auto& [s, d] : unit_edges) {
    adj[s].insert(adj[s].end(), {d * scale, 1.0});
    adj[d].insert(adj[d].end(), {s * scale, -1.0});
  }
  for (int32_t u = 0; u < U; ++u)
    for (int32_t k = 0; k < A && k < static_cast<int32_t>(adj[u].size()); ++k)
      in.op_embedding[static_cast<size_t>(u) * in.op_width + 1 + S + k] = adj[u][k];
  return in;
}

template <typename T>
BasicHdpModel<T>::BasicHdpModel(const HdpInputs& in, const HdpConfig& c, uint64_t seed)
    : in_(in), c_(c) {
  if (c.hidden_size < 2 || c.hidden_size % 2 != 0)
    throw InputError("hdp: hidden_size must be even and at least 2");
  Rng rng(seed);
  const int64_t H = c.hidden_size, F = c.grouping_hidden_size, G = in.num_groups,
                D = in.num_devices, E = in.group_width();
  auto glorot = [&](const std::string& name, int64_t fan_in, int64_t fan_out) {
    return params_.add_uniform(name, {fan_in, fan_out},
                               std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)), rng);
  };
  w_grouping_ff_ = glorot("w_grouping_ff", in.op_width, F);
  w_grouping_softmax_ = glorot("w_grouping_softmax", F, G);
  const int32_t h2 = static_cast<int32_t>(H / 2);
  enc_fw_ = std::make_unique<nn::BasicLstmCell<T>>(
      params_, "encoder_lstm_forward", nn::LstmConfig{static_cast<int32_t>(E), h2}, rng);
  enc_bw_ = std::make_unique<nn::BasicLstmCell<T>>(
      params_, "encoder_lstm_backward", nn::LstmConfig{static_cast<int32_t>(E), h2}, rng);
  device_embeddings_ = glorot("device_embeddings", D, H);
  dec_ = std::make_unique<nn::BasicLstmCell<T>>(
      params_, "decoder_lstm", nn::LstmConfig{static_cast<int32_t>(H), static_cast<int32_t>(H)},
      rng);
  device_softmax_ = glorot("device_softmax", 2 * H, D);
  device_go_ = glorot("device_go_embedding", 1, H);
  attn_w_1_ = glorot("attn_w_1", H, H);
  attn_w_2_ = glorot("attn_w_2", H, H);
  attn_v_ = glorot("attn_v", H, 1);
  // The reference's LSTM has no biases but a learned forget bias (forget_bias_init): b_ih's
  // forget block starts there, every other bias at 0.
  for (const char* p : {"encoder_lstm_forward", "encoder_lstm_backward", "decoder_lstm"}) {
    nn::BasicVar<T> b_ih = params_.get(std::string(p) + ".b_ih");
    nn::BasicVar<T> b_hh = params_.get(std::string(p) + ".b_hh");
    const int64_t h = b_ih.numel() / 4;
    for (int64_t i = 0; i < 4 * h; ++i) {
      b_ih.value()[i] = (i >= h && i < 2 * h) ? static_cast<T>(c.forget_bias_init) : T(0);
      b_hh.value()[i] = T(0);
    }
  }
  nn::BasicTensor<T> x({in.num_units, in.op_width});
  for (size_t i = 0; i < in.op_embedding.size(); ++i)
    x[static_cast<int64_t>(i)] = static_cast<T>(in.op_embedding[i]);
  op_emb_ = nn::BasicVar<T>(x);
}

template <typename T>
void BasicHdpModel<T>::to_device(nn::Device device) {
  if (device == device_) return;
  params_.to_device(device);
  op_emb_ = nn::BasicVar<T>(op_emb_.value().to_device(device));
  device_ = device;
}

template <typename T>
std::vector<T> BasicHdpModel<T>::group_embedding(const std::vector<int32_t>& groups) const {
  const int32_t G = in_.num_groups, V = in_.num_types, S = in_.shape_width, E = in_.group_width();
  std::vector<double> e(static_cast<size_t>(G) * E, 0.0);
  for (const auto& [us, ud] : in_.op_pairs) {
    const int32_t gs = groups[us], gd = groups[ud];
    e[static_cast<size_t>(gs) * E + gd] += 1.0;      // dag row
    e[static_cast<size_t>(gd) * E + G + gs] += 1.0;  // dag transposed
  }
  for (int32_t u = 0; u < in_.num_units; ++u) {
    double* row = &e[static_cast<size_t>(groups[u]) * E];
    for (const auto& [t, n] : in_.unit_types[u]) row[2 * G + t] += n;
    for (int32_t k = 0; k < S; ++k)
      row[2 * G + V + k] += in_.unit_shapes[static_cast<size_t>(u) * S + k];
  }
  std::vector<T> out(e.size());
  for (int32_t gi = 0; gi < G; ++gi) {
    const double* row = &e[static_cast<size_t>(gi) * E];
    const double mx = *std::max_element(row, row + E);
    for (int32_t k = 0; k < E; ++k)
      out[static_cast<size_t>(gi) * E + k] = static_cast<T>(row[k] / (mx + 1.0));
  }
  return out;
}

namespace {

// Logits noise of the reference: normal with stddev = std_noise * ||logits|| / sqrt(numel),
// treated as a constant (the reference also differentiates through the norm).
template <typename T>
nn::BasicTensor<T> logits_noise(const nn::BasicTensor<T>& logits, double std_noise, Rng& rng) {
  const nn::BasicTensor<T> l = logits.contiguous();
  double ss = 0;
  for (int64_t i = 0; i < l.numel(); ++i) ss += static_cast<double>(l[i]) * l[i];
  const double sd =
      std_noise * std::sqrt(ss / static_cast<double>(std::max<int64_t>(1, l.numel())));
  nn::BasicTensor<T> n(l.shape());
  for (int64_t i = 0; i < n.numel(); ++i) n[i] = static_cast<T>(sd * rng.normal());
  return n;
}

// Mean entropy of the rows of a (N, A) logits value.
template <typename T>
double mean_entropy(const nn::BasicTensor<T>& logits) {
  const nn::BasicTensor<T> l = logits.contiguous();
  const auto N = static_cast<int32_t>(l.dim(0)), A = static_cast<int32_t>(l.dim(1));
  std::vector<T> ent(static_cast<size_t>(N));
  nn::categorical_entropy_forward(ent.data(), l.data(), N, A);
  double total = 0;
  for (T e : ent) total += e;
  return N ? total / N : 0.0;
}

}  // namespace

template <typename T>
typename BasicHdpModel<T>::Rollout BasicHdpModel<T>::run(
    int32_t K, Rng* rng, bool noise, const std::vector<std::vector<int32_t>>* given_groups,
    const std::vector<std::vector<int32_t>>* given_devices) {
  using V = nn::BasicVar<T>;
  const int32_t U = in_.num_units, G = in_.num_groups, D = in_.num_devices, E = in_.group_width();
  const int64_t H = c_.hidden_size;
  Rollout r;

  // ---- Grouper: one softmax over G per unit and sample.
  const V logits = nn::matmul(nn::matmul(op_emb_, w_grouping_ff_), w_grouping_softmax_);  // (U, G)
  std::vector<int64_t> tile(static_cast<size_t>(K) * U);
  for (int32_t k = 0; k < K; ++k)
    for (int32_t u = 0; u < U; ++u) tile[static_cast<size_t>(k) * U + u] = u;
  V glogits = nn::gather_rows(logits, tile);  // (K*U, G)
  if (noise && c_.logits_std_noise > 0)
    glogits = nn::add(
        glogits,
        V(logits_noise(glogits.value().cpu(), c_.logits_std_noise, *rng).to_device(device_)));
  std::vector<int32_t> gacts(static_cast<size_t>(K) * U);
  if (given_groups) {
    for (int32_t k = 0; k < K; ++k)
      for (int32_t u = 0; u < U; ++u) gacts[static_cast<size_t>(k) * U + u] = (*given_groups)[k][u];
  } else {
    const nn::BasicTensor<T> lv = glogits.value().cpu().contiguous();
    nn::categorical_sample<T>(gacts.data(), lv.data(), K * U, G, *rng);
  }
  r.groups.assign(K, std::vector<int32_t>(U));
  for (int32_t k = 0; k < K; ++k)
    for (int32_t u = 0; u < U; ++u) r.groups[k][u] = gacts[static_cast<size_t>(k) * U + u];
  const V glogp =
      nn::sum(nn::reshape(nn::take_along_last(nn::log_softmax(glogits),
                                              std::vector<int64_t>(gacts.begin(), gacts.end())),
                          {K, U}),
              1);  // (K)

  // ---- Group embeddings -> the encoder's inputs, G x (K, E).
  std::vector<std::vector<T>> emb(K);
  for (int32_t k = 0; k < K; ++k) emb[k] = group_embedding(r.groups[k]);
  std::vector<V> xs(G);
  for (int32_t gi = 0; gi < G; ++gi) {
    nn::BasicTensor<T> x({K, E});
    for (int32_t k = 0; k < K; ++k)
      for (int32_t j = 0; j < E; ++j)
        x[static_cast<int64_t>(k) * E + j] = emb[k][static_cast<size_t>(gi) * E + j];
    xs[gi] = V(x.to_device(device_));
  }
  std::vector<V> rev(xs.rbegin(), xs.rend());
  const nn::BasicLstmSequence<T> fw = nn::lstm_sequence(*enc_fw_, xs);
  const nn::BasicLstmSequence<T> bw = nn::lstm_sequence(*enc_bw_, rev);
  // As the reference: step i pairs the forward state after group i with the backward state
  // after groups G-1..G-1-i.
  std::vector<V> mem(G);
  for (int32_t gi = 0; gi < G; ++gi)
    mem[gi] = nn::reshape(nn::concat(std::vector<V>{fw.hs[gi], bw.hs[gi]}, 1), {K, 1, H});
  const V attn_mem = nn::matmul(nn::concat(mem, 1), attn_w_1_);  // (K, G, H)
  nn::BasicLstmState<T> st{nn::concat(std::vector<V>{fw.last.h, bw.last.h}, 1),
                           nn::concat(std::vector<V>{fw.last.c, bw.last.c}, 1)};

  // ---- Decoder: one device per group.
  r.devices.assign(K, std::vector<int32_t>(G));
  std::vector<int64_t> prev(K, 0);
  std::vector<V> step_logp;
  double ent = 0;
  for (int32_t gi = 0; gi < G; ++gi) {
    const V signal = gi == 0 ? nn::gather_rows(device_go_, std::vector<int64_t>(K, 0))
                             : nn::embedding(device_embeddings_, prev);
    st = dec_->forward(signal, st);
    V q = nn::reshape(nn::matmul(st.h, attn_w_2_), {K, 1, H});
    q = nn::tanh(nn::add(q, attn_mem));                                            // (K, G, H)
    q = nn::softmax(nn::reshape(nn::matmul(q, attn_v_), {K, G}));                  // (K, G)
    const V ctx = nn::sum(nn::mul(attn_mem, nn::reshape(q, {K, G, 1})), 1);        // (K, H)
    V dl = nn::matmul(nn::concat(std::vector<V>{st.h, ctx}, 1), device_softmax_);  // (K, D)
    if (c_.temperature != 1.0) dl = nn::scale(dl, static_cast<T>(1.0 / c_.temperature));
    if (c_.tanh_constant > 0) dl = nn::scale(nn::tanh(dl), static_cast<T>(c_.tanh_constant));
    if (noise && c_.logits_std_noise > 0)
      dl = nn::add(dl,
                   V(logits_noise(dl.value().cpu(), c_.logits_std_noise, *rng).to_device(device_)));
    std::vector<int32_t> a(K);
    if (given_devices) {
      for (int32_t k = 0; k < K; ++k) a[k] = (*given_devices)[k][gi];
    } else {
      const nn::BasicTensor<T> lv = dl.value().cpu().contiguous();
      nn::categorical_sample<T>(a.data(), lv.data(), K, D, *rng);
    }
    ent += mean_entropy(dl.value().cpu());
    for (int32_t k = 0; k < K; ++k) {
      r.devices[k][gi] = a[k];
      prev[k] = a[k];
    }
    step_logp.push_back(nn::reshape(nn::take_along_last(nn::log_softmax(dl), prev), {K, 1}));
  }
  r.entropy = ent / G;
  r.log_prob = nn::add(glogp, nn::sum(nn::concat(step_logp, 1), 1));
  return r;
}

template <typename T>
typename BasicHdpModel<T>::Rollout BasicHdpModel<T>::sample(int32_t k, Rng& rng, bool noise) {
  return run(k, &rng, noise, nullptr, nullptr);
}

template <typename T>
nn::BasicVar<T> BasicHdpModel<T>::log_prob(const std::vector<std::vector<int32_t>>& groups,
                                           const std::vector<std::vector<int32_t>>& devices) {
  if (groups.size() != devices.size() || groups.empty())
    throw InputError("hdp: log_prob needs as many groupings as device choices");
  return run(static_cast<int32_t>(groups.size()), nullptr, false, &groups, &devices).log_prob;
}

template <typename T>
Placement BasicHdpModel<T>::placement(const Rollout& r, int32_t k) const {
  std::vector<int32_t> unit_device(in_.num_units);
  for (int32_t u = 0; u < in_.num_units; ++u) unit_device[u] = r.devices[k][r.groups[k][u]];
  return in_.units.expand(unit_device);
}

template class BasicHdpModel<float>;
template class BasicHdpModel<double>;

HdpAgent::HdpAgent(const place::Problem& pb, const HdpConfig& c, uint64_t seed, nn::Device device)
    : c_(c),
      model_(hdp_inputs(pb.graph(), pb.num_devices(), c), c, seed),
      rng_(seed ^ 0x4844505f53414d50ull) {  // "HDP_SAMP"
  model_.to_device(device);
  nn::AdamConfig ac;
  ac.lr = c.lr;
  adam_ = std::make_unique<nn::Adam>(model_.params(), ac);
  baseline_ =
      c.start_with_failing_signal ? hdp_cost(0, false, c.failing_signal, c.reward_function) : 0.0;
}

HdpAgent::StepStats HdpAgent::step(place::Run& run, int64_t k) {
  const HdpConfig& c = c_;
  const int64_t step = step_;
  const int32_t K =
      static_cast<int32_t>(std::min<int64_t>(c.num_children, std::max<int64_t>(1, k)));
  nn::Tape::current().clear();
  model_.params().zero_grad();
  const HdpModel::Rollout r = model_.sample(K, rng_, step <= c.stop_noise_step);
  std::vector<Placement> ps;
  for (int32_t i = 0; i < K; ++i) ps.push_back(model_.placement(r, i));
  const std::vector<double> times = run.evaluate(ps);
  std::vector<double> cost(K);
  std::vector<uint8_t> valid(K);  // by the simulator, not by the cost (a valid step may
                                  // take longer than failing_signal)
  StepStats st;
  st.samples = K;
  double valid_time = 0;
  for (int32_t i = 0; i < K; ++i) {
    valid[i] = std::isfinite(times[i]);
    cost[i] = hdp_cost(times[i], valid[i], c.failing_signal, c.reward_function);
    if (valid[i]) valid_time += times[i];
  }

  // Loss: mean over the samples (after stop_updating_after_steps: the valid ones only) of
  // (R - b) * log p, R a cost (lower is better).
  const bool all = step < c.stop_updating_after_steps;
  int32_t n = 0;
  double valid_sum = 0;
  for (int32_t i = 0; i < K; ++i)
    if (valid[i]) {
      ++n;
      valid_sum += cost[i];
    }
  st.mean_step_s = n ? valid_time / n : std::numeric_limits<double>::infinity();
  st.invalid_frac = static_cast<double>(K - n) / K;
  const int32_t denom = all ? K : n;
  if (denom > 0) {
    nn::Tensor coef({K});
    for (int32_t i = 0; i < K; ++i)
      coef[i] = (all || valid[i]) ? static_cast<float>((cost[i] - baseline_) / denom) : 0.f;
    const nn::Tensor lp = r.log_prob.value().cpu().contiguous();
    for (int32_t i = 0; i < K; ++i) st.loss += static_cast<double>(coef[i]) * lp[i];
    nn::backward(nn::sum(nn::mul(r.log_prob, nn::Var(coef.to_device(model_.params().device())))));
    nn::clip_grad_norm(model_.params(), c.grad_bound);
    adam_->step(hdp_learning_rate(c, step));
  }
  nn::Tape::current().clear();
  // Baseline, as the reference: the mean cost of the batch before stop_updating_after_steps,
  // afterwards that of its valid placements (unchanged when none is valid).
  if (all) {
    double m = 0;
    for (double x : cost) m += x;
    baseline_ = c.bl_dec * baseline_ + (1 - c.bl_dec) * m / K;
  } else if (n > 0) {
    baseline_ = c.bl_dec * baseline_ + (1 - c.bl_dec) * valid_sum / n;
  }
  ++step_;
  st.entropy = r.entropy;
  st.last = ps.back();
  return st;
}

nlohmann::ordered_json HdpAgent::save(const std::string& bin) const {
  nn::save_checkpoint(bin, const_cast<HdpModel&>(model_).params(), adam_.get(), step_);
  nlohmann::ordered_json j;
  j["iterations"] = step_;
  j["baseline"] = baseline_;
  j["rng"] = rng_.state();
  return j;
}

void HdpAgent::load(const nlohmann::json& state, const std::string& bin,
                    const std::string& source) {
  StrictJson sj(source);
  sj.check_keys(state, "hdp", {"iterations", "baseline", "rng"}, {});
  const int64_t it = sj.integer(state, "iterations", "hdp");
  int64_t stored = 0;
  try {
    stored = nn::load_checkpoint(bin, model_.params(), adam_.get());
  } catch (const std::runtime_error& e) {
    throw InputError(source + ": checkpoint: " + e.what());
  }
  if (stored != it)
    sj.fail("hdp.iterations", "the checkpoint holds iteration " + std::to_string(stored));
  Rng r;
  if (!r.set_state(sj.string(state, "rng", "hdp")))
    sj.fail("hdp.rng", "expected a generator state");
  rng_ = r;
  baseline_ = sj.number(state, "baseline", "hdp", -1e300, 1e300);
  step_ = it;
}

HdpTrainResult train_hdp(place::Run& run, const HdpConfig& c, int64_t max_samples) {
  HdpAgent agent(run.problem(), c, run.seed());
  HdpTrainResult res;
  run.set_target_samples(max_samples);
  for (;;) {
    const int64_t left = std::min(run.samples_left(), max_samples - run.samples());
    if (left <= 0 || run.out_of_time()) break;
    const HdpAgent::StepStats st = agent.step(run, left);
    res.iterations = agent.iterations();
    res.entropy = st.entropy;
    res.last = st.last;
    char msg[96];
    std::snprintf(msg, sizeof msg, "iteration %lld, entropy %.3f, baseline %.4g",
                  static_cast<long long>(agent.iterations() - 1), st.entropy, agent.baseline());
    run.progress(msg);
  }
  return res;
}

HdpConfig hdp_config(const place::Options& o) {
  HdpConfig c;
  c.hidden_size = static_cast<int32_t>(o.integer("hidden_size"));
  c.grouping_hidden_size = static_cast<int32_t>(o.integer("grouping_hidden_size"));
  c.num_groups = static_cast<int32_t>(o.integer("num_groups"));
  c.adj_embed_dim = static_cast<int32_t>(o.integer("adj_embed_dim"));
  c.num_children = static_cast<int32_t>(o.integer("num_children"));
  c.lr = o.number("lr");
  c.lr_dec = o.number("lr_dec");
  c.start_decay_step = o.integer("start_decay_step");
  c.decay_steps = o.integer("decay_steps");
  c.bl_dec = o.number("bl_dec");
  c.grad_bound = o.number("grad_bound");
  c.failing_signal = o.number("failing_signal");
  c.reward_function = o.string("reward_function");
  c.logits_std_noise = o.number("logits_std_noise");
  c.stop_noise_step = o.integer("stop_noise_step");
  c.temperature = o.number("temperature");
  c.tanh_constant = o.number("tanh_constant");
  c.forget_bias_init = o.number("forget_bias_init");
  c.stop_updating_after_steps = o.integer("stop_updating_after_steps");
  if (o.string("preset") == "reference") {
    // The reference's values for the keys left at the tuned defaults (a key given with the
    // tuned default's very value is taken as left: say preset "tuned" to keep it).
    const HdpConfig tuned, ref = HdpConfig::reference();
    if (c.hidden_size == tuned.hidden_size) c.hidden_size = ref.hidden_size;
    if (c.num_children == tuned.num_children) c.num_children = ref.num_children;
    if (c.lr == tuned.lr) c.lr = ref.lr;
  }
  if (c.hidden_size % 2 != 0)
    throw InputError("method 'hdp': options.hidden_size: must be even (H/2 per encoder direction)");
  return c;
}

}  // namespace gdp::rl
