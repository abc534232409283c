// The simulator's internal data: SimProgram, the graph and cluster flattened once into
// index arrays (CSR consumer lists, op time table, routes). SimState is in sim_state.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "sim/cost_model.h"
#include "sim/sim_state.h"
#include "sim/simulator.h"

namespace gdp {

// The fields the event loop reads together, packed so that one cache line brings them in.
struct OpInfo {
  int32_t in_begin, in_end;  // input slots [in_begin, in_end) in SimProgram::in_slot
  int32_t t_begin, t_end;    // output tensors [t_begin, t_end)
  int64_t alloc_bytes;       // outputs + temporaries, allocated at start
  int64_t temp_bytes;        // freed at the op's end
};
struct InSlot {
  int32_t tensor;  // tensor read
  int32_t edge;    // its consumer-edge id
};
// A consumer edge: the op it feeds and the tensor it reads (edges are grouped by tensor, and
// tensors by producing op, so an op's consumer edges are one contiguous range).
struct ConsEdge {
  int32_t op;
  int32_t tensor;
};
struct TensorInfo {
  int32_t cons_begin, cons_end;  // consumer edges [cons_begin, cons_end)
  int64_t bytes;                 // allocated on the producer's device
  int64_t xfer_bytes;            // moved by a transfer and held by the receiver
};

class SimProgram {
 public:
  SimProgram(const Graph& g, const Cluster& c, const CostModel& cost, const SimOptions& opt);

  Graph graph;
  Cluster cluster;
  SimOptions opt;

  int32_t num_ops = 0, num_devices = 0, num_links = 0;  // links: directed
  int32_t num_tensors = 0, num_edges = 0;

  // Ops (dense index). The construction-only arrays (input slots, per-tensor bytes and
  // consumer offsets) live in the packed op_info / in_slot / tensor_info below.
  std::vector<int32_t> topo_pos;     // (num_ops) position in Graph::topo_order()
  std::vector<int32_t> topo_order;   // (num_ops) op at each topological position
  std::vector<int32_t> in_degree;    // (num_ops) number of input edges
  std::vector<int32_t> tensor_ptr;   // (num_ops+1) output tensors of op i: [ptr[i], ptr[i+1])
  std::vector<int64_t> param_bytes;  // (num_ops) resident on the op's device
  std::vector<int32_t> coloc_first;  // (num_ops) first op (topological) of its group; -1 none
  std::vector<int32_t> coloc_ops;    // the ops with coloc_first >= 0, by index
  std::vector<int32_t> sources;      // the ops without inputs, by index

  // Tensors (one per op output) and their consumer edges, grouped by tensor.
  std::vector<int32_t> tensor_op;  // (num_tensors) producing op
  std::vector<ConsEdge> cons;      // (num_edges) consuming op and tensor of each consumer edge
  std::vector<int32_t> out_ptr;    // (num_ops+1) consumer edges of op i: [ptr[i], ptr[i+1])

  // Costs: op time of op i on device d = op_time[dev_class[d] * num_ops + i].
  std::vector<int32_t> dev_class;       // (num_devices)
  std::vector<double> op_time;          // (classes * num_ops) seconds
  std::vector<int64_t> capacity_bytes;  // (num_devices); <= 0 = unlimited

  // Links and routes.
  std::vector<double> link_bw_Bps;     // (num_links)
  std::vector<double> link_latency_s;  // (num_links)
  std::vector<int32_t> route_ptr;      // (num_devices^2+1) route s->d: [ptr[s*D+d], ptr[s*D+d+1])
  std::vector<int32_t> route_link;     // directed link ids

  // Bounds for the step_time fast paths (sim/simulator.cpp):
  // mem_bound[i]: the most bytes op i can add to its device over a step (its resident bytes,
  // outputs and temporaries, and every input tensor received by a transfer), so that a device
  // whose ops' sum is within its capacity cannot run out of memory;
  // tail_s[i]: the longest chain of op times after op i to the end of the graph, each op at
  // its fastest device class (a lower bound on the time from op i's end to the step's end).
  std::vector<int64_t> mem_bound;  // (num_ops)
  int64_t mem_bound_total = 0;     // sum of mem_bound (bounded: Graph::finalize)
  std::vector<double> tail_s;      // (num_ops)
  int32_t num_classes = 1;

  // The same data packed for the event loop (built from the arrays above).
  std::vector<OpInfo> op_info;          // (num_ops)
  std::vector<InSlot> in_slot;          // (num_edges)
  std::vector<TensorInfo> tensor_info;  // (num_tensors)

  double time_of(int32_t op, int32_t dev) const {
    return op_time[static_cast<size_t>(dev_class[dev]) * num_ops + op];
  }
};

}  // namespace gdp
