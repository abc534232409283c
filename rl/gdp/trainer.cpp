// The PPO loop: sample K placements per graph, simulate, rewards, advantages, updates;
// checkpoints that resume the same run.
#include "rl/gdp/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>

#include "core/error.h"
#include "core/io.h"
#include "core/json_strict.h"
#include "nn/checkpoint.h"
#include "nn/graph_ops.h"
#include "nn/ops.h"
#include "place/registry.h"
#include "rl/dist.h"
#include "rl/gdp/guided.h"

namespace gdp::rl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The policy's actions (U) for a placement: each unit's device (its first op's), relabeled on
// an anchored input so that unit 0 is on device 0 (a relabeling has the same step time).
std::vector<int32_t> unit_actions(const Placement& p, const PolicyInput& in) {
  const place::Units& units = in.units;
  std::vector<int32_t> a(static_cast<size_t>(units.num_units()));
  for (int32_t u = 0; u < units.num_units(); ++u)
    a[static_cast<size_t>(u)] =
        p.device[static_cast<size_t>(units.first_op[static_cast<size_t>(u)])];
  if (in.anchored && !a.empty()) {
    const int32_t d0 = a[0];
    for (int32_t& x : a) x = x == d0 ? 0 : x == 0 ? d0 : x;
  }
  return a;
}

// Data-parallel: the sum of every rank's gradients (each rank's are over its own graphs).
void allreduce_grads(nn::ParameterBuffer& params, int ranks) {
  if (ranks <= 1) return;
  nn::Tensor g = params.grads();
  if (g.device() != nn::Device::cpu)
    throw InputError("train: data-parallel training runs the policy on the cpu (--device cpu)");
  dist_allreduce_sum(g.data(), g.numel());
}

// The numeric fields of a row, for the ranks' exchange.
constexpr int kRowFields = 19;
void pack_row(const IterationStats& r, double* x) {
  const double v[kRowFields] = {static_cast<double>(r.iteration),
                                static_cast<double>(r.samples),
                                r.wall_s,
                                r.best_step_s,
                                r.mean_step_s,
                                r.invalid_frac,
                                r.entropy,
                                r.loss,
                                r.approx_kl,
                                r.clip_fraction,
                                r.reward_std,
                                r.signal_t,
                                r.grad_norm,
                                r.entropy_p10,
                                r.entropy_p50,
                                r.entropy_p90,
                                r.greedy_changed,
                                r.elite_ce,
                                static_cast<double>(r.local_samples)};
  std::copy(v, v + kRowFields, x);
}
void unpack_row(const double* x, IterationStats& r) {
  r.iteration = static_cast<int64_t>(x[0]);
  r.samples = static_cast<int64_t>(x[1]);
  r.wall_s = x[2];
  r.best_step_s = x[3];
  r.mean_step_s = x[4];
  r.invalid_frac = x[5];
  r.entropy = x[6];
  r.loss = x[7];
  r.approx_kl = x[8];
  r.clip_fraction = x[9];
  r.reward_std = x[10];
  r.signal_t = x[11];
  r.grad_norm = x[12];
  r.entropy_p10 = x[13];
  r.entropy_p50 = x[14];
  r.entropy_p90 = x[15];
  r.greedy_changed = x[16];
  r.elite_ce = x[17];
  r.local_samples = static_cast<int64_t>(x[18]);
}

// A linear decay to 0 over `iterations` (0: none), at 1-based iteration `it`.
double linear_decay(int64_t it, int32_t iterations) {
  if (iterations <= 0) return 1.0;
  return std::max(0.0, 1.0 - static_cast<double>(it - 1) / iterations);
}

int32_t int_key(const StrictJson& sj, const nlohmann::json& j, const char* key, int32_t def,
                int32_t lo, int32_t hi) {
  return j.contains(key) ? static_cast<int32_t>(sj.integer(j, key, "", lo, hi)) : def;
}
double num_key(const StrictJson& sj, const nlohmann::json& j, const char* key, double def,
               double lo, double hi) {
  return j.contains(key) ? sj.number(j, key, "", lo, hi) : def;
}

}  // namespace

