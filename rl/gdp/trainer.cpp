// The PPO loop: sample K placements per graph, simulate, rewards, advantages, updates (the
// checkpoint and the ranks' exchange: trainer_state.cpp; the warm start and expert: expert.cpp).
#include "rl/gdp/trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "core/error.h"
#include "core/mpi.h"
#include "nn/graph_ops.h"
#include "nn/ops.h"
#include "rl/gdp/zero_shot.h"

namespace gdp::rl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Data-parallel: the sum of every rank's gradients (each rank's are over its own graphs).
void allreduce_grads(nn::ParameterBuffer& params, int ranks) {
  if (ranks <= 1) return;
  nn::Tensor g = params.grads();
  if (g.device() != nn::Device::cpu)
    throw InputError("train: data-parallel training runs the policy on the cpu (--device cpu)");
  mpi_allreduce_sum(g.data(), g.numel());
}

// A linear decay to 0 over `iterations` (0: none), at 1-based iteration `it`.
double linear_decay(int64_t it, int32_t iterations) {
  if (iterations <= 0) return 1.0;
  return std::max(0.0, 1.0 - static_cast<double>(it - 1) / iterations);
}

}  // namespace

Trainer::Trainer(TrainConfig config, std::vector<TrainGraph> graphs, const CostModel& cost,
                 uint64_t seed, const Policy* init, nn::Device device)
    : FramedLearner(seed),
      config_(std::move(config)),
      cost_(cost),
      rng_(seed ^ 0x9e3779b97f4a7c15ull) {
  if (graphs.empty()) throw InputError("train: no graphs");
  // A "cut" decision needs the cut head (PolicyConfig::cut_head), over a checkpoint too.
  const bool cut = config_.policy.cut_head ||
                   std::find(config_.decisions.begin(), config_.decisions.end(), "cut") !=
                       config_.decisions.end();
  config_.policy.cut_head = cut;
  const bool mix = config_.policy.mix_head || config_.policy.decision == "mix" ||
                   std::find(config_.decisions.begin(), config_.decisions.end(), "mix") !=
                       config_.decisions.end();
  config_.policy.mix_head = mix;
  if (init) {
    // Fine-tuning keeps its start: no behaviour cloning over the checkpoint (it would overwrite
    // what pre-training learned). The elites and local proposals start from the policy's own
    // placements (seed_elites) and, with fine_tune_warm_start, the heuristics' (not cloned).
    if (!config_.fine_tune_warm_start) config_.warm_start.clear();
    config_.imitation_steps = 0;
    const PolicyConfig own = config_.policy;
    config_.policy = init->config();
    if (!config_.fine_tune_decision.empty()) config_.policy.decision = config_.fine_tune_decision;
    if (!config_.policy.cut_head && (cut || config_.policy.decision == "cut")) {
      config_.policy.cut_head = true;  // a head the checkpoint lacks: this run's options for it
      config_.policy.cut_trunk = own.cut_trunk;
      config_.policy.cut_width = own.cut_width;
      config_.policy.cut_branch = own.cut_branch;
      config_.policy.cut_graph_skip = own.cut_graph_skip;
    }
    if (mix && !config_.policy.mix_head) {  // a head the checkpoint lacks: this run's options
      config_.policy.mix_head = true;
      config_.policy.mix_stats = own.mix_stats;
      config_.policy.mix_wgrad = own.mix_wgrad;
    } else if (mix && own.mix_wgrad) {
      config_.policy.mix_wgrad = true;  // a shift row the checkpoint's mix head lacks
    }
  }
  // Checked on the run as it will train (over a checkpoint the warm start and cloning are off).
  const bool trains_mix = config_.policy.decision == "mix" ||
                          std::find(config_.decisions.begin(), config_.decisions.end(), "mix") !=
                              config_.decisions.end();
  if (trains_mix && (config_.elite.size > 0 || config_.explore.local_fraction > 0 ||
                     config_.expert.anneal_samples > 0 || !config_.warm_start.empty() ||
                     config_.imitation_steps > 0))
    throw InputError(
        "train: decision \"mix\" trains by PPO alone (its decisions are a blend's weights, not "
        "devices); expected elite.size 0, explore.local_fraction 0, expert.anneal_samples 0, "
        "no warm_start and imitation_steps 0 (the transfer regime's)");
  if (init) {
    policy_ = std::make_unique<Policy>(config_.policy, init->vocabulary(), seed);
    copy_parameters_by_name(init->params(), policy_->params());  // a new cut head keeps its start
  } else {
    std::vector<const Graph*> gs;
    for (const auto& g : graphs) gs.push_back(g.graph);
    policy_ = std::make_unique<Policy>(config_.policy, OpVocabulary::from_graphs(gs), seed);
  }
  policy_->params().to_device(device);
  for (const std::string& f : config_.freeze) {
    const size_t before = frozen_.size();
    for (const auto& e : policy_->params().entries()) {
      if (e.name.rfind(f, 0) != 0) continue;
      int64_t n = 1;
      for (int64_t d : e.shape) n *= d;
      frozen_.emplace_back(e.offset, n);  // a parameter two prefixes name is zeroed twice
    }
    if (frozen_.size() == before)
      throw InputError("train: freeze: \"" + f + "\" names no parameter of this policy");
  }
  if (!frozen_.empty() && device != nn::Device::cpu)
    throw InputError("train: freeze needs the cpu (the gradients are zeroed in place)");
  nn::AdamConfig ac;
  ac.lr = config_.lr;
  adam_ = std::make_unique<nn::Adam>(policy_->params(), ac);
  // TrainConfig::decisions: each graph once per decision, the first under its own name.
  std::vector<std::pair<TrainGraph, std::string>> expanded;
  for (const TrainGraph& spec : graphs) {
    if (config_.decisions.empty()) expanded.emplace_back(spec, "");
    for (size_t d = 0; d < config_.decisions.size(); ++d) {
      TrainGraph x = spec;
      if (d > 0) x.name += "@" + config_.decisions[d];
      expanded.emplace_back(std::move(x), config_.decisions[d]);
    }
  }
  for (auto& [spec, decision] : expanded) {
    GraphState st;
    st.spec = spec;
    const uint64_t gi = graphs_.size();
    st.rng = Rng(seed ^ 0x9e3779b97f4a7c15ull ^ ((gi + 1) * 0xbf58476d1ce4e5b9ull));
    st.run = attach_run(spec, cost_, "gdp", seed, st.own);
    const place::Problem& problem = st.run->problem();
    st.input = policy_->prepare(problem.graph(), problem.cluster(), problem.cost(), decision);
    st.input.to_device(device);
    const Reference ref = reference_placement(problem, seed, spec.name);
    const Placement& p = ref.placement;
    st.reference_s = ref.step_s;
    st.reference_method = ref.method;
    // The reference as a first sample, unless the warm start simulates that method anyway.
    const bool warm_has_ref = std::find(config_.warm_start.begin(), config_.warm_start.end(),
                                        ref.method) != config_.warm_start.end();
    // A mix decision has no per-unit actions to imitate (and nothing imitates: above).
    if (!st.input.mix) st.reference_actions = unit_actions(p, st.input);
    st.elites = EliteSet(config_.elite.size);
    if (config_.keep_reference && !warm_has_ref && !st.input.mix && st.run->samples_left() > 0)
      st.elites.offer(st.run->evaluate(p), st.reference_actions);  // a sample like any other
    if (init && config_.elite.size > 0) seed_elites(*init, st);
    if (config_.explore.local_fraction > 0) {
      st.adjacency = place::unit_adjacency(problem.graph(), st.input.units);
      st.scopes = place::unit_scopes(problem.graph(), st.input.units);
    }
    graphs_.push_back(std::move(st));
  }
  // Loss weights: 1 / graphs, or 1 / (families x graphs of the family).
  auto family = [&](size_t i) {  // a graph without one is a family of its own
    const std::string& f = graphs_[i].spec.family;
    return f.empty() ? "#" + std::to_string(i) : f;
  };
  std::map<std::string, int32_t> family_size;
  for (size_t i = 0; i < graphs_.size(); ++i) ++family_size[family(i)];
  for (size_t i = 0; i < graphs_.size(); ++i)
    graphs_[i].loss_weight =
        config_.family_weights
            ? 1.0f / static_cast<float>(family_size.size() * family_size[family(i)])
            : 1.0f / static_cast<float>(graphs_.size());
}

