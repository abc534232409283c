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
  const auto& ops = graph.ops();
  const auto& edges = graph.edges();

  // Ops and their output tensors.
  topo_pos.assign(num_ops, 0);
  const auto& topo = graph.topo_order();
  topo_order.assign(topo.begin(), topo.end());
  for (int32_t k = 0; k < num_ops; ++k) topo_pos[topo[k]] = k;
  tensor_ptr.assign(num_ops + 1, 0);
  std::vector<int64_t> alloc_bytes(num_ops, 0), temp_bytes(num_ops, 0);
  param_bytes.assign(num_ops, 0);
  for (int32_t i = 0; i < num_ops; ++i) {
    const Op& op = ops[i];
    tensor_ptr[i + 1] = tensor_ptr[i] + static_cast<int32_t>(op.outputs.size());
    temp_bytes[i] = op.temp_bytes;
    if (op.temp_bytes < 0 || op.param_bytes < 0 || op.optimizer_bytes < 0 || op.output_bytes() < 0)
      throw InputError("simulator: op '" + op.name + "' has negative bytes");
    // Resident for the whole step: the weights and their optimizer state. (Sums are bounded:
    // Graph::finalize() caps the graph's bytes at kMaxGraphBytes.)
    param_bytes[i] = op.resident_bytes();
    alloc_bytes[i] = op.output_bytes() + op.temp_bytes;
  }
  num_tensors = tensor_ptr[num_ops];
  tensor_op.assign(num_tensors, 0);
  std::vector<int64_t> tensor_bytes(num_tensors, 0), xfer_bytes(num_tensors, 0);
  for (int32_t i = 0; i < num_ops; ++i) {
    for (int32_t k = tensor_ptr[i]; k < tensor_ptr[i + 1]; ++k) {
      tensor_op[k] = i;
      tensor_bytes[k] = ops[i].outputs[k - tensor_ptr[i]].bytes;
    }
  }

  // Consumer edges grouped by tensor (stable in edge order).
  std::vector<int32_t> cons_ptr(num_tensors + 1, 0);
  for (const Edge& e : edges) cons_ptr[tensor_ptr[e.src] + e.src_output + 1]++;
  for (int32_t t = 0; t < num_tensors; ++t) cons_ptr[t + 1] += cons_ptr[t];
  cons.assign(num_edges, ConsEdge{0, 0});
  std::vector<int32_t> cons_of_edge(num_edges, 0), fill(cons_ptr.begin(), cons_ptr.end() - 1);
  for (int32_t e = 0; e < num_edges; ++e) {
    const Edge& ed = edges[e];
    if (ed.bytes < 0)
      throw InputError("simulator: an edge into op '" + ops[ed.dst].name + "' has negative bytes");
    int32_t t = tensor_ptr[ed.src] + ed.src_output;
    int32_t slot = fill[t]++;
    cons[slot] = ConsEdge{ed.dst, t};
    cons_of_edge[e] = slot;
    xfer_bytes[t] = std::max(xfer_bytes[t], ed.bytes);
  }

  out_ptr.assign(num_ops + 1, 0);
  for (int32_t i = 0; i <= num_ops; ++i) out_ptr[i] = cons_ptr[tensor_ptr[i]];

  // Input slots per op, in the graph's in-edge order.
  in_degree.assign(num_ops, 0);
  std::vector<int32_t> in_ptr(num_ops + 1, 0), in_tensor(num_edges, 0), in_edge(num_edges, 0);
  const auto& iptr = graph.in_ptr();
  const auto& ieids = graph.in_edge_ids();
  for (int32_t i = 0; i < num_ops; ++i) {
    in_ptr[i + 1] = in_ptr[i] + static_cast<int32_t>(iptr[i + 1] - iptr[i]);
    in_degree[i] = in_ptr[i + 1] - in_ptr[i];
    int32_t s = in_ptr[i];
    for (int64_t k = iptr[i]; k < iptr[i + 1]; ++k, ++s) {
      int32_t e = static_cast<int32_t>(ieids[k]);
      in_tensor[s] = tensor_ptr[edges[e].src] + edges[e].src_output;
      in_edge[s] = cons_of_edge[e];
    }
  }

  // Colocation groups: every op points at the first op of its group in topological order.
  coloc_first.assign(num_ops, -1);
  std::unordered_map<std::string, int32_t> first;
  for (int32_t i : topo) {
    const std::string& grp = ops[i].colocation;
    if (grp.empty()) continue;
    auto it = first.emplace(grp, i).first;
    coloc_first[i] = it->second;
  }

  for (int32_t i = 0; i < num_ops; ++i) {
    if (coloc_first[i] >= 0) coloc_ops.push_back(i);
    if (in_degree[i] == 0) sources.push_back(i);
  }

  // Op time table per class of identical devices.
  dev_class.assign(num_devices, 0);
  std::vector<int32_t> class_rep;
  for (int32_t d = 0; d < num_devices; ++d) {
    int32_t cls = -1;
    for (size_t k = 0; k < class_rep.size(); ++k)
      if (same_cost_device(cluster.devices[class_rep[k]], cluster.devices[d]))
        cls = static_cast<int32_t>(k);
    if (cls < 0) {
      cls = static_cast<int32_t>(class_rep.size());
      class_rep.push_back(d);
    }
    dev_class[d] = cls;
  }
  op_time.assign(class_rep.size() * static_cast<size_t>(num_ops), 0.0);
  for (size_t k = 0; k < class_rep.size(); ++k) {
    const DeviceSpec& dev = cluster.devices[class_rep[k]];
    for (int32_t i = 0; i < num_ops; ++i) {
      double t = cost.op_time_s(ops[i], dev);
      if (!std::isfinite(t) || t < 0) {
        std::ostringstream os;
        os << "simulator: op '" << ops[i].name << "' has time " << t << " s on device kind '"
           << dev.kind << "' (expected a finite, non-negative time)";
        throw InputError(os.str());
      }
      op_time[k * num_ops + i] = t;
    }
  }
  num_classes = static_cast<int32_t>(class_rep.size());

  // Bounds for the fast paths. The bytes an op can add to its device: resident, outputs and
  // temporaries, and each input slot's tensor (a transfer to the device holds at most that).
  mem_bound.assign(num_ops, 0);
  mem_bound_total = 0;
  for (int32_t i = 0; i < num_ops; ++i) {
    int64_t b = param_bytes[i] + alloc_bytes[i];
    for (int32_t s = in_ptr[i]; s < in_ptr[i + 1]; ++s) b += xfer_bytes[in_tensor[s]];
    mem_bound[i] = b;
    mem_bound_total += b;
  }
  // Longest chain after each op, at the fastest class (reverse topological order).
  tail_s.assign(num_ops, 0.0);
  for (int32_t k = num_ops - 1; k >= 0; --k) {
    const int32_t i = topo[k];
    double best = 0;
    for (int32_t e = cons_ptr[tensor_ptr[i]]; e < cons_ptr[tensor_ptr[i + 1]]; ++e) {
      const int32_t c = cons[e].op;
      double tc = op_time[c];
      for (int32_t cls = 1; cls < num_classes; ++cls)
        tc = std::min(tc, op_time[static_cast<size_t>(cls) * num_ops + c]);
      best = std::max(best, tc + tail_s[c]);
    }
    tail_s[i] = best;
  }

  capacity_bytes.assign(num_devices, 0);
  for (int32_t d = 0; d < num_devices; ++d) capacity_bytes[d] = cluster.devices[d].memory_bytes;

  // Packed copies for the event loop.
  op_info.resize(num_ops);
  for (int32_t i = 0; i < num_ops; ++i)
    op_info[i] = OpInfo{in_ptr[i],         in_ptr[i + 1],  tensor_ptr[i],
                        tensor_ptr[i + 1], alloc_bytes[i], temp_bytes[i]};
  in_slot.resize(num_edges);
  for (int32_t s = 0; s < num_edges; ++s) in_slot[s] = InSlot{in_tensor[s], in_edge[s]};
  tensor_info.resize(num_tensors);
  for (int32_t t = 0; t < num_tensors; ++t)
    tensor_info[t] = TensorInfo{cons_ptr[t], cons_ptr[t + 1], tensor_bytes[t], xfer_bytes[t]};

  // Links and routes.
  link_bw_Bps.assign(num_links, 0);
  link_latency_s.assign(num_links, 0);
  for (int32_t l = 0; l < num_links; ++l) {
    const LinkSpec& ls = cluster.links[l / 2];
    link_bw_Bps[l] = ls.bandwidth_Bps;
    link_latency_s[l] = ls.latency_s;
  }
  route_ptr.assign(static_cast<size_t>(num_devices) * num_devices + 1, 0);
  for (int32_t s = 0; s < num_devices; ++s) {
    for (int32_t d = 0; d < num_devices; ++d) {
      size_t k = static_cast<size_t>(s) * num_devices + d;
      const auto& r = cluster.route(s, d);
      if (s != d && r.empty())
        throw InputError("simulator: no route from " + cluster.devices[s].name + " to " +
                         cluster.devices[d].name);
      route_link.insert(route_link.end(), r.begin(), r.end());
      route_ptr[k + 1] = static_cast<int32_t>(route_link.size());
    }
  }
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
