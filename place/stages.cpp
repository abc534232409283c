// Structural stage coordinates (see stages.h for the rules).
#include "place/stages.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <queue>
#include <string>

#include "core/error.h"
#include "place/units.h"

namespace gdp::place {

namespace {

constexpr int32_t kNone = -1;

// Multi-source breadth-first search over the undirected edges between ops that `eligible`
// accepts: every eligible op without a rank takes the rank of the nearest op with one; the
// sources are taken lowest rank first, so ties go to the lower rank.
template <typename Eligible>
void spread_ranks(const Graph& g, std::vector<int32_t>& rank, Eligible eligible) {
  const int32_t N = g.num_ops();
  std::vector<int32_t> sources;
  for (int32_t v = 0; v < N; ++v)
    if (eligible(v) && rank[v] != kNone) sources.push_back(v);
  std::stable_sort(sources.begin(), sources.end(),
                   [&](int32_t a, int32_t b) { return rank[a] < rank[b]; });
  std::deque<int32_t> queue(sources.begin(), sources.end());
  const auto& edges = g.edges();
  auto visit = [&](int32_t from, int32_t to) {
    if (!eligible(to) || rank[to] != kNone) return;
    rank[to] = rank[from];
    queue.push_back(to);
  };
  while (!queue.empty()) {
    const int32_t v = queue.front();
    queue.pop_front();
    for (int64_t k = g.out_ptr()[v]; k < g.out_ptr()[v + 1]; ++k)
      visit(v, edges[g.out_edge_ids()[k]].dst);
    for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1]; ++k)
      visit(v, edges[g.in_edge_ids()[k]].src);
  }
}

// Eligible ops no search reached (a component without any rank): the rank of the nearest
// eligible op before them in topological order, else after.
template <typename Eligible>
void fill_by_order(const Graph& g, std::vector<int32_t>& rank, Eligible eligible) {
  int32_t last = kNone;
  std::vector<int32_t> pending;
  for (int32_t v : g.topo_order()) {
    if (!eligible(v)) continue;
    if (rank[v] != kNone) {
      last = rank[v];
      if (!pending.empty()) {
        for (int32_t p : pending) rank[p] = last;
        pending.clear();
      }
    } else if (last != kNone) {
      rank[v] = last;
    } else {
      pending.push_back(v);
    }
  }
  for (int32_t p : pending) rank[p] = 0;
}

// Midpoints of the ranks' blocks in cumulative `weight`, normalized to [0, 1]; equal blocks
// when every weight is 0.
std::vector<double> rank_midpoints(const std::vector<double>& weight) {
  const size_t R = weight.size();
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<double> mid(R);
  double before = 0;
  for (size_t r = 0; r < R; ++r) {
    mid[r] = total > 0 ? (before + 0.5 * weight[r]) / total
                       : (static_cast<double>(r) + 0.5) / static_cast<double>(R);
    before += weight[r];
  }
  return mid;
}

// Longest path from a source over forward edges, per op (0 for backward and update ops).
std::vector<int32_t> forward_levels(const Graph& g) {
  std::vector<int32_t> level(g.num_ops(), 0);
  for (int32_t v : g.topo_order()) {
    if (g.op(v).phase != Phase::forward) continue;
    for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1]; ++k) {
      const int32_t s = g.edges()[g.in_edge_ids()[k]].src;
      if (g.op(s).phase == Phase::forward) level[v] = std::max(level[v], level[s] + 1);
    }
  }
  return level;
}

// Whether each forward op computes on an input from outside its colocation unit (not a
// variable, its read or a constant, which sit at the lowest levels whatever layer reads them).
std::vector<char> computes_forward(const Graph& g, const Units& units) {
  std::vector<char> c(g.num_ops(), 0);
  for (const Edge& e : g.edges())
    if (g.op(e.dst).phase == Phase::forward && units.unit_of[e.src] != units.unit_of[e.dst])
      c[e.dst] = 1;
  return c;
}

struct Concurrency {
  std::vector<double> fold, share;  // (R)
};