TrainConfig TrainConfig::preset(const std::string& regime, const std::string& source) {
  TrainConfig c;
  if (regime == "search") return c;
  if (regime != "transfer")
    throw InputError(source + ": expected \"search\" or \"transfer\", got \"" + regime + "\"");
  c.regime = regime;
  c.policy.features = 2;
  c.policy.decision = "stage";
  c.samples_per_iteration = 16;
  c.imitation_steps = 0;
  c.warm_start.clear();
  c.elite.size = 0;
  c.explore.local_fraction = 0;
  c.ppo.baseline = Baseline::mean;
  c.ppo.std_floor = 0.01;
  c.type_dropout = 0.1;
  c.family_weights = true;
  return c;
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j, const std::string& source,
                                   const std::string& default_regime) {
  StrictJson sj(source);
  sj.check_keys(
      j, "", {},
      {"regime", "policy", "ppo", "reward", "samples_per_iteration", "epochs", "minibatches", "lr",
       "grad_clip", "checkpoint_every", "keep_reference", "imitation_steps", "warm_start", "elite",
       "explore", "expert", "entropy_decay_iterations", "type_dropout", "family_weights"});
  TrainConfig c = preset(j.contains("regime") ? sj.string(j, "regime", "") : default_regime,
                         source + ": regime");
  if (j.contains("policy")) {
    // The regime's policy keys are the defaults of the given ones.
    nlohmann::json p = c.policy.to_json();
    for (const auto& [k, v] : sj.object(j, "policy", "").items()) p[k] = v;
    c.policy = PolicyConfig::from_json(p, source + ": policy");
  }
  if (j.contains("ppo")) {
    const nlohmann::json& p = sj.object(j, "ppo", "");
    StrictJson sp(source + ": ppo");
    sp.check_keys(p, "", {},
                  {"clip", "entropy_coef", "normalize_advantages", "baseline", "std_floor"});
    c.ppo.std_floor = num_key(sp, p, "std_floor", c.ppo.std_floor, 0, 1e6);
    c.ppo.clip = num_key(sp, p, "clip", c.ppo.clip, 0, 1);
    c.ppo.entropy_coef = num_key(sp, p, "entropy_coef", c.ppo.entropy_coef, 0, 10);
    if (p.contains("normalize_advantages"))
      c.ppo.normalize_advantages = sp.boolean(p, "normalize_advantages", "");
    if (p.contains("baseline")) {
      const std::string b = sp.string(p, "baseline", "");
      if (b == "mean")
        c.ppo.baseline = Baseline::mean;
      else if (b == "loo")
        c.ppo.baseline = Baseline::loo;
      else if (b == "rank")
        c.ppo.baseline = Baseline::rank;
      else
        sp.fail("baseline", "expected \"mean\", \"loo\" or \"rank\", got \"" + b + "\"");
    }
  }
  if (j.contains("reward")) {
    const nlohmann::json& r = sj.object(j, "reward", "");
    StrictJson sr(source + ": reward");
    sr.check_keys(r, "", {}, {"invalid_penalty"});
    c.reward.invalid_penalty = num_key(sr, r, "invalid_penalty", c.reward.invalid_penalty, -1e6, 0);
  }
  c.samples_per_iteration =
      int_key(sj, j, "samples_per_iteration", c.samples_per_iteration, 1, 4096);
  c.epochs = int_key(sj, j, "epochs", c.epochs, 1, 100);
  c.minibatches = int_key(sj, j, "minibatches", c.minibatches, 1, 4096);
  if (c.minibatches > c.samples_per_iteration)
    sj.fail("minibatches", "expected at most samples_per_iteration (" +
                               std::to_string(c.samples_per_iteration) + ")");
  c.lr = num_key(sj, j, "lr", c.lr, 0, 10);
  c.grad_clip = num_key(sj, j, "grad_clip", c.grad_clip, 0, 1e9);
  c.checkpoint_every = int_key(sj, j, "checkpoint_every", c.checkpoint_every, 0, 1 << 30);
  if (j.contains("keep_reference")) c.keep_reference = sj.boolean(j, "keep_reference", "");
  c.imitation_steps = int_key(sj, j, "imitation_steps", c.imitation_steps, 0, 1 << 20);
  if (j.contains("warm_start")) {
    const nlohmann::json& w = sj.array(j, "warm_start", "");
    const place::Registry& reg = place::registry();
    c.warm_start.clear();  // the given list replaces the default one
    for (size_t i = 0; i < w.size(); ++i) {
      if (!w[i].is_string()) sj.fail(json_path("warm_start", i), "expected a method name");
      const std::string m = w[i].get<std::string>();
      if (m == "gdp") sj.fail(json_path("warm_start", i), "gdp cannot warm-start itself");
      if (!reg.find(m))
        sj.fail(
            json_path("warm_start", i), "unknown method '" + m + "' (known: " + [&] {
              std::string k;
              for (const auto& n : reg.names()) k += (k.empty() ? "" : ", ") + n;
              return k;
            }() + ")");
      c.warm_start.push_back(m);
    }
  }
  if (j.contains("elite")) {
    const nlohmann::json& e = sj.object(j, "elite", "");
    StrictJson se(source + ": elite");
    se.check_keys(e, "", {}, {"size", "weight", "decay_iterations"});
    c.elite.size = int_key(se, e, "size", c.elite.size, 0, 4096);
    c.elite.weight = num_key(se, e, "weight", c.elite.weight, 0, 1e6);
    c.elite.decay_iterations =
        int_key(se, e, "decay_iterations", c.elite.decay_iterations, 0, 1 << 30);
  }
  if (j.contains("explore")) {
    const nlohmann::json& e = sj.object(j, "explore", "");
    StrictJson se(source + ": explore");
    se.check_keys(e, "", {},
                  {"local_fraction", "block_fraction", "uniform_mix", "p_run", "p_block",
                   "p_boundary", "p_scope"});
    c.explore.local_fraction = num_key(se, e, "local_fraction", c.explore.local_fraction, 0, 1);
    c.explore.block_fraction = num_key(se, e, "block_fraction", c.explore.block_fraction, 0, 1);
    c.explore.uniform_mix = num_key(se, e, "uniform_mix", c.explore.uniform_mix, 0, 1);
    c.explore.p_run = num_key(se, e, "p_run", c.explore.p_run, 0, 1);
    c.explore.p_block = num_key(se, e, "p_block", c.explore.p_block, 0, 1);
    c.explore.p_boundary = num_key(se, e, "p_boundary", c.explore.p_boundary, 0, 1);
    c.explore.p_scope = num_key(se, e, "p_scope", c.explore.p_scope, 0, 1);
    if (c.explore.p_run + c.explore.p_block <= 0)
      se.fail("p_run", "p_run + p_block must be positive (the moves every graph has)");
  }
  if (j.contains("expert")) {
    const nlohmann::json& e = sj.object(j, "expert", "");
    StrictJson se(source + ": expert");
    se.check_keys(e, "", {}, {"anneal_samples", "mix", "t_ratio"});
    c.expert.anneal_samples = int_key(se, e, "anneal_samples", c.expert.anneal_samples, 0, 1 << 20);
    c.expert.mix = num_key(se, e, "mix", c.expert.mix, 0, 1);
    c.expert.t_ratio = num_key(se, e, "t_ratio", c.expert.t_ratio, 1e-9, 1);
    if (c.expert.anneal_samples > 0 && c.elite.size == 0)
      se.fail("anneal_samples", "expert iteration imitates the elites: needs elite.size > 0");
  }
  c.entropy_decay_iterations =
      int_key(sj, j, "entropy_decay_iterations", c.entropy_decay_iterations, 0, 1 << 30);
  c.type_dropout = num_key(sj, j, "type_dropout", c.type_dropout, 0, 1);
  if (j.contains("family_weights")) c.family_weights = sj.boolean(j, "family_weights", "");
  return c;
}

