// SimState: the preallocated scratch of one simulation (queues, counters, memory), reused
// across placements. Complete here so that callers can own one (Simulator::make_state).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/event_tree.h"
#include "sim/min_heap.h"

namespace gdp {

class SimProgram;

// One in-flight or delivered transfer of a tensor to one destination device.
struct Xfer {
  int32_t tensor = 0;
  int32_t dst = 0;                         // destination device
  int32_t src_dev = 0;                     // sending device
  int32_t hop = 0;                         // index of the current hop in the route
  int32_t route_begin = 0, route_end = 0;  // into SimProgram::route_link
  int32_t refs = 0;                        // consumers on dst not yet finished (after arrival)
  int32_t next = -1;                       // next transfer in the FIFO of the link it is on
  int32_t pred_op = -1;  // op whose end determined this transfer's timing (critical path)
  double arrive_s = 0;   // event time on the current hop: the head reaches the next node
                         // (intermediate hop) or the whole tensor arrives (last hop)
  double tail_s = 0;     // when the tail has reached the current hop's start node
};

struct ReadyEntry {
  double key;   // ready time (fifo) or topological position (topo_priority)
  int32_t tie;  // topological position
  int32_t op;
  bool operator<(const ReadyEntry& o) const { return key < o.key || (key == o.key && tie < o.tie); }
};

class SimState {
 public:
  explicit SimState(const SimProgram& p);

  // Ops.
  std::vector<int32_t> pending;  // inputs not yet available on the op's device
  std::vector<double> ready_s;   // when the op became ready
  std::vector<double> start_s, end_s;
  std::vector<int32_t> pred;  // critical-path predecessor op, -1 none
  // Tensors and edges.
  std::vector<int32_t> src_ref;    // local consumers + transfers not yet done, per tensor
  std::vector<int32_t> edge_xfer;  // transfer feeding a consumer edge, -1 when local
  std::vector<Xfer> xfers;         // pool, capacity num_edges
  int32_t num_xfers = 0;
  // Devices.
  std::vector<MinHeap<ReadyEntry>> ready;  // topo_priority
  // fifo: device d's queue is q[q_head[d], q_tail[d]) (topological positions), inside a region
  // of q as long as its op count; the entries from q_inst[d] on joined at the current instant
  // and are kept sorted.
  std::vector<int32_t> q;                       // (num_ops)
  std::vector<int32_t> q_head, q_tail, q_inst;  // (num_devices)
  std::vector<int32_t> running;                 // op running on the device, -1 idle
  std::vector<int32_t> last_op;                 // last op that ended on the device
  std::vector<int64_t> mem_bytes, peak_bytes, resident_bytes;
  std::vector<double> busy_s;
  std::vector<int32_t> dev_ops;
  std::vector<int32_t> stamp, stamp_xfer;  // per-tensor dedupe of transfers per destination
  std::vector<int32_t> dirty;              // devices whose queue changed at the current time
  int32_t dirty_n = 0;                     // entries of dirty in use (its size is num_devices)
  std::vector<int32_t> is_dirty;           // (int, not char: a char store aliases everything)
  // Links.
  std::vector<double> link_free_s;  // when the link finishes serializing its last transfer
  std::vector<int32_t> link_head, link_tail, link_last;
  std::vector<int64_t> link_bytes;
  // Events: one calendar for the devices (op ends), one for the links (head arrivals); at
  // equal times devices go first, devices by index, links by id. The devices' calendar scans
  // (up to 16), the links' is a tree: a scan of 56 links per event measured 1.8x slower on
  // round-robin placements (sim/event_tree.h).
  Calendar dev_events;
  EventTree link_events;
  std::vector<int64_t> limit_bytes;  // (num_devices) capacity, or INT64_MAX when unchecked
  std::vector<int64_t> bound_bytes;  // (num_devices) the most its ops can hold (mem_bound)
  std::vector<int32_t> counts;       // (4 num_devices) op counts, four interleaved partial sums
  std::vector<double> work_left_s;   // (num_devices) op time not yet started (bounded runs)
  // Out of memory (first occurrence).
  bool oom = false;
  int32_t oom_device = -1;
  double oom_time_s = 0;
  int64_t oom_bytes = 0;
};

}  // namespace gdp
