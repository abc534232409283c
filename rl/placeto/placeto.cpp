// Placeto: coarsening, the message-passing policy and its REINFORCE training
// (rl/placeto/placeto.h).
#include "rl/placeto/placeto.h"

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
#include "core/json_strict.h"
#include "nn/autograd.h"
#include "nn/checkpoint.h"
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

void PlacetoPolicy::to_device(nn::Device device) {
  params_.to_device(device);
  device_ = device;
}

nn::Var PlacetoPolicy::logits(const CoarseGraph& cg, const std::vector<int32_t>& placement,
                              const std::vector<uint8_t>& visited, int32_t current) const {
  const int32_t N = cg.num_nodes, D = num_devices_, W = config_.width;
  const int32_t F = kStaticFeatures + 2 + D;
  if (cg.num_devices > D || cg.num_devices < 1 || static_cast<int32_t>(placement.size()) != N ||
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
  const nn::Var s = node_.forward(nn::Var(x.to_device(device_)));
  auto pass = [&](const Fnn& f, const Fnn& g, const nn::Tensor& has, nn::EdgeDir dir) {
    const nn::Var mask(has.to_device(device_));
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
      m = nn::Var(nn::Tensor::zeros({1, 2 * W}).to_device(device_));
    else
      m = nn::mean(nn::relu(f.forward(nn::gather_rows(e, set))), 0, true);
    return nn::relu(g.forward(m));
  };
  const nn::Var cat = nn::concat<float>(
      {aggregate(f_p_, g_p_, cg.ancestors[current]), aggregate(f_c_, g_c_, cg.descendants[current]),
       aggregate(f_r_, g_r_, cg.parallel[current]), nn::gather_rows(e, {int64_t{current}})},
      1);
  const nn::Var out = classifier_.forward(cat);  // (1, A)
  if (cg.num_devices == D) return out;
  nn::Tensor mask = nn::Tensor::zeros({1, D});  // slots the cluster does not have
  for (int32_t d = cg.num_devices; d < D; ++d) mask.data()[d] = -1e9f;
  return nn::add(out, nn::Var(mask.to_device(device_)));
}

// ---- Training ----------------------------------------------------------------------------------

TrainConfig train_config(const place::Options& o) {
  TrainConfig c;
  c.max_nodes = static_cast<int32_t>(o.integer("max_nodes"));
  c.min_episodes = static_cast<int32_t>(o.integer("min_episodes"));
  c.policy.width = static_cast<int32_t>(o.integer("width"));
  c.policy.rounds = static_cast<int32_t>(o.integer("rounds"));
  c.lr = o.number("lr");
  c.entropy = o.number("entropy");
  c.discount = o.number("discount");
  c.baseline_episodes = static_cast<int32_t>(o.integer("baseline_episodes"));
  c.grad_clip = o.number("grad_clip");
  c.invalid_penalty = o.number("invalid_penalty");
  c.init = o.string("init");
  c.max_devices = static_cast<int32_t>(o.integer("max_devices"));
  return c;
}

namespace {

// Entropy (nats) of a (1, A) logits row.
double row_entropy(const float* l, int32_t A) {
  float h = 0;
  nn::categorical_entropy_forward(&h, l, 1, A);
  return h;
}

}  // namespace

Agent::Agent(const TrainConfig& cfg, int32_t max_devices, uint64_t seed, nn::Device device)
    : cfg_(cfg),
      policy_(std::make_unique<PlacetoPolicy>(max_devices, cfg.policy, seed)),
      rng_(seed + 0x9e3779b97f4a7c15ULL) {
  policy_->to_device(device);
  nn::AdamConfig ac;
  ac.lr = cfg.lr;
  adam_ = std::make_unique<nn::Adam>(policy_->params(), ac);
}

Agent::Agent(const TrainConfig& cfg, const PlacetoPolicy& policy, uint64_t seed, nn::Device device)
    : Agent(
          [&] {
            TrainConfig c = cfg;
            c.policy = policy.config();
            return c;
          }(),
          policy.num_devices(), seed, nn::Device::cpu) {
  nn::Tensor values = policy.params().values().cpu();
  policy_->params().values().copy_from(values);
  policy_->to_device(device);
}

size_t Agent::add_graph(const place::Problem& pb, int32_t node_limit, uint64_t seed) {
  const Graph& g = pb.graph();
  const Cluster& c = pb.cluster();
  const int32_t D = pb.num_devices();
  if (D > policy_->num_devices())
    throw InputError("placeto: graph '" + g.name + "' has " + std::to_string(D) +
                     " devices, the policy " + std::to_string(policy_->num_devices()) +
                     " device slots (max_devices)");
  GraphCtx x;
  x.pb = &pb;
  x.groups = coarsen(g, node_limit);
  x.cg = CoarseGraph::build(g, c, pb.cost(), x.groups);
  const int32_t N = x.cg.num_nodes;
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
  x.penalty_s = cfg_.invalid_penalty * (serial_s > 0 ? serial_s : 1.0);
  // The initial placement, the same in every episode (the reference: one fixed random one).
  x.init.assign(static_cast<size_t>(N), 0);
  if (cfg_.init == "random") {
    Rng r(seed ^ 0x5bd1e9955bd1e995ULL);
    for (auto& d : x.init) d = static_cast<int32_t>(r.below(static_cast<uint64_t>(D)));
  } else if (cfg_.init != "zero") {
    throw InputError("placeto: init must be \"random\" or \"zero\"");
  }
  x.history.assign(static_cast<size_t>(N), {});
  graphs_.push_back(std::move(x));
  return graphs_.size() - 1;
}

bool Agent::start(GraphCtx& g, place::Run& run, int64_t allowed) {
  if (g.started) return true;
  if (allowed < 1 || run.samples_left() < 1 || run.out_of_time()) return false;
  g.initial_raw = run.evaluate(g.groups.expand(g.init));
  // Also the reward scale (rewards are fractions of it); 1 s for a graph of free ops.
  g.t0 = charge(g, g.initial_raw) > 0 ? charge(g, g.initial_raw) : 1.0;
  g.started = true;
  return true;
}

Agent::Episode Agent::train_episode(size_t i, place::Run& run, int64_t allowed) {
  GraphCtx& g = graphs_[i];
  Episode ep;
  const int64_t before = run.samples();
  if (!start(g, run, allowed)) return ep;
  const int32_t N = g.cg.num_nodes, A = policy_->num_devices();
  std::vector<int32_t> p = g.init, actions(static_cast<size_t>(N));
  std::vector<uint8_t> visited(static_cast<size_t>(N), 0);
  std::vector<double> reward(static_cast<size_t>(N)), ret(static_cast<size_t>(N)),
      adv(static_cast<size_t>(N));
  double t_prev = g.t0, valid_sum = 0, entropy = 0;
  int64_t valid = 0, simulated = 0;
  for (int32_t v = 0; v < N; ++v) {
    int32_t a = 0;
    {
      nn::NoGradGuard no_grad;
      const nn::Tensor lg = policy_->logits(g.cg, p, visited, v).value().cpu().contiguous();
      nn::categorical_sample(&a, lg.data(), 1, A, rng_);
      entropy += row_entropy(lg.data(), A);
    }
    double t = t_prev;
    if (a != p[v]) {  // an unchanged placement is not simulated again (deterministic)
      if (run.samples() - before >= allowed || run.samples_left() < 1 || run.out_of_time()) {
        ep.samples = run.samples() - before;
        return ep;  // the budget ended inside the episode: no update on a partial episode
      }
      p[v] = a;
      const double raw = run.evaluate(g.groups.expand(p));
      ++simulated;
      if (std::isfinite(raw)) valid_sum += raw, ++valid;
      t = charge(g, raw);
    }
    actions[v] = a;
    reward[v] = (t_prev - t) / g.t0;
    t_prev = t;
    visited[v] = 1;
  }
  // Discounted returns, and the reference's per-round baseline: the mean return at that
  // round over the last K episodes, this one included.
  double acc = 0;
  for (int32_t v = N - 1; v >= 0; --v) ret[v] = acc = reward[v] + cfg_.discount * acc;
  for (int32_t v = 0; v < N; ++v) {
    auto& h = g.history[v];
    h.push_back(ret[v]);
    while (static_cast<int32_t>(h.size()) > cfg_.baseline_episodes) h.pop_front();
    adv[v] = ret[v] - std::accumulate(h.begin(), h.end(), 0.0) / static_cast<double>(h.size());
  }
  // REINFORCE: replay the episode's states with gradients (the policy has not changed), sum
  // -(adv * log pi(a) + entropy * H) over the rounds, clip, one Adam step.
  policy_->params().zero_grad();
  p = g.init;
  std::fill(visited.begin(), visited.end(), 0);
  double loss = 0;
  for (int32_t v = 0; v < N; ++v) {
    const nn::Var lg = policy_->logits(g.cg, p, visited, v);
    const nn::Var lp = nn::categorical_log_prob(lg, std::vector<int32_t>{actions[v]});
    const nn::Var ent = nn::categorical_entropy(lg);
    const nn::Var l = nn::sum(nn::add(nn::scale(lp, static_cast<float>(-adv[v])),
                                      nn::scale(ent, static_cast<float>(-cfg_.entropy))));
    loss += l.value().item();
    nn::backward(l);
    p[v] = actions[v];
    visited[v] = 1;
  }
  if (cfg_.grad_clip > 0) nn::clip_grad_norm(policy_->params(), cfg_.grad_clip);
  adam_->step();
  ++g.episodes;
  ep.samples = run.samples() - before;
  g.idle = ep.samples == 0 ? g.idle + 1 : 0;
  ep.complete = true;
  ep.end_step_s = t_prev;
  ep.mean_step_s =
      valid ? valid_sum / static_cast<double>(valid) : std::numeric_limits<double>::infinity();
  ep.invalid_frac =
      simulated ? static_cast<double>(simulated - valid) / static_cast<double>(simulated) : 0;
  ep.entropy = N ? entropy / N : 0;
  ep.loss = loss;
  return ep;
}

Agent::Episode Agent::place_episode(size_t i, place::Run& run, bool greedy) {
  GraphCtx& g = graphs_[i];
  Episode ep;
  if (run.samples_left() < 1 || run.out_of_time()) return ep;
  const int32_t N = g.cg.num_nodes, A = policy_->num_devices();
  std::vector<int32_t> p = g.init;
  std::vector<uint8_t> visited(static_cast<size_t>(N), 0);
  double entropy = 0;
  nn::NoGradGuard no_grad;
  for (int32_t v = 0; v < N; ++v) {
    const nn::Tensor lg = policy_->logits(g.cg, p, visited, v).value().cpu().contiguous();
    int32_t a = 0;
    if (greedy) {
      nn::categorical_argmax(&a, lg.data(), 1, A);
    } else {
      nn::categorical_sample(&a, lg.data(), 1, A, rng_);
    }
    entropy += row_entropy(lg.data(), A);
    p[v] = a;
    visited[v] = 1;
  }
  const double t = run.evaluate(g.groups.expand(p));
  ep.complete = true;
  ep.samples = 1;
  ep.end_step_s = t;
  ep.mean_step_s = t;
  ep.invalid_frac = std::isfinite(t) ? 0 : 1;
  ep.entropy = N ? entropy / N : 0;
  return ep;
}

nlohmann::ordered_json Agent::save(const std::string& bin) const {
  int64_t total = 0;
  for (const auto& g : graphs_) total += g.episodes;
  nn::save_checkpoint(bin, policy_->params(), adam_.get(), total);
  nlohmann::ordered_json j;
  j["rng"] = rng_.state();
  nlohmann::ordered_json gs = nlohmann::ordered_json::array();
  for (const auto& g : graphs_) {
    nlohmann::ordered_json x;
    x["started"] = g.started;
    x["initial_step_s"] =
        std::isfinite(g.initial_raw) ? nlohmann::ordered_json(g.initial_raw) : nullptr;
    x["episodes"] = g.episodes;
    x["idle"] = g.idle;
    nlohmann::ordered_json h = nlohmann::ordered_json::array();
    for (const auto& d : g.history) h.push_back(std::vector<double>(d.begin(), d.end()));
    x["history"] = std::move(h);
    gs.push_back(std::move(x));
  }
  j["graphs"] = std::move(gs);
  return j;
}

void Agent::load(const nlohmann::json& state, const std::string& bin, const std::string& source) {
  StrictJson sj(source);
  const std::string p = "placeto";
  sj.check_keys(state, p, {"rng", "graphs"}, {});
  const nlohmann::json& gs = sj.array(state, "graphs", p);
  if (gs.size() != graphs_.size())
    sj.fail(json_path(p, "graphs"), "expected " + std::to_string(graphs_.size()) + " graphs");
  int64_t total = 0;
  for (size_t i = 0; i < gs.size(); ++i) {
    const std::string q = json_path(json_path(p, "graphs"), i);
    const nlohmann::json& x = gs[i];
    sj.check_keys(x, q, {"started", "initial_step_s", "episodes", "idle", "history"}, {});
    GraphCtx& g = graphs_[i];
    g.started = sj.boolean(x, "started", q);
    g.initial_raw = x.at("initial_step_s").is_null() ? std::numeric_limits<double>::infinity()
                                                     : sj.number(x, "initial_step_s", q);
    if (g.started) g.t0 = charge(g, g.initial_raw) > 0 ? charge(g, g.initial_raw) : 1.0;
    g.episodes = sj.integer(x, "episodes", q);
    g.idle = static_cast<int32_t>(sj.integer(x, "idle", q, 0, 1 << 30));
    total += g.episodes;
    const nlohmann::json& h = sj.array(x, "history", q);
    if (h.size() != g.history.size())
      sj.fail(json_path(q, "history"),
              "expected " + std::to_string(g.history.size()) + " rounds (coarse nodes)");
    for (size_t v = 0; v < h.size(); ++v) {
      const std::string r = json_path(json_path(q, "history"), v);
      if (!h[v].is_array()) sj.fail(r, "expected an array of returns");
      g.history[v].clear();
      for (size_t k = 0; k < h[v].size(); ++k)
        g.history[v].push_back(sj.number_value(h[v][k], json_path(r, k), -1e300, 1e300));
    }
  }
  int64_t stored = 0;
  try {
    stored = nn::load_checkpoint(bin, policy_->params(), adam_.get());
  } catch (const std::runtime_error& e) {
    throw InputError(source + ": checkpoint: " + e.what());
  }
  if (stored != total)
    sj.fail(json_path(p, "graphs"), "the checkpoint holds " + std::to_string(stored) +
                                        " episodes, the state " + std::to_string(total));
  Rng r;
  if (!r.set_state(sj.string(state, "rng", p)))
    sj.fail(json_path(p, "rng"), "expected a generator state");
  rng_ = r;
}

bool Agent::begin(size_t i, place::Run& run, int64_t allowed) {
  return start(graphs_[i], run, allowed);
}

TrainReport train(place::Run& run, const TrainConfig& cfg, int64_t max_episodes) {
  using clock = std::chrono::steady_clock;
  const place::Problem& pb = run.problem();
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
  Agent agent(cfg, cfg.max_devices > 0 ? cfg.max_devices : D, run.seed());
  agent.add_graph(pb, rep.node_limit, run.seed());
  rep.groups = agent.groups(0);
  if (!agent.begin(0, run, available())) return rep;
  rep.initial_step_s = agent.initial_step_s(0);
  if (D == 1) return rep;  // one device: the initial placement is the only one

  // Episodes that simulate nothing (every sampled device equals the current one) spend no
  // budget; after kIdleEpisodes of them in a row the policy has settled: stop.
  constexpr int32_t kIdleEpisodes = 20;
  while (max_episodes <= 0 || rep.episodes < max_episodes) {
    if (available() < 1 || run.out_of_time()) break;
    const auto t_start = clock::now();
    const Agent::Episode ep = agent.train_episode(0, run, available());
    if (!ep.complete) {  // the budget ended inside the episode: not trained on
      rep.partial = true;
      break;
    }
    ++rep.episodes;
    if (agent.idle(0) >= kIdleEpisodes) {
      rep.settled = true;
      break;
    }
    rep.last_episode_s = std::chrono::duration<double>(clock::now() - t_start).count();
    char msg[128];
    std::snprintf(msg, sizeof msg, "episode %lld, end %.4g s", static_cast<long long>(rep.episodes),
                  ep.end_step_s);
    run.progress(msg);
  }
  return rep;
}

}  // namespace gdp::rl::placeto
