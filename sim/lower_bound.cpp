// Step-time lower bound: longest path and work bound over the simulator's op time table.
#include "sim/lower_bound.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace gdp {

StepBound step_time_lower_bound(const Simulator& sim) {
  const Graph& g = sim.graph();
  const int32_t D = sim.cluster().num_devices();
  std::vector<double> finish(g.num_ops(), 0);
  StepBound b;
  double work = 0;
  for (int32_t op : g.topo_order()) {
    double t = std::numeric_limits<double>::infinity();
    for (int32_t d = 0; d < D; ++d) t = std::min(t, sim.op_time_s(op, d));
    double start = 0;
    for (int64_t e = g.in_ptr()[op]; e < g.in_ptr()[op + 1]; ++e)
      start = std::max(start, finish[g.edges()[g.in_edge_ids()[e]].src]);
    finish[op] = start + t;
    b.critical_path_s = std::max(b.critical_path_s, finish[op]);
    work += t;
  }
  b.work_s = D > 0 ? work / D : 0;
  b.bound_s = std::max(b.critical_path_s, b.work_s);
  return b;
}

int64_t memory_lower_bound_bytes(const Graph& g, int32_t cuts) {
  const int32_t n = g.num_ops();
  int64_t resident = 0;
  for (const Op& op : g.ops()) resident += op.resident_bytes();
  if (n == 0 || cuts <= 0) return resident;
  const std::vector<int32_t>& topo = g.topo_order();
  const auto& E = g.edges();
  // Tensor slots: op a's output o is slot first[a] + o; its bytes held while a reader is
  // pending are min(tensor bytes, the smallest edge reading it).
  std::vector<int64_t> first(static_cast<size_t>(n) + 1, 0);
  for (int32_t a = 0; a < n; ++a)
    first[a + 1] = first[a] + static_cast<int64_t>(g.op(a).outputs.size());
  std::vector<int64_t> held(static_cast<size_t>(first[n]));
  for (int32_t a = 0; a < n; ++a)
    for (size_t o = 0; o < g.op(a).outputs.size(); ++o)
      held[first[a] + o] = g.op(a).outputs[o].bytes;
  for (const Edge& e : E) {
    int64_t& h = held[first[e.src] + e.src_output];
    h = std::min(h, e.bytes);
  }

  // Candidates: the deepest forward ops read only by later phases (the turn to the backward
  // pass), then ops spread over the topological order. Any op will do, a zero-time one too:
  // the simulator allocates an op's outputs when it starts, and its readers start only after
  // its end event (docs/cost-model.md, section 4).
  const std::vector<int32_t> depth = g.levels();
  std::vector<int32_t> turn;
  for (int32_t v : topo) {
    if (g.op(v).phase != Phase::forward) continue;
    bool forward_reader = false, later_reader = false;
    for (int64_t k = g.out_ptr()[v]; k < g.out_ptr()[v + 1]; ++k)
      (g.op(E[g.out_edge_ids()[k]].dst).phase == Phase::forward ? forward_reader : later_reader) =
          true;
    if (later_reader && !forward_reader) turn.push_back(v);
  }
  // The deepest turn ops first (the loss ends the longest forward path), ties by topo order.
  std::stable_sort(turn.begin(), turn.end(),
                   [&](int32_t a, int32_t b) { return depth[a] > depth[b]; });
  std::vector<int32_t> cand(turn.begin(),
                            turn.begin() + std::min<ptrdiff_t>(turn.size(), cuts / 2));
  const int32_t spread = cuts - static_cast<int32_t>(cand.size());
  for (int32_t k = 0; k < spread; ++k)
    cand.push_back(topo[static_cast<size_t>((2 * int64_t{k} + 1) * n / (2 * int64_t{spread}))]);
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end()), cand.end());

  std::vector<int32_t> anc(n, -1), desc(n, -1), stack;
  // Marks with `id` every op reachable from v over the adjacency (ptr, ids), each edge's
  // `end` the next op; appends them to `found` where given.
  auto reach = [&](int32_t v, const std::vector<int64_t>& ptr, const std::vector<int64_t>& ids,
                   int32_t Edge::*end, int32_t id, std::vector<int32_t>& mark,
                   std::vector<int32_t>* found) {
    stack.assign(1, v);
    while (!stack.empty()) {
      const int32_t u = stack.back();
      stack.pop_back();
      for (int64_t k = ptr[u]; k < ptr[u + 1]; ++k)
        if (const int32_t w = E[ids[k]].*end; mark[w] != id) {
          mark[w] = id;
          if (found) found->push_back(w);
          stack.push_back(w);
        }
    }
  };
  std::vector<int32_t> counted(held.size(), -1);
  int64_t best = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(cand.size()); ++i) {
    const int32_t v = cand[i];
    // Descendants (v included) and strict ancestors, marked with the candidate's index.
    desc[v] = i;
    reach(v, g.out_ptr(), g.out_edge_ids(), &Edge::dst, i, desc, nullptr);
    std::vector<int32_t> ancestors;
    reach(v, g.in_ptr(), g.in_edge_ids(), &Edge::src, i, anc, &ancestors);
    // v's outputs and scratch are allocated at its start and held until its end.
    int64_t live = g.op(v).output_bytes() + g.op(v).temp_bytes;
    for (int32_t a : ancestors)
      for (int64_t k = g.out_ptr()[a]; k < g.out_ptr()[a + 1]; ++k) {
        const Edge& e = E[g.out_edge_ids()[k]];
        const int64_t slot = first[a] + e.src_output;
        if (desc[e.dst] != i || counted[slot] == i) continue;
        counted[slot] = i;
        live += held[slot];
      }
    best = std::max(best, live);
  }
  return resident + best;
}

int32_t fewest_devices_holding(const Cluster& c, int64_t bytes) {
  int64_t have = 0;
  for (int32_t d = 0; d < c.num_devices(); ++d) {
    const int64_t m = c.devices[static_cast<size_t>(d)].memory_bytes;
    if (m <= 0) return d + 1;  // unlimited
    have += m;
    if (have >= bytes) return d + 1;
  }
  return 0;
}

}  // namespace gdp