// The fold coordinate and the time share of each rank among the ranks concurrent with it
// (stages.h). level (N): forward_levels(g); rank_time (R): each rank's time, all phases. A rank
// without a forward op that computes is alone: fold 0.5, share 1.
Concurrency concurrency(const Graph& g, const std::vector<char>& computes,
                        const std::vector<int32_t>& level, const std::vector<int32_t>& rank,
                        size_t R, const std::vector<double>& op_time_s,
                        const std::vector<double>& rank_time) {
  const int32_t N = g.num_ops();
  // Time-weighted quartiles of each rank's forward levels (an op of time 0 weighs as one of
  // the smallest positive time, so that a graph of free ops still has spans).
  double tiny = std::numeric_limits<double>::infinity();
  for (double t : op_time_s)
    if (t > 0) tiny = std::min(tiny, t);
  if (!std::isfinite(tiny)) tiny = 1;
  // The spans count the forward ops that compute (computes_forward).
  std::vector<std::vector<std::pair<int32_t, double>>> levels(R);
  for (int32_t v = 0; v < N; ++v)
    if (g.op(v).phase == Phase::forward && computes[v])
      levels[rank[v]].push_back({level[v], std::max(op_time_s[v], tiny)});
  std::vector<double> q25(R, -1), q50(R, -1), q75(R, -1);
  for (size_t r = 0; r < R; ++r) {
    auto& x = levels[r];
    if (x.empty()) continue;
    std::sort(x.begin(), x.end());
    double total = 0;
    for (const auto& [l, w] : x) total += w;
    double c = 0;
    for (const auto& [l, w] : x) {
      c += w;
      if (q25[r] < 0 && c >= 0.25 * total) q25[r] = l;
      if (q50[r] < 0 && c >= 0.5 * total) q50[r] = l;
      if (q75[r] < 0 && c >= 0.75 * total) q75[r] = l;
    }
  }
  // A sweep over the centres in increasing order: a rank joins the active set when its q25
  // is at most the centre and leaves when its q75 falls below it (for good: the centres only
  // grow); a Fenwick tree over rank indices sums the active ranks' time before r.
  std::vector<int32_t> by_start, by_centre;
  for (size_t r = 0; r < R; ++r)
    if (q50[r] >= 0) by_start.push_back(static_cast<int32_t>(r));
  by_centre = by_start;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](int32_t a, int32_t b) { return q25[a] < q25[b]; });
  std::stable_sort(by_centre.begin(), by_centre.end(),
                   [&](int32_t a, int32_t b) { return q50[a] < q50[b]; });
  // Ranks weigh by their time in integer picoseconds, at least 1 (so that a share is never
  // 0): the sums are exact, whatever order ranks join and leave in, and a lone rank reads
  // exactly 0.5.
  std::vector<int64_t> weight(R);
  for (size_t r = 0; r < R; ++r)
    weight[r] = std::max<int64_t>(1, std::llround(std::min(rank_time[r], 1e6) * 1e12));
  std::vector<int64_t> tree(R + 1, 0);
  auto tree_add = [&](size_t i, int64_t w) {
    for (++i; i <= R; i += i & (~i + 1)) tree[i] += w;
  };
  auto tree_sum = [&](size_t n) {  // sum over indices [0, n)
    int64_t t = 0;
    for (; n > 0; n -= n & (~n + 1)) t += tree[n];
    return t;
  };
  using Leave = std::pair<double, int32_t>;  // (q75, rank): the earliest to leave on top
  std::priority_queue<Leave, std::vector<Leave>, std::greater<Leave>> active;
  int64_t active_time = 0;
  size_t next = 0;
  Concurrency c{std::vector<double>(R, 0.5), std::vector<double>(R, 1.0)};
  for (int32_t r : by_centre) {
    const double m = q50[r];
    for (; next < by_start.size() && q25[by_start[next]] <= m; ++next) {
      const int32_t s = by_start[next];
      active.push({q75[s], s});
      tree_add(static_cast<size_t>(s), weight[s]);
      active_time += weight[s];
    }
    while (!active.empty() && active.top().first < m) {
      const int32_t s = active.top().second;
      active.pop();
      tree_add(static_cast<size_t>(s), -weight[s]);
      active_time -= weight[s];
    }
    const int64_t before = tree_sum(static_cast<size_t>(r));
    c.fold[r] =
        static_cast<double>(2 * before + weight[r]) / (2.0 * static_cast<double>(active_time));
    c.share[r] = static_cast<double>(weight[r]) / static_cast<double>(active_time);
  }
  return c;
}

