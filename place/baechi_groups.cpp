// Baechi's placement groups (colocation, co-placement preprocessing) and distinct tensors
// (place/baechi.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "place/baechi.h"
#include "place/baechi_detail.h"

namespace gdp::place::baechi {

using namespace detail;

namespace {

// Union-find over op ids (path halving).
struct Dsu {
  std::vector<int32_t> parent;
  explicit Dsu(int32_t n) : parent(n) {
    for (int32_t i = 0; i < n; ++i) parent[i] = i;
  }
  int32_t find(int32_t a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  }
};

}  // namespace

// Groups

Groups make_groups(const Graph& g, const CostView& cv, bool preprocess) {
  const int32_t n = g.num_ops(), D = cv.num_devices();
  Groups out;
  Dsu dsu(n);
  std::vector<int64_t> mem(n);
  for (int32_t i = 0; i < n; ++i) mem[i] = cv.op_memory_bytes(i);
  auto unite = [&](int32_t a, int32_t b) {
    a = dsu.find(a);
    b = dsu.find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    dsu.parent[b] = a;
    mem[a] += mem[b];
  };
  // Colocation groups: always.
  std::unordered_map<std::string_view, int32_t> first;
  for (int32_t i = 0; i < n; ++i) {
    const std::string& c = g.op(i).colocation;
    if (c.empty()) continue;
    auto [it, inserted] = first.emplace(c, i);
    if (!inserted) unite(i, it->second);
  }
  // Preprocessing merges, capped so that no merged group outgrows a quarter of the smaller of
  // the smallest device and the even share of memory.
  int64_t min_cap = std::numeric_limits<int64_t>::max();
  for (int32_t d = 0; d < D; ++d) min_cap = std::min(min_cap, cv.capacity_bytes(d));
  out.max_group_bytes = std::min(min_cap, cv.total_memory_bytes() / std::max(1, D)) / 4;
  auto merge = [&](int32_t a, int32_t b, int64_t* counter) {
    const int32_t ra = dsu.find(a), rb = dsu.find(b);
    if (ra == rb) return;
    if (mem[ra] + mem[rb] > out.max_group_bytes) {
      ++out.merges_skipped;
      return;
    }
    unite(ra, rb);
    ++*counter;
  };
  if (preprocess) {
    // A backward op "gradients/<fwd>_grad/..." with its forward op <fwd>.
    constexpr std::string_view kPrefix = "gradients/", kGrad = "_grad/";
    for (int32_t i = 0; i < n; ++i) {
      const std::string& name = g.op(i).name;
      if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
      const std::string rest = name.substr(kPrefix.size());
      for (size_t pos = rest.rfind(kGrad); pos != std::string::npos && pos > 0;
           pos = rest.rfind(kGrad, pos - 1)) {
        const int32_t f = g.find_op(rest.substr(0, pos));
        if (f >= 0) {
          merge(i, f, &out.merges_backward);
          break;
        }
      }
    }
    // An update op with the ops holding weights that feed it (the variable it updates).
    for (int32_t i = 0; i < n; ++i) {
      if (g.op(i).phase != Phase::update) continue;
      for (int64_t k = g.in_ptr()[i]; k < g.in_ptr()[i + 1]; ++k) {
        const int32_t src = g.edges()[g.in_edge_ids()[k]].src;
        if (g.op(src).resident_bytes() > 0) merge(i, src, &out.merges_update);
      }
    }
    // Chains: u's only consumer v has u as its only producer.
    for (int32_t u = 0; u < n; ++u) {
      int32_t v = kNone;
      bool one = true;
      for (int64_t k = g.out_ptr()[u]; k < g.out_ptr()[u + 1] && one; ++k) {
        const int32_t dst = g.edges()[g.out_edge_ids()[k]].dst;
        if (v == kNone) v = dst;
        one = dst == v;
      }
      if (v == kNone || !one) continue;
      for (int64_t k = g.in_ptr()[v]; k < g.in_ptr()[v + 1] && one; ++k)
        one = g.edges()[g.in_edge_ids()[k]].src == u;
      if (one) merge(u, v, &out.merges_chain);
    }
  }
  // Number the groups in the topological order of their first op.
  out.group_of.assign(n, kNone);
  std::vector<int32_t> id_of_root(n, kNone);
  int32_t num = 0;
  for (int32_t op : g.topo_order()) {
    const int32_t r = dsu.find(op);
    if (id_of_root[r] == kNone) {
      id_of_root[r] = num++;
      out.memory.push_back(mem[r]);
      out.resident.push_back(0);
    }
    out.group_of[op] = id_of_root[r];
  }
  for (int32_t i = 0; i < n; ++i) out.resident[out.group_of[i]] += g.op(i).resident_bytes();
  out.ptr.assign(num + 1, 0);
  for (int32_t i = 0; i < n; ++i) ++out.ptr[out.group_of[i] + 1];
  for (int32_t k = 0; k < num; ++k) out.ptr[k + 1] += out.ptr[k];
  out.ops.resize(n);
  std::vector<int64_t> fill(out.ptr.begin(), out.ptr.end() - 1);
  for (int32_t op : g.topo_order()) out.ops[fill[out.group_of[op]]++] = op;
  return out;
}

Tensors make_tensors(const Graph& g) {
  Tensors t;
  const int32_t n = g.num_ops();
  t.base.assign(n + 1, 0);
  for (int32_t i = 0; i < n; ++i)
    t.base[i + 1] = t.base[i] + static_cast<int64_t>(g.op(i).outputs.size());
  t.bytes.assign(t.base[n], 0);
  for (const Edge& e : g.edges()) {  // output indices are valid in a finalized graph
    int64_t& b = t.bytes[t.of(e)];
    b = std::max(b, e.bytes);
  }
  return t;
}

}  // namespace gdp::place::baechi
