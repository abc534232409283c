// Graph construction, validation (edges, names, cycles), CSR adjacency and topological order.
#include "core/graph.h"

#include <algorithm>
#include <queue>
#include <string_view>
#include <unordered_set>

#include "core/error.h"

namespace gdp {

namespace {
constexpr const char* kDTypeNames[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "bool"};
constexpr int64_t kDTypeSizes[] = {4, 2, 2, 8, 4, 8, 1, 1};
constexpr const char* kPhaseNames[] = {"forward", "backward", "update"};
constexpr const char* kOptimizerNames[] = {"sgd", "momentum", "adam"};
constexpr int64_t kOptimizerBuffers[] = {0, 1, 2};

// a + b for 0 <= a <= kMaxGraphBytes and b >= 0; false when the sum would exceed the bound.
bool add_bounded(int64_t& a, int64_t b) {
  if (b > kMaxGraphBytes - a) return false;
  a += b;
  return true;
}

int64_t add_saturated(int64_t a, int64_t b) {
  int64_t s;
  return __builtin_add_overflow(a, b, &s) ? (b < 0 ? INT64_MIN : INT64_MAX) : s;
}
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

const char* optimizer_name(Optimizer o) { return kOptimizerNames[static_cast<int>(o)]; }
int64_t optimizer_state_buffers(Optimizer o) { return kOptimizerBuffers[static_cast<int>(o)]; }

bool parse_optimizer(const std::string& s, Optimizer* out) {
  for (int i = 0; i < 3; ++i)
    if (s == kOptimizerNames[i]) {
      *out = static_cast<Optimizer>(i);
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
    if (!by_name_.emplace(o.name, i).second) throw GraphError("duplicate op name '" + o.name + "'");
  }
  for (size_t e = 0; e < edges_.size(); ++e) {
    const Edge& ed = edges_[e];
    if (ed.src < 0 || ed.src >= n || ed.dst < 0 || ed.dst >= n)
      throw GraphError("edge #" + std::to_string(e) + " refers to a missing op");
    if (ed.src == ed.dst)
      throw GraphError("edge #" + std::to_string(e) + " is a self-loop on op '" +
                       ops_[ed.src].name + "'");
    const Op& s = ops_[ed.src];
    if (ed.src_output < 0 || ed.src_output >= static_cast<int32_t>(s.outputs.size()))
      throw GraphError("edge #" + std::to_string(e) + " from op '" + s.name + "' uses output " +
                       std::to_string(ed.src_output) + " but the op has " +
                       std::to_string(s.outputs.size()) + " outputs");
    if (ed.bytes < 0) throw GraphError("edge #" + std::to_string(e) + " has negative bytes");
  }
  check_sizes();
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
    std::vector<int64_t> o(out_ptr_.begin(), out_ptr_.end() - 1),
        in(in_ptr_.begin(), in_ptr_.end() - 1);
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
    throw GraphError("graph '" + name + "' has a cycle (through op '" + where +
                     "'); expected a DAG");
  }
  finalized_ = true;
}

void Graph::check_sizes() const {
  // Every byte count >= 0; the bytes of all ops (resident weights and optimizer state,
  // outputs, temporaries) <= kMaxGraphBytes; so are the bytes the edges can carry, each edge
  // counted at its tensor's transfer size (the largest edge of that tensor, as the simulator
  // sends it). A device then holds at most the first sum plus the second, a link carries at
  // most the second: both below 2^61.
  const std::string bound = " bytes (2^60 = 1 EiB)";
  int64_t total = 0;
  std::vector<int64_t> first_tensor(ops_.size() + 1, 0);
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& o = ops_[i];
    auto field = [&](int64_t v, const std::string& what) {
      if (v < 0)
        throw GraphError("graph '" + name + "': op '" + o.name + "' has negative " + what + " (" +
                         std::to_string(v) + "); expected bytes >= 0");
      if (!add_bounded(total, v))
        throw GraphError(
            "graph '" + name + "': the bytes of its ops (weights + optimizer state + " +
            "outputs + temporaries, summed over all ops) exceed " + std::to_string(kMaxGraphBytes) +
            bound + " at op '" + o.name + "' (" + what + "); expected a total of at most " +
            std::to_string(kMaxGraphBytes) + bound);
    };
    field(o.param_bytes, "param_bytes");
    field(o.optimizer_bytes, "optimizer_bytes");
    field(o.temp_bytes, "temp_bytes");
    for (size_t k = 0; k < o.outputs.size(); ++k)
      field(o.outputs[k].bytes, "outputs[" + std::to_string(k) + "].bytes");
    first_tensor[i + 1] = first_tensor[i] + static_cast<int64_t>(o.outputs.size());
  }
  std::vector<int64_t> xfer(static_cast<size_t>(first_tensor.back()), 0);
  for (const Edge& ed : edges_) {
    int64_t& x = xfer[first_tensor[ed.src] + ed.src_output];
    x = std::max(x, ed.bytes);
  }
  int64_t carried = 0;
  for (const Edge& ed : edges_)
    if (!add_bounded(carried, xfer[first_tensor[ed.src] + ed.src_output]))
      throw GraphError("graph '" + name + "': the bytes its edges carry (each edge at its " +
                       "tensor's transfer size) exceed " + std::to_string(kMaxGraphBytes) + bound +
                       " at an edge from op '" + ops_[ed.src].name + "'; expected at most " +
                       std::to_string(kMaxGraphBytes) + bound);
}

GraphSummary Graph::summary() const {
  GraphSummary s;
  s.ops = num_ops();
  s.edges = num_edges();
  std::unordered_set<std::string_view> groups;  // linear in the ops (was a sort)
  for (const Op& o : ops_) {
    s.flops += o.flops;
    switch (o.phase) {
      case Phase::forward:
        s.flops_forward += o.flops;
        ++s.ops_forward;
        break;
      case Phase::backward:
        s.flops_backward += o.flops;
        ++s.ops_backward;
        break;
      case Phase::update:
        s.flops_update += o.flops;
        ++s.ops_update;
        break;
    }
    // Saturating: a finalized graph's sums are bounded (kMaxGraphBytes), others may not be.
    s.parameters = add_saturated(s.parameters, o.parameters());
    s.parameter_bytes = add_saturated(s.parameter_bytes, o.param_bytes);
    s.optimizer_bytes = add_saturated(s.optimizer_bytes, o.optimizer_bytes);
    for (const auto& t : o.outputs) s.activation_bytes = add_saturated(s.activation_bytes, t.bytes);
    s.temp_bytes = add_saturated(s.temp_bytes, o.temp_bytes);
    if (!o.colocation.empty()) groups.insert(o.colocation);
  }
  s.colocation_groups = static_cast<int64_t>(groups.size());
  if (finalized_)
    for (int32_t l : levels()) s.depth = std::max<int64_t>(s.depth, l + 1);
  return s;
}

std::vector<int32_t> Graph::levels() const {
  std::vector<int32_t> level(ops_.size(), 0);
  for (int32_t u : topo_)
    for (int64_t k = out_ptr_[u]; k < out_ptr_[u + 1]; ++k) {
      int32_t& l = level[edges_[out_eids_[k]].dst];
      l = std::max(l, level[u] + 1);
    }
  return level;
}

}  // namespace gdp