Trainer::~Trainer() = default;

void Trainer::seed_elites(const Policy& init, GraphState& st) {
  // The zero-shot method's candidates (every reading of the checkpoint by default; the gdp
  // method's own options), so that the search starts where the pre-trained network places
  // best, not only from its op reading.
  const int64_t n = std::min<int64_t>(config_.fine_tune_seeds, st.run->samples_left());
  if (n <= 0) return;
  ZeroShotOptions o = config_.fine_tune_zero_shot;
  o.samples = n - 1;
  const ZeroShotResult r = zero_shot(*st.run, init, o);
  for (size_t k = 0; k < r.candidates.size(); ++k)
    if (std::isfinite(r.step_s[k]))
      st.elites.offer(r.step_s[k], unit_actions(r.candidates[k], st.input));
}

void Trainer::distribute() {
  if (iteration_ > 0) throw std::logic_error("Trainer::distribute: call it before the first step");
  rank_ = mpi_rank();
  ranks_ = mpi_size();
  // Longest processing time first: the graphs by descending op count (ties: suite order),
  // each to the rank with the fewest ops so far (ties: the lowest rank). Every rank computes
  // the same assignment.
  std::vector<size_t> order(graphs_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto ops = [&](size_t i) { return graphs_[i].spec.graph->num_ops(); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ops(a) > ops(b); });
  std::vector<int64_t> load(static_cast<size_t>(ranks_), 0);
  for (size_t gi : order) {
    const size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[r] += ops(gi);
    graphs_[gi].owner = static_cast<int>(r);
    graphs_[gi].owned = static_cast<int>(r) == rank_;
  }
}

