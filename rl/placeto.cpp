// Placeto: coarsening, the message-passing policy and its REINFORCE training (rl/placeto.h).
#include "rl/placeto.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "nn/autograd.h"
#include "nn/ops.h"
#include "nn/optim.h"
#include "nn/sampling.h"
#include "place/cost_view.h"

namespace gdp::rl::placeto {

namespace {

struct Dsu {
  std::vector<int32_t> parent;
  explicit Dsu(int32_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  void unite(int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (a < b) std::swap(a, b);
    parent[a] = b;  // the smaller index is the root: deterministic
  }
};

int32_t scope_depth(const std::string& s) {
  return 1 + static_cast<int32_t>(std::count(s.begin(), s.end(), '/'));
}

std::string scope_parent(const std::string& s) { return s.substr(0, s.rfind('/')); }

}  // namespace

// ---- Coarsening --------------------------------------------------------------------------------

Placement Coarsening::expand(const std::vector<int32_t>& group_device) const {
  if (static_cast<int32_t>(group_device.size()) != num_groups())
    throw std::invalid_argument("placeto: expand: one device per group expected");
  Placement p;
  p.device.resize(group_of.size());
  for (size_t i = 0; i < group_of.size(); ++i) p.device[i] = group_device[group_of[i]];
  return p;
}

Coarsening coarsen(const Graph& g, int32_t max_nodes) {
  if (!g.finalized()) throw InputError("placeto: the graph is not finalized");
  if (max_nodes < 1) throw std::invalid_argument("placeto: max_nodes must be >= 1");
  const int32_t n = g.num_ops();
  // Colocation first: these unions are never undone.
  Dsu coloc(n);
  {
    std::unordered_map<std::string, int32_t> first;
    for (int32_t i = 0; i < n; ++i) {
      const std::string& c = g.op(i).colocation;
      if (c.empty()) continue;
      auto [it, fresh] = first.emplace(c, i);
      if (!fresh) coloc.unite(it->second, i);
    }
  }
  // Scope keys: key_of[op] indexes `keys` (the op's current scope prefix), -1 without a scope.
  std::map<std::string, int32_t> key_index;
  for (int32_t i = 0; i < n; ++i)
    if (!g.op(i).scope.empty()) key_index.emplace(g.op(i).scope, 0);
  std::vector<std::string> keys;
  for (auto& [s, k] : key_index) {
    k = static_cast<int32_t>(keys.size());
    keys.push_back(s);
  }
  std::vector<int32_t> key_of(n, -1);
  for (int32_t i = 0; i < n; ++i)
    if (!g.op(i).scope.empty()) key_of[i] = key_index.at(g.op(i).scope);

  // Groups under the current keys (colocation and equal prefix): the DSU.
  auto components = [&]() {
    Dsu d = coloc;
    std::map<std::string, int32_t> first;
    for (int32_t i = 0; i < n; ++i) {
      if (key_of[i] < 0) continue;
      auto [it, fresh] = first.emplace(keys[key_of[i]], i);
      if (!fresh) d.unite(it->second, i);
    }
    return d;
  };
  auto count_roots = [&](Dsu& d) {
    int32_t c = 0;
    for (int32_t i = 0; i < n; ++i) c += d.find(i) == i;
    return c;
  };

  Dsu groups = components();
  int32_t count = count_roots(groups);
  while (count > max_nodes) {
    std::map<std::string, int32_t> current;  // distinct current prefixes (deterministic order)
    int32_t deepest = 1;
    for (const auto& k : keys) {
      current.emplace(k, 0);
      deepest = std::max(deepest, scope_depth(k));
    }
    if (deepest < 2) break;
    // Parents of the deepest prefixes, with how many groups cutting them back removes.
    std::map<std::string, int32_t> children;
    for (const auto& [k, unused] : current)
      if (scope_depth(k) == deepest) ++children[scope_parent(k)];
    std::vector<std::pair<int32_t, std::string>> cand;  // (-savings, parent)
    for (const auto& [p, c] : children) cand.emplace_back(-(c - 1 + (current.count(p) ? 1 : 0)), p);
    std::sort(cand.begin(), cand.end());
    int32_t estimate = count;  // an upper bound after the cuts (colocation may merge more)
    std::map<std::string, bool> cut;
    for (const auto& [neg_saving, p] : cand) {
      cut[p] = true;
      estimate += neg_saving;
      if (estimate <= max_nodes) break;
    }
    for (auto& k : keys)
      if (scope_depth(k) == deepest && cut.count(scope_parent(k))) k = scope_parent(k);
    groups = components();
    count = count_roots(groups);
  }

  // Groups in the topological order of their first op.
  const std::vector<int32_t>& topo = g.topo_order();
  std::vector<int32_t> root_group(n, -1);
  std::vector<int32_t> first_ops;
  for (int32_t op : topo) {
    const int32_t r = groups.find(op);
    if (root_group[r] < 0) {
      root_group[r] = static_cast<int32_t>(first_ops.size());
      first_ops.push_back(op);
    }
  }
  Coarsening out;
  out.group_of.resize(n);
  for (int32_t i = 0; i < n; ++i) out.group_of[i] = root_group[groups.find(i)];
  const int32_t ng = static_cast<int32_t>(first_ops.size());
  if (ng > max_nodes) {  // chunks of consecutive groups
    const int32_t chunk = (ng + max_nodes - 1) / max_nodes;
    for (auto& x : out.group_of) x /= chunk;
    for (int32_t k = 0; k < ng; k += chunk) out.first_op.push_back(first_ops[k]);
  } else {
    out.first_op = std::move(first_ops);
  }
  return out;
}

// ---- Coarse graph ------------------------------------------------------------------------------

CoarseGraph CoarseGraph::build(const Graph& g, const Cluster& c, const CostModel& cost,
                               const Coarsening& groups) {
  if (c.num_devices() < 1) throw InputError("placeto: the cluster has no devices");
  const int32_t N = groups.num_groups();
  CoarseGraph cg;
  cg.num_nodes = N;
  cg.num_devices = c.num_devices();
  std::vector<double> f(static_cast<size_t>(N) * kStaticFeatures, 0.0);
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.op(i);
    const int32_t k = groups.group_of[i];
    f[k * kStaticFeatures + 0] += cost.op_time_s(op, c.devices[0]);
    f[k * kStaticFeatures + 2] += static_cast<double>(op.resident_bytes() + op.output_bytes());
  }
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (const Edge& e : g.edges()) {
    const int32_t s = groups.group_of[e.src], d = groups.group_of[e.dst];
    if (s == d) continue;
    f[s * kStaticFeatures + 1] += static_cast<double>(e.bytes);
    edges.emplace_back(s, d);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  // Normalized by the column's max, as the reference does.
  cg.static_x = nn::Tensor::zeros({N, kStaticFeatures});
  for (int32_t j = 0; j < kStaticFeatures; ++j) {
    double m = 0;
    for (int32_t k = 0; k < N; ++k) m = std::max(m, f[k * kStaticFeatures + j]);
    for (int32_t k = 0; k < N; ++k)
      cg.static_x.data()[k * kStaticFeatures + j] =
          m > 0 ? static_cast<float>(f[k * kStaticFeatures + j] / m) : 0.0f;
  }
  std::vector<int32_t> src, dst;
  std::vector<std::vector<int32_t>> out(N);
  cg.has_parent = nn::Tensor::zeros({N, 1});
  cg.has_child = nn::Tensor::zeros({N, 1});
  for (const auto& [s, d] : edges) {
    src.push_back(s);
    dst.push_back(d);
    out[s].push_back(d);
    cg.has_child.data()[s] = 1;
    cg.has_parent.data()[d] = 1;
  }
  cg.adj = nn::make_adjacency(N, src, dst);
  // Reachability by a search from every node (the coarse graph may have cycles).
  const size_t words = (static_cast<size_t>(N) + 63) / 64;
  std::vector<uint64_t> reach(static_cast<size_t>(N) * words, 0);
  std::vector<int32_t> stack;
  for (int32_t v = 0; v < N; ++v) {
    uint64_t* r = &reach[v * words];
    stack.assign(out[v].begin(), out[v].end());
    while (!stack.empty()) {
      const int32_t u = stack.back();
      stack.pop_back();
      if (r[u / 64] >> (u % 64) & 1) continue;
      r[u / 64] |= uint64_t{1} << (u % 64);
      for (int32_t w : out[u]) stack.push_back(w);
    }
  }
  auto reaches = [&](int32_t a, int32_t b) { return (reach[a * words + b / 64] >> (b % 64)) & 1; };
  cg.ancestors.resize(N);
  cg.descendants.resize(N);
  cg.parallel.resize(N);
  for (int32_t v = 0; v < N; ++v)
    for (int32_t u = 0; u < N; ++u) {
      if (u == v) continue;
      const bool down = reaches(v, u), up = reaches(u, v);
      if (down) cg.descendants[v].push_back(u);
      if (up) cg.ancestors[v].push_back(u);
      if (!down && !up) cg.parallel[v].push_back(u);
    }
  return cg;
}

// ---- Policy ----------------------------------------------------------------------------------

nn::Var PlacetoPolicy::Fnn::forward(const nn::Var& x) const {
  nn::Var h = x;
  for (size_t l = 0; l < w.size(); ++l) {
    h = nn::linear(h, w[l], b[l]);
    if (l + 1 < w.size()) h = nn::relu(h);
  }
  return h;
}

PlacetoPolicy::Fnn PlacetoPolicy::make_fnn(const std::string& name,
                                           const std::vector<int32_t>& sizes, nn::Rng& rng) {
  Fnn f;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    // Glorot uniform weights and zero biases, as the reference's FNN.
    const double bound = std::sqrt(6.0 / (sizes[l] + sizes[l + 1]));
    const std::string p = name + "." + std::to_string(l);
    f.w.push_back(params_.add_uniform(p + ".w", {sizes[l + 1], sizes[l]}, bound, rng));
    f.b.push_back(params_.add(p + ".b", {sizes[l + 1]}));
  }
  return f;
}

PlacetoPolicy::PlacetoPolicy(int32_t num_devices, PolicyConfig config, uint64_t seed)
    : num_devices_(num_devices), config_(config) {
  if (num_devices < 1 || config.width < 1 || config.rounds < 0)
    throw std::invalid_argument("placeto: devices and width must be positive, rounds >= 0");
  nn::Rng rng(seed);
  const int32_t F = kStaticFeatures + 2 + num_devices, W = config.width;
  node_ = make_fnn("node", {F, W, W, W}, rng);
  f_fw_ = make_fnn("fw.f", {W, W, W}, rng);
  g_fw_ = make_fnn("fw.g", {W, W, W}, rng);
  f_bw_ = make_fnn("bw.f", {W, W, W}, rng);
  g_bw_ = make_fnn("bw.g", {W, W, W}, rng);
  f_p_ = make_fnn("parents.f", {2 * W, 2 * W, 2 * W}, rng);
  g_p_ = make_fnn("parents.g", {2 * W, 2 * W, 2 * W}, rng);
  f_c_ = make_fnn("children.f", {2 * W, 2 * W, 2 * W}, rng);
  g_c_ = make_fnn("children.g", {2 * W, 2 * W, 2 * W}, rng);
  f_r_ = make_fnn("parallel.f", {2 * W, 2 * W, 2 * W}, rng);
  g_r_ = make_fnn("parallel.g", {2 * W, 2 * W, 2 * W}, rng);
  classifier_ = make_fnn("classifier", {8 * W, 16 * W, 8 * W, num_devices}, rng);
}

nn::Var PlacetoPolicy::logits(const CoarseGraph& cg, const std::vector<int32_t>& placement,
                              const std::vector<uint8_t>& visited, int32_t current) const {
  const int32_t N = cg.num_nodes, D = num_devices_, W = config_.width;
  const int32_t F = kStaticFeatures + 2 + D;
  if (cg.num_devices != D || static_cast<int32_t>(placement.size()) != N ||
      static_cast<int32_t>(visited.size()) != N || current < 0 || current >= N)
    throw std::invalid_argument("placeto: logits: inconsistent state");
  nn::Tensor x = nn::Tensor::zeros({N, F});
  float* px = x.data();
  const float* ps = cg.static_x.data();
  for (int32_t k = 0; k < N; ++k) {
    float* row = px + static_cast<size_t>(k) * F;
    for (int32_t j = 0; j < kStaticFeatures; ++j) row[j] = ps[k * kStaticFeatures + j];
    row[kStaticFeatures] = visited[k] ? 1.0f : 0.0f;
    row[kStaticFeatures + 1] = k == current ? 1.0f : 0.0f;
    row[kStaticFeatures + 2 + placement[k]] = 1.0f;
  }
  const nn::Var s = node_.forward(nn::Var(x));
  auto pass = [&](const Fnn& f, const Fnn& g, const nn::Tensor& has, nn::EdgeDir dir) {
    const nn::Var mask(has);
    nn::Var h = s;
    for (int32_t r = 0; r < config_.rounds; ++r) {
      const nn::Var m = nn::segment_mean(nn::relu(f.forward(h)), cg.adj, dir);
      h = nn::add(s, nn::mul(mask, nn::relu(g.forward(m))));
    }
    return h;
  };
  const nn::Var e = nn::concat<float>({pass(f_fw_, g_fw_, cg.has_parent, nn::EdgeDir::in),
                                       pass(f_bw_, g_bw_, cg.has_child, nn::EdgeDir::out)},
                                      1);
  auto aggregate = [&](const Fnn& f, const Fnn& g, const std::vector<int64_t>& set) {
    nn::Var m;
    if (set.empty())
      m = nn::Var(nn::Tensor::zeros({1, 2 * W}));
    else
      m = nn::mean(nn::relu(f.forward(nn::gather_rows(e, set))), 0, true);
    return nn::relu(g.forward(m));
  };
  const nn::Var cat = nn::concat<float>(
      {aggregate(f_p_, g_p_, cg.ancestors[current]), aggregate(f_c_, g_c_, cg.descendants[current]),
       aggregate(f_r_, g_r_, cg.parallel[current]), nn::gather_rows(e, {int64_t{current}})},
      1);
  return classifier_.forward(cat);  // (1, D)
}

// ---- Training ----------------------------------------------------------------------------------

TrainReport train(place::Run& run, const TrainConfig& cfg, int64_t max_episodes) {
  using clock = std::chrono::steady_clock;
  const place::Problem& pb = run.problem();
  const Graph& g = pb.graph();
  const Cluster& c = pb.cluster();
  const int32_t D = pb.num_devices();
  TrainReport rep;

  // Samples this training may use: the run's budget; a seconds-only budget sets no sample
  // cap; default_samples without any budget.
  const int64_t start_samples = run.samples();
  const int64_t cap = run.budget().samples > 0   ? run.budget().samples
                      : run.budget().seconds > 0 ? std::numeric_limits<int64_t>::max() / 2
                                                 : cfg.default_samples;
  if (run.budget().samples <= 0 && run.budget().seconds <= 0) run.set_target_samples(cap);
  auto available = [&]() {
    return std::min(run.samples_left(), cap - (run.samples() - start_samples));
  };

  // The node limit: max_nodes, lowered so that min_episodes episodes (at most N samples each
  // after the one initial simulation) fit the sample budget.
  int64_t limit = cfg.max_nodes;
  if (run.budget().samples > 0 || run.budget().seconds <= 0)
    limit = std::min<int64_t>(limit, std::max<int64_t>(1, (cap - 1) / cfg.min_episodes));
  rep.node_limit = static_cast<int32_t>(limit);
  const Coarsening groups = coarsen(g, rep.node_limit);
  const CoarseGraph cg = CoarseGraph::build(g, c, pb.cost(), groups);
  const int32_t N = cg.num_nodes;
  rep.groups = N;

  // Invalid placements (out of memory) are charged invalid_penalty x an upper bound of any
  // valid step: every op on the slowest device, one after another, plus every edge at the
  // slowest route's uncontended transfer time, so that no valid placement costs more.
  const place::CostView cv(pb);
  double serial_s = 0;
  for (int32_t op = 0; op < g.num_ops(); ++op) {
    double slowest = 0;
    for (int32_t d = 0; d < D; ++d) slowest = std::max(slowest, cv.op_time_s(op, d));
    serial_s += slowest;
  }
  for (const Edge& e : g.edges()) {
    double slowest = 0;
    for (int32_t s = 0; s < D; ++s)
      for (int32_t d = 0; d < D; ++d) slowest = std::max(slowest, cv.transfer_s(e.bytes, s, d));
    serial_s += slowest;
  }
  const double penalty_s = cfg.invalid_penalty * (serial_s > 0 ? serial_s : 1.0);
  auto charge = [&](double t) { return std::isfinite(t) ? t : penalty_s; };

  // The initial placement, the same in every episode (the reference: one fixed random one).
  std::vector<int32_t> init(N, 0);
  if (cfg.init == "random") {
    Rng r(run.seed() ^ 0x5bd1e9955bd1e995ULL);
    for (auto& d : init) d = static_cast<int32_t>(r.below(static_cast<uint64_t>(D)));
  } else if (cfg.init != "zero") {
    throw InputError("placeto: init must be \"random\" or \"zero\"");
  }
  if (available() < 1 || run.out_of_time()) return rep;
  const double t0_raw = run.evaluate(groups.expand(init));
  rep.initial_step_s = t0_raw;
  // Also the reward scale (rewards are fractions of it); 1 s for a graph of free ops.
  const double t0 = charge(t0_raw) > 0 ? charge(t0_raw) : 1.0;
  if (D == 1) return rep;  // one device: the initial placement is the only one

  PlacetoPolicy policy(D, cfg.policy, run.seed());
  nn::AdamConfig ac;
  ac.lr = cfg.lr;
  nn::Adam adam(policy.params(), ac);
  Rng rng(run.seed() + 0x9e3779b97f4a7c15ULL);
  std::vector<std::deque<double>> history(N);  // per round: returns of the last K episodes

  std::vector<int32_t> p(N), actions(N);
  std::vector<uint8_t> visited(N);
  std::vector<double> reward(N), ret(N), adv(N);
  // Episodes that simulate nothing (every sampled device equals the current one) spend no
  // budget; after kIdleEpisodes of them in a row the policy has settled: stop.
  constexpr int32_t kIdleEpisodes = 20;
  int32_t idle = 0;
  while (max_episodes <= 0 || rep.episodes < max_episodes) {
    if (available() < 1 || run.out_of_time()) break;
    const int64_t samples_before = run.samples();
    const auto t_start = clock::now();
    p = init;
    std::fill(visited.begin(), visited.end(), 0);
    double t_prev = t0;
    bool partial = false;
    for (int32_t v = 0; v < N; ++v) {
      int32_t a = 0;
      {
        nn::NoGradGuard no_grad;
        const nn::Var lg = policy.logits(cg, p, visited, v);
        nn::categorical_sample(&a, lg.value().data(), 1, D, rng);
      }
      double t = t_prev;
      if (a != p[v]) {  // an unchanged placement is not simulated again (deterministic)
        if (available() < 1 || run.out_of_time()) {
          partial = true;
          break;
        }
        p[v] = a;
        t = charge(run.evaluate(groups.expand(p)));
      }
      actions[v] = a;
      reward[v] = (t_prev - t) / t0;
      t_prev = t;
      visited[v] = 1;
    }
    if (partial) {  // the budget ended inside the episode: no update on a partial episode
      rep.partial = true;
      break;
    }
    // Discounted returns, and the reference's per-round baseline: the mean return at that
    // round over the last K episodes, this one included.
    double acc = 0;
    for (int32_t v = N - 1; v >= 0; --v) ret[v] = acc = reward[v] + cfg.discount * acc;
    for (int32_t v = 0; v < N; ++v) {
      auto& h = history[v];
      h.push_back(ret[v]);
      while (static_cast<int32_t>(h.size()) > cfg.baseline_episodes) h.pop_front();
      adv[v] = ret[v] - std::accumulate(h.begin(), h.end(), 0.0) / static_cast<double>(h.size());
    }
    // REINFORCE: replay the episode's states with gradients (the policy has not changed), sum
    // -(adv * log pi(a) + entropy * H) over the rounds, clip, one Adam step.
    policy.params().zero_grad();
    p = init;
    std::fill(visited.begin(), visited.end(), 0);
    for (int32_t v = 0; v < N; ++v) {
      const nn::Var lg = policy.logits(cg, p, visited, v);
      const nn::Var lp = nn::categorical_log_prob(lg, std::vector<int32_t>{actions[v]});
      const nn::Var ent = nn::categorical_entropy(lg);
      const nn::Var loss = nn::sum(nn::add(nn::scale(lp, static_cast<float>(-adv[v])),
                                           nn::scale(ent, static_cast<float>(-cfg.entropy))));
      nn::backward(loss);
      p[v] = actions[v];
      visited[v] = 1;
    }
    if (cfg.grad_clip > 0) nn::clip_grad_norm(policy.params(), cfg.grad_clip);
    adam.step();
    ++rep.episodes;
    idle = run.samples() == samples_before ? idle + 1 : 0;
    if (idle >= kIdleEpisodes) {
      rep.settled = true;
      break;
    }
    rep.last_episode_s = std::chrono::duration<double>(clock::now() - t_start).count();
    char msg[128];
    std::snprintf(msg, sizeof msg, "episode %lld, end %.4g s", static_cast<long long>(rep.episodes),
                  t_prev);
    run.progress(msg);
  }
  return rep;
}

}  // namespace gdp::rl::placeto