// Midpoint of each forward op's branch interval (stages.h, by_width); NaN for other ops.
// computes: computes_forward(g, units); the intervals an op gives the ops it feeds count as
// from a source when it does not compute. pos (N): each op's topological position.
std::vector<double> branch_midpoints(const Graph& g, const std::vector<char>& computes,
                                     const std::vector<int32_t>& pos,
                                     const std::vector<double>& op_time_s) {
  const int32_t N = g.num_ops();
  auto forward = [&](int32_t v) { return g.op(v).phase == Phase::forward; };
  const auto& edges = g.edges();
  // Forward successors, deduplicated, in topological order of the successor.
  std::vector<std::vector<int32_t>> succ(N);
  for (int32_t v = 0; v < N; ++v) {
    if (!forward(v)) continue;
    for (int64_t k = g.out_ptr()[v]; k < g.out_ptr()[v + 1]; ++k) {
      const int32_t d = edges[g.out_edge_ids()[k]].dst;
      if (d != v && forward(d)) succ[v].push_back(d);
    }
    auto& s = succ[v];
    std::sort(s.begin(), s.end(), [&](int32_t a, int32_t b) { return pos[a] < pos[b]; });
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  // Longest path of op times from each forward op to the end of the forward pass.
  std::vector<double> tail(N, 0);
  for (auto it = g.topo_order().rbegin(); it != g.topo_order().rend(); ++it) {
    const int32_t v = *it;
    if (!forward(v)) continue;
    double after = 0;
    for (int32_t d : succ[v]) after = std::max(after, tail[d]);
    tail[v] = op_time_s[v] + after;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // What an op's inputs give it: from ops that compute, and from forward sources.
  std::vector<double> lo(N, kInf), hi(N, -kInf), lo_src(N, kInf), hi_src(N, -kInf);
  std::vector<double> mid(N, std::numeric_limits<double>::quiet_NaN());
  for (int32_t v : g.topo_order()) {
    if (!forward(v)) continue;
    double a = 0, z = 1;
    if (lo[v] <= hi[v]) {
      a = lo[v];
      z = hi[v];
    } else if (lo_src[v] <= hi_src[v]) {
      a = lo_src[v];
      z = hi_src[v];
    }
    mid[v] = 0.5 * (a + z);
    const auto& s = succ[v];
    if (s.empty()) continue;
    double total = 0;
    for (int32_t d : s) total += tail[d];
    double x = a;
    for (size_t k = 0; k < s.size(); ++k) {
      const double share = total > 0 ? tail[s[k]] / total : 1.0 / static_cast<double>(s.size());
      const double y = k + 1 == s.size() ? z : x + (z - a) * share;
      const int32_t d = s[k];
      if (!computes[v]) {  // the narrowest (a graph input's share, not a weight's whole)
        if (!(lo_src[d] <= hi_src[d]) || y - x < hi_src[d] - lo_src[d]) {
          lo_src[d] = x;
          hi_src[d] = y;
        }
      } else {
        lo[d] = std::min(lo[d], x);
        hi[d] = std::max(hi[d], y);
      }
      x = y;
    }
  }
  return mid;
}

}  // namespace

StageCoordinates stage_coordinates(const Graph& g, const std::vector<double>& op_time_s) {
  if (!g.finalized())
    throw InputError("stage_coordinates: graph '" + g.name + "' is not finalized");
  const int32_t N = g.num_ops();
  if (op_time_s.size() != static_cast<size_t>(N))
    throw InputError("stage_coordinates: graph '" + g.name +
                     "': " + std::to_string(op_time_s.size()) + " op times for " +
                     std::to_string(N) + " ops");
  for (int32_t v = 0; v < N; ++v)
    if (!std::isfinite(op_time_s[v]) || op_time_s[v] < 0)
      throw InputError("stage_coordinates: graph '" + g.name + "': op '" + g.op(v).name +
                       "' has time " + std::to_string(op_time_s[v]) +
                       "; expected a finite number >= 0");

  const Units units = Units::colocation(g);
  const int32_t U = units.num_units();
  std::vector<int32_t> pos(N);
  for (int32_t k = 0; k < N; ++k) pos[g.topo_order()[k]] = k;
  auto forward = [&](int32_t v) { return g.op(v).phase == Phase::forward; };
  const std::vector<int32_t> level = forward_levels(g);

  // Parameter groups and their first forward use.
  std::vector<char> is_param(U, 0);
  for (int32_t v = 0; v < N; ++v)
    if (g.op(v).resident_bytes() > 0) is_param[units.unit_of[v]] = 1;
  std::vector<int32_t> first_use(U, INT32_MAX);
  for (const Edge& e : g.edges()) {
    const int32_t pu = units.unit_of[e.src], du = units.unit_of[e.dst];
    if (!forward(e.dst)) continue;
    // A forward op outside the group reads the group; a forward op of the group that takes
    // an input from outside it computes with its own weights (a layer that carries them).
    if (is_param[pu] && du != pu) first_use[pu] = std::min(first_use[pu], pos[e.dst]);
    if (is_param[du] && du != pu && g.op(e.dst).resident_bytes() > 0)
      first_use[du] = std::min(first_use[du], pos[e.dst]);
  }
  std::vector<int32_t> groups;
  for (int32_t u = 0; u < U; ++u) {
    if (!is_param[u]) continue;
    if (first_use[u] == INT32_MAX) first_use[u] = pos[units.first_op[u]];
    groups.push_back(u);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [&](int32_t a, int32_t b) { return first_use[a] < first_use[b]; });
  // One rank per layer, not per tensor: a group whose first reader takes the output of
  // another group's first reader joins that group's rank (a bias added to a matrix product,
  // a layer norm's offset after its scale).
  std::vector<int32_t> group_rank(U, kNone), first_reader(U, kNone);
  for (int32_t u : groups)
    if (first_use[u] < N && forward(g.topo_order()[first_use[u]]))
      first_reader[u] = g.topo_order()[first_use[u]];
  std::vector<int32_t> reader_rank(N, kNone);  // rank of the group an op is first reader of
  int32_t num_ranks = 0;
  for (int32_t u : groups) {
    const int32_t r = first_reader[u];
    int32_t joined = kNone;
    if (r != kNone && g.op(r).resident_bytes() == 0)
      for (int64_t k = g.in_ptr()[r]; k < g.in_ptr()[r + 1] && joined == kNone; ++k)
        joined = reader_rank[g.edges()[g.in_edge_ids()[k]].src];
    group_rank[u] = joined != kNone ? joined : num_ranks++;
    if (r != kNone && reader_rank[r] == kNone) reader_rank[r] = group_rank[u];
  }

  StageCoordinates sc;
  sc.from_parameters = !groups.empty();
  std::vector<int32_t>& rank = sc.rank;
  rank.assign(N, kNone);
  if (sc.from_parameters) {
    for (int32_t v = 0; v < N; ++v) rank[v] = group_rank[units.unit_of[v]];
    // Forward readers: the lowest rank of the groups they read.
    for (const Edge& e : g.edges()) {
      const int32_t r = group_rank[units.unit_of[e.src]];
      if (r == kNone || !forward(e.dst) || group_rank[units.unit_of[e.dst]] != kNone) continue;
      if (rank[e.dst] == kNone || r < rank[e.dst]) rank[e.dst] = r;
    }
    sc.num_ranks = num_ranks;
  } else {
    // No parameters: forward levels.
    int32_t max_level = 0;
    for (int32_t v = 0; v < N; ++v)
      if (forward(v)) {
        rank[v] = level[v];
        max_level = std::max(max_level, level[v]);
      }
    sc.num_ranks = max_level + 1;
  }
  spread_ranks(g, rank, forward);
  fill_by_order(g, rank, forward);

  // Backward and update ops: an adjacent parameter group (its update first: a weight gradient
  // feeds it), else the highest rank of the forward ops they read.
  std::vector<int32_t> seed(N, kNone);
  for (int32_t v = 0; v < N; ++v) {
    if (forward(v) || rank[v] != kNone) continue;
    int32_t succ_group = kNone, pred_group = kNone, fwd = kNone;
    for (int64_t k = g.out_ptr()[v]; k < g.out_ptr()[v + 1]; ++k) {
      const int32_t r = group_rank[units.unit_of[g.edges()[g.out_edge_ids()[k]].dst]];
      if (r != kNone) succ_group = succ_group == kNone ? r : std::min(succ_group, r);
    }
    for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1]; ++k) {
      const int32_t s = g.edges()[g.in_edge_ids()[k]].src;
      const int32_t r = group_rank[units.unit_of[s]];
      if (r != kNone) pred_group = pred_group == kNone ? r : std::min(pred_group, r);
      if (forward(s)) fwd = std::max(fwd, rank[s]);
    }
    seed[v] = succ_group != kNone ? succ_group : pred_group != kNone ? pred_group : fwd;
  }
  for (int32_t v = 0; v < N; ++v)
    if (seed[v] != kNone) rank[v] = seed[v];
  auto not_forward = [&](int32_t v) { return !forward(v); };
  spread_ranks(g, rank, not_forward);
  fill_by_order(g, rank, not_forward);
  if (sc.num_ranks == 0) sc.num_ranks = 1;  // an empty graph

  // Cumulative coordinates.
  const size_t R = static_cast<size_t>(sc.num_ranks);
  std::vector<double> time(R, 0), memory(R, 0);
  for (int32_t v = 0; v < N; ++v) {
    const Op& op = g.op(v);
    time[rank[v]] += op_time_s[v];
    memory[rank[v]] += static_cast<double>(op.resident_bytes() + op.output_bytes());
  }
  const std::vector<double> mid_time = rank_midpoints(time);
  const std::vector<double> mid_memory = rank_midpoints(memory);
  const std::vector<char> computes = computes_forward(g, units);
  const Concurrency con = concurrency(g, computes, level, rank, R, op_time_s, time);
  sc.by_time.resize(N);
  sc.by_memory.resize(N);
  sc.by_rank.resize(N);
  sc.by_fold.resize(N);
  sc.share.resize(N);
  const std::vector<double> branch = branch_midpoints(g, computes, pos, op_time_s);
  std::vector<double> width_sum(R, 0);
  std::vector<int32_t> width_count(R, 0);
  for (int32_t v = 0; v < N; ++v)
    if (forward(v) && computes[v]) {
      width_sum[rank[v]] += branch[v];
      ++width_count[rank[v]];
    }
  sc.by_width.resize(N);
  sc.by_op_width.resize(N);
  for (int32_t v = 0; v < N; ++v) {
    sc.by_width[v] = width_count[rank[v]] > 0
                         ? std::clamp(width_sum[rank[v]] / width_count[rank[v]], 0.0, 1.0)
                         : 0.5;
    // by_op_width: an op that computes in the forward pass, its own midpoint; any other op
    // that reads such ops, the mean of theirs; else its rank's width.
    double sum = 0;
    int32_t n = 0;
    if (forward(v) && computes[v]) {
      sum = branch[v];
      n = 1;
    } else if (!forward(v)) {
      for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1]; ++k) {
        const int32_t x = g.edges()[g.in_edge_ids()[k]].src;
        if (forward(x) && computes[x]) {
          sum += branch[x];
          ++n;
        }
      }
    }
    sc.by_op_width[v] = n > 0 ? std::clamp(sum / n, 0.0, 1.0) : sc.by_width[v];
    sc.by_time[v] = mid_time[rank[v]];
    sc.by_memory[v] = mid_memory[rank[v]];
    sc.by_rank[v] = (rank[v] + 0.5) / static_cast<double>(R);
    sc.by_fold[v] = con.fold[rank[v]];
    sc.share[v] = con.share[rank[v]];
  }
  return sc;
}