nlohmann::ordered_json TrainConfig::to_json() const {
  nlohmann::ordered_json j;
  j["regime"] = regime;
  j["policy"] = policy.to_json();
  j["ppo"] = {{"clip", ppo.clip},
              {"entropy_coef", ppo.entropy_coef},
              {"normalize_advantages", ppo.normalize_advantages},
              {"baseline", baseline_name(ppo.baseline)},
              {"std_floor", ppo.std_floor}};
  j["reward"] = {{"invalid_penalty", reward.invalid_penalty}};
  j["samples_per_iteration"] = samples_per_iteration;
  j["epochs"] = epochs;
  j["minibatches"] = minibatches;
  j["lr"] = lr;
  j["grad_clip"] = grad_clip;
  j["checkpoint_every"] = checkpoint_every;
  j["keep_reference"] = keep_reference;
  j["imitation_steps"] = imitation_steps;
  j["warm_start"] = warm_start;
  j["elite"] = {
      {"size", elite.size}, {"weight", elite.weight}, {"decay_iterations", elite.decay_iterations}};
  j["explore"] = {{"local_fraction", explore.local_fraction},
                  {"block_fraction", explore.block_fraction},
                  {"uniform_mix", explore.uniform_mix},
                  {"p_run", explore.p_run},
                  {"p_block", explore.p_block},
                  {"p_boundary", explore.p_boundary},
                  {"p_scope", explore.p_scope}};
  j["expert"] = {
      {"anneal_samples", expert.anneal_samples}, {"mix", expert.mix}, {"t_ratio", expert.t_ratio}};
  j["entropy_decay_iterations"] = entropy_decay_iterations;
  j["type_dropout"] = type_dropout;
  j["family_weights"] = family_weights;
  return j;
}

