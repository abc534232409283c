// Builds the SimProgram (flat arrays from a Graph, a Cluster and a CostModel) and sizes a
// SimState so that simulations allocate nothing after the first call.
#include "sim/sim_program.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "core/error.h"

namespace gdp {

namespace {

bool same_cost_device(const DeviceSpec& a, const DeviceSpec& b) {
  return a.kind == b.kind && a.peak_fp32_flops == b.peak_fp32_flops &&
         a.peak_fp16_flops == b.peak_fp16_flops && a.mem_bandwidth_Bps == b.mem_bandwidth_Bps &&
         a.launch_overhead_s == b.launch_overhead_s;
}

}  // namespace

namespace {

// What the builders below hand each other before it is packed into the program.
struct Scratch {
  std::vector<int64_t> alloc_bytes, temp_bytes;     // (ops) outputs + temporaries; temporaries
  std::vector<int64_t> tensor_bytes, xfer_bytes;    // (tensors) size; largest edge's bytes
  std::vector<int32_t> cons_ptr, cons_of_edge;      // consumers per tensor; edge -> its slot
  std::vector<int32_t> in_ptr, in_tensor, in_edge;  // input slots per op
  std::vector<int32_t> class_rep;                   // a device of each cost class
};

// Ops and their output tensors.
void build_tensors(SimProgram& p, Scratch& x) {
  const auto& ops = p.graph.ops();
  p.topo_pos.assign(p.num_ops, 0);
  const auto& topo = p.graph.topo_order();
  p.topo_order.assign(topo.begin(), topo.end());
  for (int32_t k = 0; k < p.num_ops; ++k) p.topo_pos[topo[k]] = k;
  p.tensor_ptr.assign(p.num_ops + 1, 0);
  x.alloc_bytes.assign(p.num_ops, 0);
  x.temp_bytes.assign(p.num_ops, 0);
  p.param_bytes.assign(p.num_ops, 0);
  for (int32_t i = 0; i < p.num_ops; ++i) {
    const Op& op = ops[i];
    p.tensor_ptr[i + 1] = p.tensor_ptr[i] + static_cast<int32_t>(op.outputs.size());
    x.temp_bytes[i] = op.temp_bytes;
    if (op.temp_bytes < 0 || op.param_bytes < 0 || op.optimizer_bytes < 0 || op.output_bytes() < 0)
      throw InputError("simulator: op '" + op.name + "' has negative bytes");
    // Resident for the whole step: the weights and their optimizer state. (Sums are bounded:
    // Graph::finalize() caps the graph's bytes at kMaxGraphBytes.)
    p.param_bytes[i] = op.resident_bytes();
    x.alloc_bytes[i] = op.output_bytes() + op.temp_bytes;
  }
  p.num_tensors = p.tensor_ptr[p.num_ops];
  p.tensor_op.assign(p.num_tensors, 0);
  x.tensor_bytes.assign(p.num_tensors, 0);
  x.xfer_bytes.assign(p.num_tensors, 0);
  for (int32_t i = 0; i < p.num_ops; ++i) {
    for (int32_t k = p.tensor_ptr[i]; k < p.tensor_ptr[i + 1]; ++k) {
      p.tensor_op[k] = i;
      x.tensor_bytes[k] = ops[i].outputs[k - p.tensor_ptr[i]].bytes;
    }
  }
}

// Consumer edges grouped by tensor (stable in edge order), and each op's input slots in the
// graph's in-edge order.
void build_edges(SimProgram& p, Scratch& x) {
  const auto& ops = p.graph.ops();
  const auto& edges = p.graph.edges();
  x.cons_ptr.assign(p.num_tensors + 1, 0);
  for (const Edge& e : edges) x.cons_ptr[p.tensor_ptr[e.src] + e.src_output + 1]++;
  for (int32_t t = 0; t < p.num_tensors; ++t) x.cons_ptr[t + 1] += x.cons_ptr[t];
  p.cons.assign(p.num_edges, ConsEdge{0, 0});
  x.cons_of_edge.assign(p.num_edges, 0);
  std::vector<int32_t> fill(x.cons_ptr.begin(), x.cons_ptr.end() - 1);
  for (int32_t e = 0; e < p.num_edges; ++e) {
    const Edge& ed = edges[e];
    if (ed.bytes < 0)
      throw InputError("simulator: an edge into op '" + ops[ed.dst].name + "' has negative bytes");
    int32_t t = p.tensor_ptr[ed.src] + ed.src_output;
    int32_t slot = fill[t]++;
    p.cons[slot] = ConsEdge{ed.dst, t};
    x.cons_of_edge[e] = slot;
    x.xfer_bytes[t] = std::max(x.xfer_bytes[t], ed.bytes);
  }
  p.out_ptr.assign(p.num_ops + 1, 0);
  for (int32_t i = 0; i <= p.num_ops; ++i) p.out_ptr[i] = x.cons_ptr[p.tensor_ptr[i]];

  p.in_degree.assign(p.num_ops, 0);
  x.in_ptr.assign(p.num_ops + 1, 0);
  x.in_tensor.assign(p.num_edges, 0);
  x.in_edge.assign(p.num_edges, 0);
  const auto& iptr = p.graph.in_ptr();
  const auto& ieids = p.graph.in_edge_ids();
  for (int32_t i = 0; i < p.num_ops; ++i) {
    x.in_ptr[i + 1] = x.in_ptr[i] + static_cast<int32_t>(iptr[i + 1] - iptr[i]);
    p.in_degree[i] = x.in_ptr[i + 1] - x.in_ptr[i];
    int32_t s = x.in_ptr[i];
    for (int64_t k = iptr[i]; k < iptr[i + 1]; ++k, ++s) {
      int32_t e = static_cast<int32_t>(ieids[k]);
      x.in_tensor[s] = p.tensor_ptr[edges[e].src] + edges[e].src_output;
      x.in_edge[s] = x.cons_of_edge[e];
    }
  }
}

// Colocation groups: every op points at the first op of its group in topological order.
void build_colocation(SimProgram& p) {
  const auto& ops = p.graph.ops();
  p.coloc_first.assign(p.num_ops, -1);
  std::unordered_map<std::string, int32_t> first;
  for (int32_t i : p.graph.topo_order()) {
    const std::string& grp = ops[i].colocation;
    if (grp.empty()) continue;
    auto it = first.emplace(grp, i).first;
    p.coloc_first[i] = it->second;
  }
  for (int32_t i = 0; i < p.num_ops; ++i) {
    if (p.coloc_first[i] >= 0) p.coloc_ops.push_back(i);
    if (p.in_degree[i] == 0) p.sources.push_back(i);
  }
}

// Op time table per class of identical devices.
void build_op_times(SimProgram& p, const CostModel& cost, Scratch& x) {
  const auto& ops = p.graph.ops();
  p.dev_class.assign(p.num_devices, 0);
  for (int32_t d = 0; d < p.num_devices; ++d) {
    int32_t cls = -1;
    for (size_t k = 0; k < x.class_rep.size(); ++k)
      if (same_cost_device(p.cluster.devices[x.class_rep[k]], p.cluster.devices[d]))
        cls = static_cast<int32_t>(k);
    if (cls < 0) {
      cls = static_cast<int32_t>(x.class_rep.size());
      x.class_rep.push_back(d);
    }
    p.dev_class[d] = cls;
  }
  p.op_time.assign(x.class_rep.size() * static_cast<size_t>(p.num_ops), 0.0);
  for (size_t k = 0; k < x.class_rep.size(); ++k) {
    const DeviceSpec& dev = p.cluster.devices[x.class_rep[k]];
    for (int32_t i = 0; i < p.num_ops; ++i) {
      double t = cost.op_time_s(ops[i], dev);
      if (!std::isfinite(t) || t < 0) {
        std::ostringstream os;
        os << "simulator: op '" << ops[i].name << "' has time " << t << " s on device kind '"
           << dev.kind << "' (expected a finite, non-negative time)";
        throw InputError(os.str());
      }
      p.op_time[k * p.num_ops + i] = t;
    }
  }
  p.num_classes = static_cast<int32_t>(x.class_rep.size());
}

// Bounds for the fast paths. The bytes an op can add to its device: resident, outputs and
// temporaries, and each input slot's tensor (a transfer to the device holds at most that).
// Then the longest chain after each op, at the fastest class (reverse topological order).
void build_bounds(SimProgram& p, const Scratch& x) {
  p.mem_bound.assign(p.num_ops, 0);
  p.mem_bound_total = 0;
  for (int32_t i = 0; i < p.num_ops; ++i) {
    int64_t b = p.param_bytes[i] + x.alloc_bytes[i];
    for (int32_t s = x.in_ptr[i]; s < x.in_ptr[i + 1]; ++s) b += x.xfer_bytes[x.in_tensor[s]];
    p.mem_bound[i] = b;
    p.mem_bound_total += b;
  }
  const auto& topo = p.graph.topo_order();
  p.tail_s.assign(p.num_ops, 0.0);
  for (int32_t k = p.num_ops - 1; k >= 0; --k) {
    const int32_t i = topo[k];
    double best = 0;
    for (int32_t e = x.cons_ptr[p.tensor_ptr[i]]; e < x.cons_ptr[p.tensor_ptr[i + 1]]; ++e) {
      const int32_t c = p.cons[e].op;
      double tc = p.op_time[c];
      for (int32_t cls = 1; cls < p.num_classes; ++cls)
        tc = std::min(tc, p.op_time[static_cast<size_t>(cls) * p.num_ops + c]);
      best = std::max(best, tc + p.tail_s[c]);
    }
    p.tail_s[i] = best;
  }
  p.capacity_bytes.assign(p.num_devices, 0);
  for (int32_t d = 0; d < p.num_devices; ++d)
    p.capacity_bytes[d] = p.cluster.devices[d].memory_bytes;
}

// Packed copies for the event loop.
void pack(SimProgram& p, const Scratch& x) {
  p.op_info.resize(p.num_ops);
  for (int32_t i = 0; i < p.num_ops; ++i)
    p.op_info[i] = OpInfo{x.in_ptr[i],         x.in_ptr[i + 1],  p.tensor_ptr[i],
                          p.tensor_ptr[i + 1], x.alloc_bytes[i], x.temp_bytes[i]};
  p.in_slot.resize(p.num_edges);
  for (int32_t s = 0; s < p.num_edges; ++s) p.in_slot[s] = InSlot{x.in_tensor[s], x.in_edge[s]};
  p.tensor_info.resize(p.num_tensors);
  for (int32_t t = 0; t < p.num_tensors; ++t)
    p.tensor_info[t] =
        TensorInfo{x.cons_ptr[t], x.cons_ptr[t + 1], x.tensor_bytes[t], x.xfer_bytes[t]};
}

// Links and routes.
void build_routes(SimProgram& p) {
  const Cluster& cluster = p.cluster;
  p.link_bw_Bps.assign(p.num_links, 0);
  p.link_latency_s.assign(p.num_links, 0);
  for (int32_t l = 0; l < p.num_links; ++l) {
    const LinkSpec& ls = cluster.links[l / 2];
    p.link_bw_Bps[l] = ls.bandwidth_Bps;
    p.link_latency_s[l] = ls.latency_s;
  }
  const int32_t D = p.num_devices;
  p.route_ptr.assign(static_cast<size_t>(D) * D + 1, 0);
  for (int32_t s = 0; s < D; ++s) {
    for (int32_t d = 0; d < D; ++d) {
      size_t k = static_cast<size_t>(s) * D + d;
      const auto& r = cluster.route(s, d);
      if (s != d && r.empty())
        throw InputError("simulator: no route from " + cluster.devices[s].name + " to " +
                         cluster.devices[d].name);
      p.route_link.insert(p.route_link.end(), r.begin(), r.end());
      p.route_ptr[k + 1] = static_cast<int32_t>(p.route_link.size());
    }
  }
}

}  // namespace

SimProgram::SimProgram(const Graph& g, const Cluster& c, const CostModel& cost, const SimOptions& o)
    : graph(g), cluster(c), opt(o) {
  if (!graph.finalized())
    throw InputError("simulator: graph '" + graph.name +
                     "' is not finalized (call Graph::finalize())");
  if (cluster.num_devices() == 0)
    throw InputError("simulator: cluster '" + cluster.name + "' has no devices");
  cluster.finalize();  // validates and computes the routes (idempotent)
  num_ops = graph.num_ops();
  num_devices = cluster.num_devices();
  num_links = cluster.num_directed_links();
  num_edges = static_cast<int32_t>(graph.num_edges());
  Scratch x;
  build_tensors(*this, x);
  build_edges(*this, x);
  build_colocation(*this);
  build_op_times(*this, cost, x);
  build_bounds(*this, x);
  pack(*this, x);
  build_routes(*this);
}

SimState::SimState(const SimProgram& p) {
  const int32_t N = p.num_ops, D = p.num_devices, L = p.num_links;
  pending.assign(N, 0);
  ready_s.assign(N, 0);
  start_s.assign(N, 0);
  end_s.assign(N, 0);
  pred.assign(N, -1);
  src_ref.assign(p.num_tensors, 0);
  edge_xfer.assign(p.num_edges, -1);
  xfers.assign(p.num_edges, Xfer{});
  ready.resize(D);
  q.assign(N, 0);
  q_head.assign(D, 0);
  q_tail.assign(D, 0);
  q_inst.assign(D, 0);
  for (auto& h : ready) h.reserve(64);
  running.assign(D, -1);
  last_op.assign(D, -1);
  mem_bytes.assign(D, 0);
  peak_bytes.assign(D, 0);
  resident_bytes.assign(D, 0);
  busy_s.assign(D, 0);
  dev_ops.assign(D, 0);
  stamp.assign(D, -1);
  stamp_xfer.assign(D, -1);
  dirty.assign(D, 0);
  is_dirty.assign(D, 0);
  link_free_s.assign(L, 0);
  link_head.assign(L, -1);
  link_tail.assign(L, -1);
  link_last.assign(L, -1);
  link_bytes.assign(L, 0);
  dev_events.init(D, 16);
  link_events.init(L);
  limit_bytes.assign(D, 0);
  bound_bytes.assign(D, 0);
  counts.assign(4 * static_cast<size_t>(D), 0);
  work_left_s.assign(D, 0);
}

}  // namespace gdp