Units stage_units(const Graph& g, const std::vector<int32_t>& rank, int32_t num_ranks) {
  const Units col = Units::colocation(g);
  Units u;
  u.unit_of.assign(g.num_ops(), kNone);
  std::vector<int32_t> of_rank(static_cast<size_t>(num_ranks), kNone);
  for (int32_t v : g.topo_order()) {
    const int32_t r = rank[col.first_op[col.unit_of[v]]];
    if (of_rank[r] == kNone) {
      of_rank[r] = u.num_units();
      u.first_op.push_back(v);
    }
    u.unit_of[v] = of_rank[r];
  }
  return u;
}

std::vector<uint8_t> weight_gradient_ops(const Graph& g) {
  const int32_t N = g.num_ops();
  const Units col = Units::colocation(g);
  // target[v]: the one update group v's output serves, kNone (none) or kMany (several).
  constexpr int32_t kMany = -2;
  std::vector<int32_t> target(static_cast<size_t>(N), kNone);
  const std::vector<int32_t>& topo = g.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {  // consumers first
    const int32_t v = *it;
    const Phase ph = g.op(v).phase;
    if (ph == Phase::update) {
      target[static_cast<size_t>(v)] = col.unit_of[v];
      continue;
    }
    if (ph != Phase::backward) continue;
    int32_t t = kNone;
    for (int64_t k = g.out_ptr()[v]; k < g.out_ptr()[v + 1] && t != kMany; ++k) {
      const int32_t d = g.edges()[static_cast<size_t>(g.out_edge_ids()[k])].dst;
      const int32_t td = target[static_cast<size_t>(d)];
      if (td == kNone) continue;
      t = t == kNone || t == td ? td : kMany;
    }
    target[static_cast<size_t>(v)] = t;
  }
  std::vector<uint8_t> w(static_cast<size_t>(N), 0);
  for (int32_t v = 0; v < N; ++v)
    w[static_cast<size_t>(v)] =
        g.op(v).phase == Phase::backward && target[static_cast<size_t>(v)] >= 0;
  return w;
}