Trainer::Trainer(TrainConfig config, std::vector<TrainGraph> graphs, const CostModel& cost,
                 uint64_t seed, const Policy* init, nn::Device device)
    : config_(std::move(config)),
      cost_(cost),
      seed_(seed),
      rng_(seed ^ 0x9e3779b97f4a7c15ull),
      start_(std::chrono::steady_clock::now()) {
  if (graphs.empty()) throw InputError("train: no graphs");
  if (init) {
    // Fine-tuning keeps its start: no heuristic warm start and no behaviour cloning over the
    // checkpoint (they would overwrite what pre-training learned); the elites and local
    // proposals then start from the policy's own placements.
    config_.warm_start.clear();
    config_.imitation_steps = 0;
    config_.policy = init->config();
    policy_ = std::make_unique<Policy>(config_.policy, init->vocabulary(), seed);
    policy_->params().values().copy_from(init->params().values());
  } else {
    std::vector<const Graph*> gs;
    for (const auto& g : graphs) gs.push_back(g.graph);
    policy_ = std::make_unique<Policy>(config_.policy, OpVocabulary::from_graphs(gs), seed);
  }
  policy_->params().to_device(device);
  nn::AdamConfig ac;
  ac.lr = config_.lr;
  adam_ = std::make_unique<nn::Adam>(policy_->params(), ac);
  for (auto& spec : graphs) {
    GraphState st;
    st.spec = spec;
    const uint64_t gi = graphs_.size();
    st.rng = Rng(seed ^ 0x9e3779b97f4a7c15ull ^ ((gi + 1) * 0xbf58476d1ce4e5b9ull));
    st.run = attach_run(spec, cost_, "gdp", seed, st.own);
    const place::Problem& problem = st.run->problem();
    st.input = policy_->prepare(problem.graph(), problem.cluster(), problem.cost());
    st.input.to_device(device);
    const Reference ref = reference_placement(problem, seed, spec.name);
    const Placement& p = ref.placement;
    st.reference_s = ref.step_s;
    st.reference_method = ref.method;
    // The reference as a first sample, unless the warm start simulates that method anyway.
    const bool warm_has_ref = std::find(config_.warm_start.begin(), config_.warm_start.end(),
                                        ref.method) != config_.warm_start.end();
    st.reference_actions = unit_actions(p, st.input);
    st.elites = EliteSet(config_.elite.size);
    if (config_.keep_reference && !warm_has_ref && st.run->samples_left() > 0)
      st.elites.offer(st.run->evaluate(p), st.reference_actions);  // a sample like any other
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

void Trainer::distribute() {
  if (iteration_ > 0) throw std::logic_error("Trainer::distribute: call it before the first step");
  rank_ = dist_rank();
  ranks_ = dist_size();
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

double Trainer::wall_s() const {
  return wall_offset_s_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool Trainer::done(const place::Budget& budget) const {
  const int64_t per_graph =
      static_cast<int64_t>(config_.samples_per_iteration) +
      (config_.expert.anneal_samples > 0 ? config_.expert.anneal_samples + 1 : 0);
  const int64_t next = per_graph * static_cast<int64_t>(graphs_.size());
  bool stop = (budget.samples > 0 && total_samples() + next > budget.samples) ||
              (budget.seconds > 0 && wall_s() >= budget.seconds);
  if (ranks_ > 1) {  // rank 0's clock decides for all
    double x = stop ? 1 : 0;
    dist_broadcast(&x, 1, 0);
    stop = x != 0;
  }
  return stop;
}

void Trainer::run_warm_start(GraphState& st) {
  const place::Problem& problem = st.run->problem();
  double best = kInf;
  for (const std::string& m : config_.warm_start) {
    if (st.run->samples_left() <= 0) break;
    const place::PlaceResult r =
        place::place(place::prepare(place::registry(), m), problem, place::Budget(), seed_);
    if (r.report.samples > 1) st.run->count_samples(r.report.samples - 1);
    const double t = st.run->evaluate(r.placement);
    if (!std::isfinite(t)) continue;
    std::vector<int32_t> a = unit_actions(r.placement, st.input);
    st.elites.offer(t, a);
    if (t < best) best = t, st.reference_actions = std::move(a);
  }
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

int64_t Trainer::expert_search(GraphState& st, const nn::Tensor& host) {
  const ExpertConfig& x = config_.expert;
  if (st.elites.empty()) return 0;  // nothing valid to start from yet
  const place::Problem& pb = st.run->problem();
  if (!st.annealer) st.annealer = std::make_unique<place::Annealer>(pb, st.input.units);
  place::AnnealConfig c;
  c.t_start = st.anneal_t0;  // 0: calibrate on this first search
  c.t_ratio = x.t_ratio;
  c.calibrate = std::max<int64_t>(1, std::min<int64_t>(64, x.anneal_samples / 2));
  c.critical_every = int64_t{1} << 40;  // one critical path per search
  c.restart_after = 0;
  const Elite& e = st.elites[0];
  place::AnnealStart start{e.actions, e.step_s, "elite"};
  const int64_t before = st.run->samples();
  const int64_t n = std::min<int64_t>(x.anneal_samples + 1, st.run->samples_left());
  Rng rng(rng_of(st).next_u64());
  const place::AnnealOutcome o =
      st.annealer->search(*st.run, c, guide_of(host, st.input.anchored, x.mix), start,
                          place::AnnealBudget{n, 0, 0}, rng);
  if (st.anneal_t0 == 0) st.anneal_t0 = o.t0;
  if (std::isfinite(o.best_energy) && o.best_energy < 1e9) {
    std::vector<int32_t> a = o.best;  // back to the policy's label space (unit 0 on label 0)
    if (st.input.anchored && !a.empty() && a[0] != 0) {
      const int32_t d0 = a[0];
      for (int32_t& v : a) v = v == d0 ? 0 : v == 0 ? d0 : v;
    }
    st.elites.offer(o.best_energy, a);
  }
  return st.run->samples() - before;
}

std::vector<IterationStats> Trainer::step() {
  ++iteration_;
  times_ = PhaseTimes();
  using Clock = std::chrono::steady_clock;
  auto tick = Clock::now();
  auto lap = [&](double& into) {
    const auto now = Clock::now();
    into += std::chrono::duration<double>(now - tick).count();
    tick = now;
  };
  if (iteration_ == 1) {
    if (!config_.warm_start.empty())
      for (GraphState& st : graphs_)
        if (st.owned) run_warm_start(st);
    lap(times_.simulate_s);
    if (config_.imitation_steps > 0) imitate();
  }
  const int32_t K = config_.samples_per_iteration, E = config_.epochs, M = config_.minibatches;
  const int32_t K_local =
      config_.explore.local_fraction > 0
          ? std::clamp(static_cast<int32_t>(std::lround(config_.explore.local_fraction * K)), 0, K)
          : 0;
  const int32_t K_on = K - K_local;  // on-policy samples, the PPO batch
  PpoConfig ppo = config_.ppo;
  ppo.entropy_coef *= linear_decay(iteration_, config_.entropy_decay_iterations);
  const double elite_w =
      config_.elite.size > 0
          ? config_.elite.weight * linear_decay(iteration_, config_.elite.decay_iterations)
          : 0.0;
  nn::ParameterBuffer& params = policy_->params();
  struct Batch {
    std::vector<int32_t> actions;  // (K_on * U)
    std::vector<float> old_logp;   // (K_on * U)
    std::vector<double> adv;       // (K_on)
    std::vector<int32_t> elites;   // (elites * U)
  };
  std::vector<Batch> batches(graphs_.size());
  std::vector<IterationStats> rows(graphs_.size());
  const bool reuse_first = M == 1;  // the sampling pass is also the first epoch's forward
  double grad_norm = kNaN;
  params.zero_grad();
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    GraphState& st = graphs_[gi];
    if (!st.owned) continue;
    Rng& rng = rng_of(st);
    const size_t U = static_cast<size_t>(st.input.num_units());
    if (config_.type_dropout > 0) {  // this iteration's types, for sampling and the updates
      std::vector<int64_t>& type = st.input.features.op_type;
      if (st.op_type.empty()) st.op_type = type;
      for (size_t i = 0; i < type.size(); ++i)
        type[i] = rng.chance(config_.type_dropout) ? 0 : st.op_type[i];
    }
    nn::Var logits;
    {
      std::unique_ptr<nn::NoGradGuard> no_grad;
      if (!reuse_first) no_grad = std::make_unique<nn::NoGradGuard>();
      tick = Clock::now();
      logits = policy_->forward(st.input);
      lap(times_.forward_s);
    }
    IterationStats& row = rows[gi];
    const nn::Tensor host = logits.value().cpu().contiguous();
    {  // diagnostics of the policy as it samples
      std::vector<int32_t> greedy = greedy_actions(host);
      if (st.greedy.size() == greedy.size()) {
        int64_t changed = 0;
        for (size_t u = 0; u < U; ++u) changed += greedy[u] != st.greedy[u];
        row.greedy_changed = static_cast<double>(changed) / static_cast<double>(U);
      }
      st.greedy = std::move(greedy);
      const std::vector<double> h = unit_entropies(host);
      row.entropy_p10 = quantile(h, 0.1);
      row.entropy_p50 = quantile(h, 0.5);
      row.entropy_p90 = quantile(h, 0.9);
    }
    Batch& b = batches[gi];
    if (K_on > 0) {
      b.actions = sample_actions(host, K_on, rng);
      b.old_logp = log_probs(logits.value(), b.actions);
    }
    std::vector<int32_t> local;  // (K_local * U)
    for (int32_t k = 0; k < K_local; ++k) {
      const std::vector<int32_t>& base =
          st.elites.empty() ? st.greedy
                            : st.elites[static_cast<size_t>(rng.below(st.elites.size()))].actions;
      const std::vector<int32_t> a = local_proposal(host, base, st.input.anchored, config_.explore,
                                                    rng, &st.adjacency, &st.scopes);
      local.insert(local.end(), a.begin(), a.end());
    }
    std::vector<Placement> ps;
    ps.reserve(static_cast<size_t>(K));
    for (int32_t k = 0; k < K_on; ++k) ps.push_back(placement_of(st.input.units, b.actions, k));
    for (int32_t k = 0; k < K_local; ++k) ps.push_back(placement_of(st.input.units, local, k));
    lap(times_.sample_s);
    const std::vector<double> t = st.run->evaluate(ps);
    lap(times_.simulate_s);
    if (st.elites.capacity() > 0)
      for (int32_t k = 0; k < K; ++k) {
        const std::vector<int32_t>& src = k < K_on ? b.actions : local;
        const size_t at = static_cast<size_t>(k < K_on ? k : k - K_on) * U;
        st.elites.offer(t[static_cast<size_t>(k)],
                        std::vector<int32_t>(src.begin() + static_cast<std::ptrdiff_t>(at),
                                             src.begin() + static_cast<std::ptrdiff_t>(at + U)));
      }
    if (config_.expert.anneal_samples > 0) {
      tick = Clock::now();
      row.local_samples += expert_search(st, host);
      lap(times_.simulate_s);
    }
    if (elite_w > 0) b.elites = st.elites.flat_actions();
    if (K_on > 0) {
      const std::vector<double> r = rewards_of(std::vector<double>(t.begin(), t.begin() + K_on),
                                               st.reference_s, config_.reward);
      b.adv = advantages(r, ppo);
      double m = 0, v = 0;
      for (double x : r) m += x;
      m /= K_on;
      for (double x : r) v += (x - m) * (x - m);
      row.reward_std = std::sqrt(v / K_on);
      row.signal_t = signal_t(host, b.actions, b.adv);
    }
    row.local_samples += K_local;
    double sum = 0;
    int valid = 0;
    for (double x : t)
      if (std::isfinite(x)) sum += x, ++valid;
    row.mean_step_s = valid ? sum / valid : kInf;
    row.invalid_frac = 1.0 - static_cast<double>(valid) / K;
    if (reuse_first) {
      PpoStats ps_stats;
      const nn::Var loss = graph_loss(logits, b.actions, b.old_logp, b.adv, b.elites, ppo, elite_w,
                                      ps_stats, row.elite_ce);
      nn::backward(nn::scale(loss, st.loss_weight));
      lap(times_.backward_s);
      row.entropy = ps_stats.entropy;
      row.loss = ps_stats.loss;
      row.approx_kl = ps_stats.approx_kl;
      row.clip_fraction = ps_stats.clip_fraction;
    }
  }
  if (reuse_first) {
    tick = Clock::now();
    allreduce_grads(params, ranks_);
    grad_norm = nn::clip_grad_norm(params, config_.grad_clip);
    adam_->step();
    lap(times_.update_s);
  }
  // The remaining updates: epochs x minibatches, each over every graph's share of its
  // on-policy samples (and all its elites).
  std::vector<int32_t> order(static_cast<size_t>(K_on));
  for (int32_t e = reuse_first ? 1 : 0; e < E; ++e) {
    std::iota(order.begin(), order.end(), 0);
    for (int32_t i = K_on - 1; i > 0; --i)  // Fisher-Yates on the trainer's stream
      std::swap(order[i], order[rng_.below(static_cast<uint64_t>(i) + 1)]);
    for (int32_t mb = 0; mb < M; ++mb) {
      const int32_t lo = static_cast<int32_t>(static_cast<int64_t>(K_on) * mb / M);
      const int32_t hi = static_cast<int32_t>(static_cast<int64_t>(K_on) * (mb + 1) / M);
      params.zero_grad();
      for (size_t gi = 0; gi < graphs_.size(); ++gi) {
        if (!graphs_[gi].owned) continue;
        const Batch& b = batches[gi];
        const size_t U = static_cast<size_t>(graphs_[gi].input.num_units());
        std::vector<int32_t> acts;
        std::vector<float> old;
        std::vector<double> adv;
        for (int32_t q = lo; q < hi; ++q) {
          const size_t k = static_cast<size_t>(order[q]);
          acts.insert(acts.end(), b.actions.begin() + k * U, b.actions.begin() + (k + 1) * U);
          old.insert(old.end(), b.old_logp.begin() + k * U, b.old_logp.begin() + (k + 1) * U);
          adv.push_back(b.adv[k]);
        }
        PpoStats ps_stats;
        tick = Clock::now();
        const nn::Var logits = policy_->forward(graphs_[gi].input);
        lap(times_.forward_s);
        IterationStats& row = rows[gi];
        const nn::Var loss =
            graph_loss(logits, acts, old, adv, b.elites, ppo, elite_w, ps_stats, row.elite_ce);
        nn::backward(nn::scale(loss, graphs_[gi].loss_weight));
        lap(times_.backward_s);
        if (!reuse_first && e == 0 && mb == 0) row.entropy = ps_stats.entropy;
        row.loss = ps_stats.loss;
        row.approx_kl = ps_stats.approx_kl;
        row.clip_fraction = ps_stats.clip_fraction;
      }
      tick = Clock::now();
      allreduce_grads(params, ranks_);
      grad_norm = nn::clip_grad_norm(params, config_.grad_clip);
      adam_->step();
      lap(times_.update_s);
    }
  }
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

void Trainer::save(const std::string& dir, int64_t log_bytes) const {
  namespace fs = std::filesystem;
  const std::string bin = "ckpt-" + std::to_string(iteration_) + ".bin";
  nn::save_checkpoint((fs::path(dir) / bin).string(), policy_->params(), adam_.get(), iteration_);
  nlohmann::ordered_json j;
  j["format"] = "gdp-train-state";
  j["version"] = 1;
  j["iteration"] = iteration_;
  j["checkpoint"] = bin;
  j["seed"] = seed_;
  j["rng"] = rng_.state();
  j["wall_s"] = wall_s();
  j["log_bytes"] = log_bytes;
  nlohmann::ordered_json gs = nlohmann::ordered_json::array();
  for (const auto& g : graphs_) gs.push_back(graph_json(g));
  j["graphs"] = std::move(gs);
  write_text_file_atomic((fs::path(dir) / "state.json").string(), j.dump(1) + "\n");
  remove_old_checkpoints(dir, bin);  // no longer named by the state
}

int64_t Trainer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / "state.json").string();
  StrictJson sj(path);
  const nlohmann::json j = sj.parse(read_text_file(path));
  sj.check_header(j, "gdp-train-state", 1);
  sj.check_keys(j, "",
                {"format", "version", "iteration", "checkpoint", "seed", "rng", "wall_s",
                 "log_bytes", "graphs"},
                {});
  const int64_t it = sj.integer(j, "iteration", "");
  const nlohmann::json& gs = check_state(sj, j, seed_, graphs_.size());
  const std::string bin = (fs::path(dir) / sj.string(j, "checkpoint", "")).string();
  int64_t user_step = 0;
  try {
    user_step = nn::load_checkpoint(bin, policy_->params(), adam_.get());
  } catch (const std::runtime_error& e) {
    throw InputError(path + ": checkpoint: " + e.what());
  }
  if (user_step != it)
    sj.fail("checkpoint", "the checkpoint holds iteration " + std::to_string(user_step) +
                              ", the state iteration " + std::to_string(it));
  Rng r;
  if (!r.set_state(sj.string(j, "rng", ""))) sj.fail("rng", "expected a generator state");
  for (size_t i = 0; i < gs.size(); ++i)
    restore_graph(sj, gs[i], json_path("graphs", i), graphs_[i]);
  rng_ = r;
  iteration_ = it;
  wall_offset_s_ = sj.number(j, "wall_s", "");
  start_ = std::chrono::steady_clock::now();
  return sj.integer(j, "log_bytes", "");
}

nlohmann::ordered_json Trainer::graph_json(const GraphState& g) const {
  nlohmann::ordered_json x = run_state_to_json(g.spec.name, *g.run);
  if (std::isfinite(g.imitation_accuracy)) x["imitation_accuracy"] = g.imitation_accuracy;
  if (g.elites.capacity() > 0) x["elites"] = g.elites.to_json();
  if (!g.greedy.empty()) x["greedy"] = g.greedy;
  if (g.anneal_t0 > 0) x["anneal_t0"] = g.anneal_t0;
  if (graphs_.size() > 1) x["rng"] = g.rng.state();
  return x;
}

void Trainer::restore_graph(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                            GraphState& g) {
  sj.check_keys(x, p, {"name", "samples", "elapsed_s", "best_step_s", "best", "curve"},
                {"imitation_accuracy", "elites", "greedy", "anneal_t0", "rng"});
  if (x.contains("imitation_accuracy"))
    g.imitation_accuracy = sj.number(x, "imitation_accuracy", p, 0, 1);
  const int32_t U = g.input.num_units(), A = config_.policy.max_devices;
  if (x.contains("elites")) g.elites.from_json(sj, x.at("elites"), json_path(p, "elites"), U, A);
  g.anneal_t0 = x.contains("anneal_t0") ? sj.number(x, "anneal_t0", p, 0, 1e9) : 0;
  g.greedy.clear();
  if (x.contains("greedy")) {
    const nlohmann::json& a = sj.array(x, "greedy", p);
    if (static_cast<int32_t>(a.size()) != U)
      sj.fail(json_path(p, "greedy"), "expected " + std::to_string(U) + " unit devices");
    for (size_t u = 0; u < a.size(); ++u)
      g.greedy.push_back(static_cast<int32_t>(
          sj.integer_value(a[u], json_path(json_path(p, "greedy"), u), 0, A - 1)));
  }
  if (x.contains("rng") && !g.rng.set_state(sj.string(x, "rng", p)))
    sj.fail(json_path(p, "rng"), "expected a generator state");
  run_state_from_json(sj, x, p, g.spec.name, g.spec.graph->num_ops(), *g.run);
}

void Trainer::sync_graphs(std::vector<IterationStats>& rows) {
  for (size_t gi = 0; gi < graphs_.size(); ++gi) {
    GraphState& g = graphs_[gi];
    const int owner = g.owner;
    double packed[kRowFields];
    pack_row(rows[gi], packed);
    dist_broadcast(packed, kRowFields, owner);
    std::string bytes = owner == rank_ ? graph_json(g).dump() : std::string();
    dist_broadcast(bytes, owner);
    if (owner == rank_) continue;
    unpack_row(packed, rows[gi]);
    const std::string source = "rank " + std::to_string(owner) + "'s state of " + g.spec.name;
    StrictJson sj(source);
    restore_graph(sj, sj.parse(bytes), "", g);
  }
}

}  // namespace gdp::rl
