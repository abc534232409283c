// Graph construction, validation (edges, names, cycles), CSR adjacency and topological order.
#include "core/graph.h"

#include <algorithm>
#include <queue>

#include "core/error.h"

namespace gdp {

namespace {
constexpr const char* kDTypeNames[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "bool"};
constexpr int64_t kDTypeSizes[] = {4, 2, 2, 8, 4, 8, 1, 1};
constexpr const char* kPhaseNames[] = {"forward", "backward", "update"};
}  // namespace

const char* dtype_name(DType t) { return kDTypeNames[static_cast<int>(t)]; }
const char* phase_name(Phase p) { return kPhaseNames[static_cast<int>(p)]; }
int64_t dtype_size_bytes(DType t) { return kDTypeSizes[static_cast<int>(t)]; }

bool parse_dtype(const std::string& s, DType* out) {
  for (int i = 0; i < 8; ++i)
    if (s == kDTypeNames[i]) {
      *out = static_cast<DType>(i);
      return true;
    }
  return false;
}

bool parse_phase(const std::string& s, Phase* out) {
  for (int i = 0; i < 3; ++i)
    if (s == kPhaseNames[i]) {
      *out = static_cast<Phase>(i);
      return true;
    }
  return false;
}

int32_t Graph::add_op(Op op) {
  ops_.push_back(std::move(op));
  finalized_ = false;
  return static_cast<int32_t>(ops_.size() - 1);
}

void Graph::add_edge(int32_t src, int32_t src_output, int32_t dst, int64_t bytes) {
  edges_.push_back(Edge{src, src_output, dst, bytes});
  finalized_ = false;
}

int32_t Graph::find_op(const std::string& n) const {
  auto it = by_name_.find(n);
  return it == by_name_.end() ? -1 : it->second;
}

void Graph::finalize() {
  const int32_t n = num_ops();
  if (n == 0) throw GraphError("graph '" + name + "' is empty: expected at least one op");
  by_name_.clear();
  by_name_.reserve(static_cast<size_t>(n) * 2);
  for (int32_t i = 0; i < n; ++i) {
    const Op& o = ops_[i];
    if (o.name.empty()) throw GraphError("op #" + std::to_string(i) + " has an empty name");
    if (!by_name_.emplace(o.name, i).second)
      throw GraphError("duplicate op name '" + o.name + "'");
  }
  for (size_t e = 0; e < edges_.size(); ++e) {
    const Edge& ed = edges_[e];
    if (ed.src < 0 || ed.src >= n || ed.dst < 0 || ed.dst >= n)
      throw GraphError("edge #" + std::to_string(e) + " refers to a missing op");
    if (ed.src == ed.dst) throw GraphError("edge #" + std::to_string(e) + " is a self-loop on op '" + ops_[ed.src].name + "'");
    const Op& s = ops_[ed.src];
    if (ed.src_output < 0 || ed.src_output >= static_cast<int32_t>(s.outputs.size()))
      throw GraphError("edge #" + std::to_string(e) + " from op '" + s.name + "' uses output " +
                       std::to_string(ed.src_output) + " but the op has " +
                       std::to_string(s.outputs.size()) + " outputs");
    if (ed.bytes < 0) throw GraphError("edge #" + std::to_string(e) + " has negative bytes");
  }
  // CSR, edges in insertion order within each op.
  out_ptr_.assign(n + 1, 0);
  in_ptr_.assign(n + 1, 0);
  for (const Edge& ed : edges_) {
    ++out_ptr_[ed.src + 1];
    ++in_ptr_[ed.dst + 1];
  }
  for (int32_t i = 0; i < n; ++i) {
    out_ptr_[i + 1] += out_ptr_[i];
    in_ptr_[i + 1] += in_ptr_[i];
  }
  out_eids_.assign(edges_.size(), 0);
  in_eids_.assign(edges_.size(), 0);
  {
    std::vector<int64_t> o(out_ptr_.begin(), out_ptr_.end() - 1), in(in_ptr_.begin(), in_ptr_.end() - 1);
    for (size_t e = 0; e < edges_.size(); ++e) {
      out_eids_[o[edges_[e].src]++] = static_cast<int64_t>(e);
      in_eids_[in[edges_[e].dst]++] = static_cast<int64_t>(e);
    }
  }
  // Kahn's algorithm with a min-heap on the dense index: deterministic order.
  std::vector<int64_t> indeg(n);
  for (int32_t i = 0; i < n; ++i) indeg[i] = in_ptr_[i + 1] - in_ptr_[i];
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (int32_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(i);
  topo_.clear();
  topo_.reserve(n);
  while (!ready.empty()) {
    int32_t u = ready.top();
    ready.pop();
    topo_.push_back(u);
    for (int64_t k = out_ptr_[u]; k < out_ptr_[u + 1]; ++k) {
      int32_t v = edges_[out_eids_[k]].dst;
      if (--indeg[v] == 0) ready.push(v);
    }
  }
  if (static_cast<int32_t>(topo_.size()) != n) {
    std::string where;
    for (int32_t i = 0; i < n; ++i)
      if (indeg[i] > 0) {
        where = ops_[i].name;
        break;
      }
    throw GraphError("graph '" + name + "' has a cycle (through op '" + where + "'); expected a DAG");
  }
  finalized_ = true;
}

GraphSummary Graph::summary() const {
  GraphSummary s;
  s.ops = num_ops();
  s.edges = num_edges();
  std::vector<std::string> groups;
  for (const Op& o : ops_) {
    s.flops += o.flops;
    switch (o.phase) {
      case Phase::forward: s.flops_forward += o.flops; ++s.ops_forward; break;
      case Phase::backward: s.flops_backward += o.flops; ++s.ops_backward; break;
      case Phase::update: s.flops_update += o.flops; ++s.ops_update; break;
    }
    s.parameter_bytes += o.param_bytes;
    s.activation_bytes += o.output_bytes();
    s.temp_bytes += o.temp_bytes;
    if (!o.colocation.empty()) groups.push_back(o.colocation);
  }
  std::sort(groups.begin(), groups.end());
  s.colocation_groups = std::unique(groups.begin(), groups.end()) - groups.begin();
  if (finalized_) {
    std::vector<int64_t> depth(ops_.size(), 1);
    for (int32_t u : topo_) {
      for (int64_t k = out_ptr_[u]; k < out_ptr_[u + 1]; ++k) {
        int32_t v = edges_[out_eids_[k]].dst;
        depth[v] = std::max(depth[v], depth[u] + 1);
      }
      s.depth = std::max(s.depth, depth[u]);
    }
  }
  return s;
}

}  // namespace gdp