Units split_units(const Graph& g, const Units& units, const std::vector<uint8_t>& part,
                  std::vector<uint8_t>* part_of) {
  const Units col = Units::colocation(g);
  const int32_t C = col.num_units(), U = units.num_units();
  std::vector<uint8_t> group_in(static_cast<size_t>(C), 1);  // every op of the group in part
  for (int32_t v = 0; v < g.num_ops(); ++v)
    if (!part[static_cast<size_t>(v)]) group_in[static_cast<size_t>(col.unit_of[v])] = 0;
  Units s;
  s.unit_of.assign(static_cast<size_t>(g.num_ops()), kNone);
  std::vector<int32_t> renumber(static_cast<size_t>(2 * U), kNone);  // (unit, in part) -> unit
  part_of->clear();
  for (int32_t v : g.topo_order()) {
    const int32_t key = 2 * units.unit_of[v] + group_in[static_cast<size_t>(col.unit_of[v])];
    if (renumber[static_cast<size_t>(key)] == kNone) {
      renumber[static_cast<size_t>(key)] = s.num_units();
      s.first_op.push_back(v);
      part_of->push_back(static_cast<uint8_t>(key & 1));
    }
    s.unit_of[static_cast<size_t>(v)] = renumber[static_cast<size_t>(key)];
  }
  return s;
}

std::vector<int32_t> stage_cut(const Graph& g, const std::vector<double>& coordinate,
                               int32_t stages) {
  if (stages < 1) throw InputError("stage_cut: stages must be >= 1, got " + std::to_string(stages));
  Placement p;
  p.device.resize(coordinate.size());
  for (size_t v = 0; v < coordinate.size(); ++v)
    p.device[v] =
        std::clamp(static_cast<int32_t>(std::floor(coordinate[v] * stages)), 0, stages - 1);
  enforce_colocation(g, p);
  return p.device;
}

}  // namespace gdp::place