bool Trainer::done(const place::Budget& budget) const {
  const int64_t per_graph =
      static_cast<int64_t>(config_.samples_per_iteration) +
      (config_.expert.anneal_samples > 0 ? config_.expert.anneal_samples + 1 : 0);
  int64_t next = per_graph * static_cast<int64_t>(graphs_.size());
  if (config_.counterfactual.units > 0)  // at most D - 1 simulations a probe
    for (const GraphState& st : graphs_)
      next += static_cast<int64_t>(config_.counterfactual.units) * (st.input.num_devices - 1);
  bool stop = (budget.samples > 0 && total_samples() + next > budget.samples) ||
              (budget.seconds > 0 && wall_s() >= budget.seconds);
  if (ranks_ > 1) {  // rank 0's clock decides for all
    double x = stop ? 1 : 0;
    mpi_broadcast(&x, 1, 0);
    stop = x != 0;
  }
  return stop;
}

void Trainer::imitate() {
  using Clock = std::chrono::steady_clock;
  nn::ParameterBuffer& params = policy_->params();
  const float inv_graphs = 1.0f / static_cast<float>(graphs_.size());
  for (int32_t s = 0; s <= config_.imitation_steps; ++s) {
    const bool last = s == config_.imitation_steps;  // the accuracy pass, no update
    params.zero_grad();
    for (GraphState& st : graphs_) {
      if (!st.owned) continue;
      auto t0 = Clock::now();
      std::unique_ptr<nn::NoGradGuard> no_grad;
      if (last) no_grad = std::make_unique<nn::NoGradGuard>();
      const nn::Var logits = policy_->forward(st.input);
      times_.forward_s += std::chrono::duration<double>(Clock::now() - t0).count();
      if (last) {
        const std::vector<int32_t> g = greedy_actions(logits.value());
        int64_t hit = 0;
        for (size_t u = 0; u < g.size(); ++u) hit += g[u] == st.reference_actions[u];
        st.imitation_accuracy = static_cast<double>(hit) / static_cast<double>(g.size());
        continue;
      }
      t0 = Clock::now();
      const nn::Var ce = nn::neg(nn::mean(nn::categorical_log_prob(logits, st.reference_actions)));
      nn::backward(nn::scale(ce, inv_graphs));
      times_.backward_s += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    if (last) break;
    const auto t0 = Clock::now();
    allreduce_grads(params, ranks_);
    nn::clip_grad_norm(params, config_.grad_clip);
    adam_->step();
    times_.update_s += std::chrono::duration<double>(Clock::now() - t0).count();
  }
}

namespace {

// The loss of one graph: PPO over its on-policy samples (the entropy bonus alone when it has
// none) plus the elite cross-entropy, weight elite_w, over the elites' actions (E * U).
nn::Var graph_loss(const nn::Var& logits, const std::vector<int32_t>& acts,
                   const std::vector<float>& old, const std::vector<double>& adv,
                   const std::vector<int32_t>& elite_acts, const PpoConfig& ppo, double elite_w,
                   PpoStats& stats, double& elite_ce) {
  nn::Var loss;
  if (!acts.empty()) {
    loss = ppo_loss(logits, acts, old, adv, ppo, &stats);
  } else {
    const nn::Var h = nn::mean(nn::categorical_entropy(logits));
    stats = PpoStats();
    stats.entropy = static_cast<double>(h.item());
    loss = nn::scale(h, static_cast<float>(-ppo.entropy_coef));
    stats.loss = static_cast<double>(loss.item());
  }
  if (elite_w > 0 && !elite_acts.empty()) {
    const nn::Var ce = nn::neg(nn::mean(sample_log_probs(logits, elite_acts)));
    elite_ce = static_cast<double>(ce.item());
    loss = nn::add(loss, nn::scale(ce, static_cast<float>(elite_w)));
  }
  return loss;
}

}  // namespace

// ---- one iteration: sample, simulate, score, update ----

void Trainer::lap(double& into) {
  const auto now = std::chrono::steady_clock::now();
  into += std::chrono::duration<double>(now - tick_).count();
  tick_ = now;
}

Trainer::Iteration Trainer::plan_iteration() const {
  Iteration it;
  it.K = config_.samples_per_iteration;
  it.K_local =
      config_.explore.local_fraction > 0
          ? std::clamp(static_cast<int32_t>(std::lround(config_.explore.local_fraction * it.K)), 0,
                       it.K)
          : 0;
  it.K_on = it.K - it.K_local;
  it.ppo = config_.ppo;
  it.ppo.entropy_coef *= linear_decay(iteration_, config_.entropy_decay_iterations);
  it.elite_w = config_.elite.size > 0
                   ? config_.elite.weight * linear_decay(iteration_, config_.elite.decay_iterations)
                   : 0.0;
  it.reuse_first = config_.minibatches == 1;
  return it;
}

void Trainer::sample(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row) {
  Rng& rng = rng_of(st);
  const size_t U = static_cast<size_t>(st.input.num_rows());
  if (config_.type_dropout > 0) {  // this iteration's types, for sampling and the updates
    std::vector<int64_t>& type = st.input.features.op_type;
    if (st.op_type.empty()) st.op_type = type;
    for (size_t i = 0; i < type.size(); ++i)
      type[i] = rng.chance(config_.type_dropout) ? 0 : st.op_type[i];
  }
  {
    std::unique_ptr<nn::NoGradGuard> no_grad;
    if (!it.reuse_first) no_grad = std::make_unique<nn::NoGradGuard>();
    tick_ = std::chrono::steady_clock::now();
    s.logits = policy_->forward(st.input);
    lap(times_.forward_s);
  }
  s.host = s.logits.value().cpu().contiguous();
  {  // diagnostics of the policy as it samples
    std::vector<int32_t> greedy = greedy_actions(s.host);
    if (st.greedy.size() == greedy.size()) {
      int64_t changed = 0;
      for (size_t u = 0; u < U; ++u) changed += greedy[u] != st.greedy[u];
      row.greedy_changed = static_cast<double>(changed) / static_cast<double>(U);
    }
    st.greedy = std::move(greedy);
    const std::vector<double> h = unit_entropies(s.host);
    row.entropy_p10 = quantile(h, 0.1);
    row.entropy_p50 = quantile(h, 0.5);
    row.entropy_p90 = quantile(h, 0.9);
  }
  Batch& b = s.batch;
  if (it.K_on > 0) {
    b.actions = sample_actions(s.host, it.K_on, rng);
    b.old_logp = log_probs(s.logits.value(), b.actions);
  }
  // Each unit's distribution over devices, once for all the local proposals.
  const nn::Tensor guide = it.K_local > 0 ? unit_rows(s.host, st.input) : nn::Tensor();
  for (int32_t k = 0; k < it.K_local; ++k) {
    const std::vector<int32_t>& base =
        st.elites.empty() ? st.greedy
                          : st.elites[static_cast<size_t>(rng.below(st.elites.size()))].actions;
    // A move of devices (with the devices-used row: of the base's decoded devices, guided by
    // each unit's marginal over devices, then encoded back).
    const std::vector<int32_t> a =
        encode_devices(local_proposal(guide, unit_devices(st.input, base, 0), st.input.anchored,
                                      config_.explore, rng, &st.adjacency, &st.scopes),
                       st.input);
    s.local.insert(s.local.end(), a.begin(), a.end());
  }
  s.placements.reserve(static_cast<size_t>(it.K));
  for (int32_t k = 0; k < it.K_on; ++k)
    s.placements.push_back(placement_of(st.input, b.actions, k));
  for (int32_t k = 0; k < it.K_local; ++k)
    s.placements.push_back(placement_of(st.input, s.local, k));
  lap(times_.sample_s);
}

void Trainer::simulate(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row) {
  s.step_s = st.run->evaluate(s.placements);
  lap(times_.simulate_s);
  // Each placement's canonical actions (with the devices-used row: one placement, one elite;
  // without it, the actions as drawn).
  if (st.elites.capacity() > 0)
    for (int32_t k = 0; k < it.K; ++k) {
      const std::vector<int32_t>& src = k < it.K_on ? s.batch.actions : s.local;
      const int32_t j = k < it.K_on ? k : k - it.K_on;
      st.elites.offer(s.step_s[static_cast<size_t>(k)],
                      encode_devices(unit_devices(st.input, src, j), st.input));
    }
  if (config_.expert.anneal_samples > 0) {
    tick_ = std::chrono::steady_clock::now();
    row.local_samples += expert_search(st, s.host);
    lap(times_.simulate_s);
  }
}

void Trainer::score(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row) {
  Batch& b = s.batch;
  const std::vector<double>& t = s.step_s;
  if (it.elite_w > 0) b.elites = st.elites.flat_actions();
  if (it.K_on > 0) {
    const std::vector<double> r = rewards_of(std::vector<double>(t.begin(), t.begin() + it.K_on),
                                             st.reference_s, config_.reward);
    b.adv = advantages(r, it.ppo);
    double m = 0, v = 0;
    for (double x : r) m += x;
    m /= it.K_on;
    for (double x : r) v += (x - m) * (x - m);
    row.reward_std = std::sqrt(v / it.K_on);
    row.signal_t = signal_t(s.host, b.actions, b.adv);
  }
  row.local_samples += it.K_local;
  double sum = 0;
  int valid = 0;
  for (double x : t)
    if (std::isfinite(x)) sum += x, ++valid;
  row.mean_step_s = valid ? sum / valid : kInf;
  row.invalid_frac = 1.0 - static_cast<double>(valid) / it.K;
}

void Trainer::probe(GraphState& st, const Iteration& it, Sampled& s, IterationStats& row) {
  const CounterfactualConfig& cf = config_.counterfactual;
  const PolicyInput& in = st.input;
  // Per-unit device decisions only: a row of the devices-used, cut or mix readings is not a
  // unit's device.
  if (cf.units <= 0 || it.K_on <= 0 || in.devices_used || in.cut || in.mix) return;
  const int64_t U = in.num_rows(), A = s.host.dim(1);
  const int32_t D = in.num_devices;
  if (D < 2 || st.run->samples_left() < static_cast<int64_t>(cf.units) * (D - 1)) return;
  tick_ = std::chrono::steady_clock::now();
  Rng& rng = rng_of(st);
  const float* z = s.host.data();
  const std::vector<int32_t>& acts = s.batch.actions;
  std::vector<int32_t> probe_k;
  std::vector<int64_t> probe_u;
  std::vector<Placement> moved;  // per probe, its open devices but the sample's own, in order
  for (int32_t j = 0; j < cf.units; ++j) {
    const int32_t k = static_cast<int32_t>(rng.below(static_cast<uint64_t>(it.K_on)));
    const int64_t u = static_cast<int64_t>(rng.below(static_cast<uint64_t>(U)));
    probe_k.push_back(k);
    probe_u.push_back(u);
    std::vector<int32_t> a(acts.begin() + k * U, acts.begin() + (k + 1) * U);
    const int32_t own = a[static_cast<size_t>(u)];
    for (int32_t d = 0; d < D; ++d) {
      if (d == own || z[u * A + d] < kMaskedLogit / 2) continue;
      a[static_cast<size_t>(u)] = d;
      moved.push_back(placement_of(in, a, 0));
    }
  }
  const std::vector<double> t = st.run->evaluate(moved);
  // Rewards per probe and column, the sample's own from its simulation; deviations from each
  // probe's mean over its open columns.
  std::vector<double> dev(static_cast<size_t>(cf.units * A), 0.0);
  std::vector<uint8_t> open(dev.size(), 0);
  double ss = 0, gain = 0;
  int64_t n = 0, agree = 0;
  size_t next = 0;
  for (int32_t j = 0; j < cf.units; ++j) {
    const int64_t u = probe_u[static_cast<size_t>(j)];
    const int32_t k = probe_k[static_cast<size_t>(j)];
    const int32_t own = acts[static_cast<size_t>(k * U + u)];
    const double t_own = s.step_s[static_cast<size_t>(k)];
    double* r = dev.data() + j * A;
    uint8_t* o = open.data() + j * A;
    double mean = 0, best_t = t_own;
    int32_t m = 0, best = own;
    for (int32_t d = 0; d < D; ++d) {
      if (z[u * A + d] < kMaskedLogit / 2) continue;
      const double td = d == own ? t_own : t[next++];
      r[d] = reward_of(td, st.reference_s, config_.reward);
      o[d] = 1;
      mean += r[d];
      ++m;
      if (td < best_t) best_t = td, best = d;
    }
    mean /= m;
    for (int32_t d = 0; d < D; ++d)
      if (o[d]) r[d] -= mean, ss += r[d] * r[d], ++n;
    if (std::isfinite(t_own) && std::isfinite(best_t)) gain += (t_own - best_t) / t_own;
    int32_t arg = 0;  // the policy's most likely device for the unit
    for (int32_t d = 1; d < D; ++d)
      if (z[u * A + d] > z[u * A + arg]) arg = d;
    agree += arg == best;
  }
  row.cf_gain = gain / cf.units;
  row.cf_agree = static_cast<double>(agree) / cf.units;
  const double rms = n > 0 ? std::sqrt(ss / static_cast<double>(n)) : 0;
  if (rms > 1e-12) {  // else no unit moved anything: no signal
    s.batch.cf_units = probe_u;
    if (cf.target == "best") {
      for (int32_t j = 0; j < cf.units; ++j) {  // the best open column and its advantage
        int32_t b = -1;
        for (int32_t d = 0; d < D; ++d)
          if (open[j * A + d] && (b < 0 || dev[j * A + d] > dev[j * A + b])) b = d;
        s.batch.cf_best.push_back(b);
        s.batch.cf_m.push_back(static_cast<float>(std::clamp(dev[j * A + b] / rms, 0.0, 3.0)));
      }
    } else {
      s.batch.cf_adv.assign(dev.size(), 0.0f);
      for (size_t i = 0; i < dev.size(); ++i)
        if (open[i]) s.batch.cf_adv[i] = static_cast<float>(std::clamp(dev[i] / rms, -3.0, 3.0));
    }
  }
  lap(times_.simulate_s);
}

void Trainer::backward(const GraphState& st, const Iteration& it, const nn::Var& logits,
                       const std::vector<int32_t>& acts, const std::vector<float>& old,
                       const std::vector<double>& adv, const Batch& full, IterationStats& row,
                       bool first) {
  PpoStats stats;
  nn::Var loss =
      graph_loss(logits, acts, old, adv, full.elites, it.ppo, it.elite_w, stats, row.elite_ce);
  const double cf_w = config_.counterfactual.weight;
  if (!full.cf_best.empty())
    loss = nn::add(loss,
                   counterfactual_best_loss(logits, full.cf_units, full.cf_best, full.cf_m, cf_w));
  else if (!full.cf_units.empty())
    loss = nn::add(loss, counterfactual_loss(logits, full.cf_units, full.cf_adv, cf_w));
  nn::backward(nn::scale(loss, st.loss_weight));
  lap(times_.backward_s);
  if (first) row.entropy = stats.entropy;
  row.loss = stats.loss;
  row.approx_kl = stats.approx_kl;
  row.clip_fraction = stats.clip_fraction;
}

double Trainer::apply_update() {
  tick_ = std::chrono::steady_clock::now();
  allreduce_grads(policy_->params(), ranks_);
  if (!frozen_.empty()) {  // frozen parameters: no gradient, so Adam leaves them as they are
    float* grads = policy_->params().grads().data();
    for (const auto& [offset, n] : frozen_) std::fill(grads + offset, grads + offset + n, 0.0f);
  }
  const double norm = nn::clip_grad_norm(policy_->params(), config_.grad_clip);
  adam_->step();
  lap(times_.update_s);
  return norm;
}

double Trainer::more_epochs(const Iteration& it, const std::vector<Sampled>& sampled,
                            std::vector<IterationStats>& rows) {
  // Epochs x minibatches, each over every graph's share of its on-policy samples (and all its
  // elites); the first epoch was the sampling pass when it kept the tape.
  double grad_norm = kNaN;
  const int32_t K_on = it.K_on, M = config_.minibatches;
  std::vector<int32_t> order(static_cast<size_t>(K_on));
  for (int32_t e = it.reuse_first ? 1 : 0; e < config_.epochs; ++e) {
    std::iota(order.begin(), order.end(), 0);
    for (int32_t i = K_on - 1; i > 0; --i)  // Fisher-Yates on the trainer's stream
      std::swap(order[i], order[rng_.below(static_cast<uint64_t>(i) + 1)]);
    for (int32_t mb = 0; mb < M; ++mb) {
      const int32_t lo = static_cast<int32_t>(static_cast<int64_t>(K_on) * mb / M);
      const int32_t hi = static_cast<int32_t>(static_cast<int64_t>(K_on) * (mb + 1) / M);
      policy_->params().zero_grad();
      for (size_t gi = 0; gi < graphs_.size(); ++gi) {
        if (!graphs_[gi].owned) continue;
        const Batch& b = sampled[gi].batch;
        const size_t U = static_cast<size_t>(graphs_[gi].input.num_rows());
        std::vector<int32_t> acts;
        std::vector<float> old;
        std::vector<double> adv;
        for (int32_t q = lo; q < hi; ++q) {
          const size_t k = static_cast<size_t>(order[q]);
          acts.insert(acts.end(), b.actions.begin() + k * U, b.actions.begin() + (k + 1) * U);
          old.insert(old.end(), b.old_logp.begin() + k * U, b.old_logp.begin() + (k + 1) * U);
          adv.push_back(b.adv[k]);
        }
        tick_ = std::chrono::steady_clock::now();
        const nn::Var logits = policy_->forward(graphs_[gi].input);
        lap(times_.forward_s);
        backward(graphs_[gi], it, logits, acts, old, adv, b, rows[gi],
                 !it.reuse_first && e == 0 && mb == 0);
      }
      grad_norm = apply_update();
    }
  }
  return grad_norm;
}

std::vector<IterationStats> Trainer::step() {
  ++iteration_;
  times_ = PhaseTimes();
  tick_ = std::chrono::steady_clock::now();
  if (iteration_ == 1) {
    if (!config_.warm_start.empty())
      for (GraphState& st : graphs_)
        if (st.owned) run_warm_start(st);
    lap(times_.simulate_s);
    if (config_.imitation_steps > 0) imitate();
  }
  const Iteration it = plan_iteration();
  std::vector<Sampled> sampled(graphs_.size());
  std::vector<IterationStats> rows(graphs_.size());
  double grad_norm = kNaN;
  policy_->params().zero_grad();
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    GraphState& st = graphs_[gi];
    if (!st.owned) continue;
    Sampled& s = sampled[gi];
    sample(st, it, s, rows[gi]);
    simulate(st, it, s, rows[gi]);
    score(st, it, s, rows[gi]);
    probe(st, it, s, rows[gi]);
    if (it.reuse_first)  // the sampling pass is also the first epoch's forward
      backward(st, it, s.logits, s.batch.actions, s.batch.old_logp, s.batch.adv, s.batch, rows[gi],
               true);
    s.logits = nn::Var();  // the tape is no longer needed
  }
  if (it.reuse_first) grad_norm = apply_update();
  const double later = more_epochs(it, sampled, rows);
  if (!std::isnan(later)) grad_norm = later;
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    rows[gi].iteration = iteration_;
    rows[gi].graph = graphs_[gi].spec.name;
  }
  if (ranks_ > 1) sync_graphs(rows);
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    rows[gi].samples = graphs_[gi].run->samples();
    rows[gi].wall_s = wall_s();
    rows[gi].best_step_s = graphs_[gi].run->best_step_s();
    rows[gi].grad_norm = grad_norm;
  }
  return rows;
}

}  // namespace gdp::rl
