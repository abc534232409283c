// The discrete-event loop: per-device compute streams with ready queues, per-directed-link
// FIFOs (busy-until time + arrival events), memory accounting, critical path. Rules and
// their justification: docs/cost-model.md.
#include "sim/simulator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "sim/sim_program.h"

namespace gdp {

const char* queue_policy_name(QueuePolicy p) {
  return p == QueuePolicy::fifo ? "fifo" : "topo_priority";
}

const char* sim_status_name(SimStatus s) {
  switch (s) {
    case SimStatus::valid:
      return "valid";
    case SimStatus::out_of_memory:
      return "out_of_memory";
    case SimStatus::split_colocation:
      return "split_colocation";
    case SimStatus::malformed_placement:
      return "malformed_placement";
  }
  return "?";
}

bool parse_queue_policy(const std::string& s, QueuePolicy* out) {
  if (s == "fifo") {
    *out = QueuePolicy::fifo;
    return true;
  }
  if (s == "topo_priority" || s == "topo") {
    *out = QueuePolicy::topo_priority;
    return true;
  }
  return false;
}

namespace {

// Inlining the event handlers into the loop saves a call per event (measured, see
// docs/performance.md).
#define GDP_INLINE __attribute__((always_inline))

constexpr double kInf = std::numeric_limits<double>::infinity();

// Structural validity of a placement; the reason is only built when `reason` is non-null.
SimStatus check_placement(const SimProgram& P, const Placement& pl, std::string* reason) {
  if (static_cast<int64_t>(pl.device.size()) != P.num_ops) {
    if (reason)
      *reason = "placement has " + std::to_string(pl.device.size()) + " entries but graph '" +
                P.graph.name + "' has " + std::to_string(P.num_ops) + " ops";
    return SimStatus::malformed_placement;
  }
  const int32_t* dev = pl.device.data();
  for (int32_t i = 0; i < P.num_ops; ++i) {
    if (dev[i] < 0 || dev[i] >= P.num_devices) {
      if (reason)
        *reason = "op '" + P.graph.op(i).name + "' is placed on device " + std::to_string(dev[i]) +
                  " but cluster '" + P.cluster.name + "' has " + std::to_string(P.num_devices) +
                  " devices (0.." + std::to_string(P.num_devices - 1) + ")";
      return SimStatus::malformed_placement;
    }
  }
  for (int32_t i = 0; i < P.num_ops; ++i) {
    int32_t f = P.coloc_first[i];
    if (f >= 0 && dev[i] != dev[f]) {
      if (reason)
        *reason = "colocation group '" + P.graph.op(i).colocation + "' is split: op '" +
                  P.graph.op(f).name + "' on " + P.cluster.devices[dev[f]].name + ", op '" +
                  P.graph.op(i).name + "' on " + P.cluster.devices[dev[i]].name;
      return SimStatus::split_colocation;
    }
  }
  return SimStatus::valid;
}

// One simulation, as a loop object whose steps are the event handlers. Three variants:
//   Full = true (Simulator::run): everything recorded (stats, critical path, trace).
//   Full = false (step_time, the RL and search hot path): nothing recorded, stops at the first
//     out of memory and returns +inf. Within it:
//     Mem = false when no device can run out of memory (its ops' mem_bound sum fits, or memory
//       is not checked): the memory accounting is skipped. It never changes a time, so the
//       result is the same to the last bit.
//     Bounded = true (step_time with a limit): stops as soon as a lower bound on the step time
//       exceeds the limit, and returns that bound.
// At equal times devices go before links, devices by index, links by id; ops that become ready
// at one instant join their device's queue together when the instant is over.
template <bool Full, bool Mem, bool Bounded>
struct EventLoop {
  static_assert(!Full || (Mem && !Bounded), "a full run keeps the memory and runs to the end");

  const SimProgram& P;
  SimState& S;
  SimResult* R;
  const int32_t* dev;
  // Bounded: stop once a lower bound on the step time exceeds this (the limit raised by a
  // relative 1e-9, far above the rounding of the bounds' sums, so that a stop is certain).
  const double limit;
  // The arrays the loop touches most, as raw pointers (loaded once, not per access).
  int32_t* const pending = S.pending.data();
  Xfer* const xfers = S.xfers.data();
  int32_t* const running = S.running.data();
  int32_t* const q = S.q.data();
  int32_t* const q_head = S.q_head.data();
  int32_t* const q_tail = S.q_tail.data();
  int32_t* const q_inst = S.q_inst.data();
  int32_t* const is_dirty = S.is_dirty.data();
  int32_t* const dirty = S.dirty.data();
  int32_t* const stamp = S.stamp.data();
  int32_t* const stamp_xfer = S.stamp_xfer.data();
  int32_t* const link_head = S.link_head.data();
  int32_t* const link_tail = S.link_tail.data();
  double* const link_free_s = S.link_free_s.data();
  const ConsEdge* const cons = P.cons.data();
  const TensorInfo* const tensor_info = P.tensor_info.data();
  const int32_t* const topo_pos = P.topo_pos.data();
  const int32_t* const topo_order = P.topo_order.data();
  const int32_t* const out_ptr = P.out_ptr.data();
  const int32_t* const route_ptr = P.route_ptr.data();
  const int32_t* const route_link = P.route_link.data();
  const bool fifo = P.opt.queue_policy == QueuePolicy::fifo;
  const bool rec_trace = Full && P.opt.record_trace;
  int32_t ops_run = 0;
  double last_end = 0;
  double now = 0;
  bool stopped = false;  // Bounded: the limit is exceeded (the result is a lower bound)

  // Clears the state for this placement (no allocation: containers keep their capacity).
  GDP_INLINE void reset() {
    const int32_t D = P.num_devices, L = P.num_links;
    std::copy(P.in_degree.begin(), P.in_degree.end(), S.pending.begin());
    for (int32_t d = 0; d < D; ++d) {
      S.ready[d].clear();
      running[d] = -1;
      S.last_op[d] = -1;
      stamp[d] = -1;
      is_dirty[d] = 0;
      if constexpr (Full) {
        S.busy_s[d] = 0;
        S.dev_ops[d] = 0;
      }
    }
    S.dirty_n = 0;
    for (int32_t l = 0; l < L; ++l) {
      link_free_s[l] = 0;
      link_head[l] = link_tail[l] = -1;
      if constexpr (Full) {
        S.link_last[l] = -1;
        S.link_bytes[l] = 0;
      }
    }
    S.dev_events.clear();
    S.link_events.clear();
    S.num_xfers = 0;
    S.oom = false;
    S.oom_device = -1;
    if constexpr (Full) {  // so that an op that never ran shows as -1
      std::fill(S.start_s.begin(), S.start_s.end(), -1.0);
      std::fill(S.end_s.begin(), S.end_s.end(), -1.0);
    }
  }

  GDP_INLINE void alloc(int32_t d, int64_t bytes) {
    if constexpr (Mem) {
      const int64_t m = (S.mem_bytes[d] += bytes);
      if constexpr (Full) {  // the hot path needs only the capacity check
        if (m > S.peak_bytes[d]) S.peak_bytes[d] = m;
      }
      if (m > S.limit_bytes[d] && !S.oom) [[unlikely]] {
        S.oom = true;
        S.oom_device = d;
        S.oom_time_s = now;
        S.oom_bytes = m;
      }
    }
  }
  GDP_INLINE void release(int32_t d, int64_t bytes) {
    if constexpr (Mem) S.mem_bytes[d] -= bytes;
  }

  // The resident parameters (an over-full device is out of memory at t = 0).
  GDP_INLINE void resident() {
    if constexpr (Mem) {
      const int32_t N = P.num_ops, D = P.num_devices;
      for (int32_t d = 0; d < D; ++d) S.mem_bytes[d] = 0;
      for (int32_t i = 0; i < N; ++i) S.mem_bytes[dev[i]] += P.param_bytes[i];
      for (int32_t d = 0; d < D; ++d) {
        S.resident_bytes[d] = S.mem_bytes[d];
        S.peak_bytes[d] = S.mem_bytes[d];
        alloc(d, 0);
      }
    }
  }

  // A device whose queue or state changed at this instant (dispatch() looks at it). Its
  // queue's entries from q_inst on are this instant's.
  GDP_INLINE void mark_dirty(int32_t d) {
    if (!is_dirty[d]) {
      is_dirty[d] = 1;
      dirty[S.dirty_n++] = d;
      q_inst[d] = q_tail[d];
    }
  }
  // FIFO policy: a device's queue is ordered by (ready time, topological position): the ops
  // that become ready at one instant are inserted in topological order after the earlier
  // ones, and none starts before the instant is over. topo_priority: a per-device heap keyed
  // by topological position.
  GDP_INLINE void make_ready(int32_t i, [[maybe_unused]] int32_t pred_op) {
    if constexpr (Full) {
      S.ready_s[i] = now;
      S.pred[i] = pred_op;
    }
    const int32_t d = dev[i];
    // It will start later: fetch what its start reads.
    if constexpr (Mem)
      __builtin_prefetch(P.op_info.data() + i);
    else
      __builtin_prefetch(out_ptr + i);
    mark_dirty(d);
    const int32_t tp = topo_pos[i];
    if (fifo) {
      int32_t pos = q_tail[d]++;
      const int32_t first = q_inst[d];
      while (pos > first && q[pos - 1] > tp) {
        q[pos] = q[pos - 1];
        --pos;
      }
      q[pos] = tp;
    } else {
      S.ready[d].push(ReadyEntry{static_cast<double>(tp), tp, i});
    }
  }
  GDP_INLINE int32_t pop_ready(int32_t d) {
    if (!fifo) return S.ready[d].empty() ? -1 : S.ready[d].pop().op;
    if (q_head[d] == q_tail[d]) return -1;
    return topo_order[q[q_head[d]++]];
  }
  // Starts the next queued op on every idle device whose queue changed at this instant.
  GDP_INLINE void dispatch() {
    for (int32_t k = 0; k < S.dirty_n; ++k) {
      const int32_t d = dirty[k];
      is_dirty[d] = 0;
      if (running[d] >= 0) continue;
      const int32_t i = pop_ready(d);
      if (i < 0) continue;
      running[d] = i;
      ++ops_run;
      // Its end will read its consumer edges (and, with memory, input slots and output
      // tensors): fetch them now. (Pointer arithmetic: the range can be empty, at the end of
      // the array or of an empty one.)
      if constexpr (Mem) {
        const OpInfo& oi = P.op_info[i];
        alloc(d, oi.alloc_bytes);
        __builtin_prefetch(P.in_slot.data() + oi.in_begin);
        __builtin_prefetch(P.tensor_info.data() + oi.t_begin);
      }
      __builtin_prefetch(P.cons.data() + out_ptr[i]);
      const double t = P.time_of(i, d);
      const double end = now + t;
      if (end > last_end) last_end = end;
      S.dev_events.set(d, end);
      if constexpr (Bounded) {
        // The device still has to run its other ops, and op i's successors follow its end.
        const double left = (S.work_left_s[d] -= t);
        const double lb = std::max(end + left, end + P.tail_s[i]);
        if (lb > limit && !stopped) {
          stopped = true;
          last_end = std::max(last_end, lb);
        }
      }
      if constexpr (Full) {
        S.busy_s[d] += t;
        S.dev_ops[d]++;
        S.start_s[i] = now;
        S.end_s[i] = end;
        if (now > S.ready_s[i]) S.pred[i] = S.last_op[d];  // waited for the device
        if (rec_trace) R->trace.push_back(TraceEvent{P.graph.op(i).name, d, now, end});
      }
    }
    S.dirty_n = 0;
  }

  // Puts transfer x on directed link l at time `now` (FIFO: it starts when the link is free).
  GDP_INLINE void enqueue(int32_t x, int32_t l) {
    Xfer& X = xfers[x];
    double start = now;
    if (link_free_s[l] > now) {
      start = link_free_s[l];
      if constexpr (Full) X.pred_op = xfers[S.link_last[l]].pred_op;  // waited behind it
    }
    const int64_t bytes = tensor_info[X.tensor].xfer_bytes;
    // Cut-through: the link streams the tensor at its bandwidth but cannot finish before the
    // tail has arrived from the previous hop (docs/cost-model.md, "Routes").
    double done = start + static_cast<double>(bytes) / P.link_bw_Bps[l];
    if (done < X.tail_s) done = X.tail_s;
    link_free_s[l] = done;
    const double lat = P.link_latency_s[l];
    X.tail_s = done + lat;
    X.arrive_s = (X.route_begin + X.hop + 1 < X.route_end) ? start + lat : done + lat;
    X.next = -1;
    if (link_tail[l] < 0) {
      link_head[l] = link_tail[l] = x;
      S.link_events.set(l, X.arrive_s);
    } else {
      xfers[link_tail[l]].next = x;
      link_tail[l] = x;
    }
    if constexpr (Full) {
      S.link_bytes[l] += bytes;
      S.link_last[l] = x;
      if (rec_trace) {
        const int32_t src = P.tensor_op[X.tensor];
        R->trace.push_back(TraceEvent{P.graph.op(src).name + ":" +
                                          std::to_string(X.tensor - P.tensor_ptr[src]) + " -> " +
                                          P.cluster.devices[X.dst].name,
                                      P.num_devices + l, start, done});
      }
    }
  }
  // A new transfer of tensor t from device d to device dc, sent at `now` by op i.
  GDP_INLINE int32_t send(int32_t t, int32_t d, int32_t dc, [[maybe_unused]] int32_t i) {
    const int32_t x = S.num_xfers++;
    stamp[dc] = t;
    stamp_xfer[dc] = x;
    Xfer& X = xfers[x];
    X.tensor = t;
    X.dst = dc;
    X.src_dev = d;
    X.hop = 0;
    X.refs = 0;
    X.tail_s = 0;
    if constexpr (Full) X.pred_op = i;
    const size_t k = static_cast<size_t>(d) * P.num_devices + dc;
    X.route_begin = route_ptr[k];
    X.route_end = route_ptr[k + 1];
    enqueue(x, route_link[X.route_begin]);
    return x;
  }
  // Transfer x has fully arrived at its destination: its consumers there may become ready.
  GDP_INLINE void deliver(int32_t x) {
    const Xfer& X = xfers[x];
    const int32_t t = X.tensor, dc = X.dst;
    const TensorInfo& ti = tensor_info[t];
    if constexpr (Mem) {
      alloc(dc, ti.xfer_bytes);
      if (--S.src_ref[t] == 0) release(X.src_dev, ti.bytes);
    }
    // (Branch-free count: whether a consumer is on dc is unpredictable under spread placements.)
    for (int32_t e = ti.cons_begin; e < ti.cons_end; ++e) {
      const int32_t c = cons[e].op;
      const int32_t here = dev[c] == dc;
      const int32_t left = pending[c] - here;
      pending[c] = left;
      if (here & (left == 0)) make_ready(c, Full ? X.pred_op : -1);
    }
  }
  // The op running on device d ends at `now`.
  GDP_INLINE void op_end(int32_t d) {
    const int32_t i = running[d];
    running[d] = -1;
    S.last_op[d] = i;
    mark_dirty(d);
    if constexpr (!Mem) {
      // Wake local consumers; send one transfer per (tensor, remote destination device).
      for (int32_t e = out_ptr[i]; e < out_ptr[i + 1]; ++e) {
        const ConsEdge ce = cons[e];
        const int32_t dc = dev[ce.op];
        if (dc == d) {
          if (--pending[ce.op] == 0) make_ready(ce.op, i);
        } else if (stamp[dc] != ce.tensor) {
          send(ce.tensor, d, dc, i);
        }
      }
      return;
    } else {
      const OpInfo& oi = P.op_info[i];
      release(d, oi.temp_bytes);
      // Inputs: this consumer is done with its copy of each input tensor.
      for (int32_t s = oi.in_begin; s < oi.in_end; ++s) {
        const InSlot slot = P.in_slot[s];
        const int32_t x = S.edge_xfer[slot.edge];
        // Produced on this device (x < 0): the source copy's count, else the transfer's;
        // selected without a branch (local or not is unpredictable under spread placements).
        const TensorInfo& ti = tensor_info[slot.tensor];
        const bool local = x < 0;
        int32_t* const count = local ? &S.src_ref[slot.tensor] : &xfers[local ? 0 : x].refs;
        const int64_t bytes = local ? ti.bytes : ti.xfer_bytes;
        if (--*count == 0) release(d, bytes);
      }
      // Outputs: wake local consumers, send one transfer per remote destination device; the
      // source copy is held by its local consumers and its transfers.
      for (int32_t t = oi.t_begin; t < oi.t_end; ++t) {
        const TensorInfo& ti = tensor_info[t];
        int32_t refs = 0;
        for (int32_t e = ti.cons_begin; e < ti.cons_end; ++e) {
          const int32_t c = cons[e].op;
          const int32_t dc = dev[c];
          ++refs;
          if (dc == d) {
            S.edge_xfer[e] = -1;
            if (--pending[c] == 0) make_ready(c, i);
            continue;
          }
          int32_t x;
          if (stamp[dc] == t) {
            x = stamp_xfer[dc];
            --refs;  // the transfer already holds the source copy
          } else {
            x = send(t, d, dc, i);
          }
          xfers[x].refs++;
          S.edge_xfer[e] = x;
        }
        S.src_ref[t] = refs;
        if (refs == 0) release(d, ti.bytes);
      }
    }
  }
  // The head of link l's FIFO reaches the next node: on to the next hop, or delivered.
  GDP_INLINE void link_event(int32_t l) {
    const int32_t x = link_head[l];
    Xfer& X = xfers[x];
    link_head[l] = X.next;
    if (X.next < 0) {
      link_tail[l] = -1;
      S.link_events.set(l, EventTree::kNone);
    } else {
      S.link_events.set(l, xfers[X.next].arrive_s);
    }
    X.hop++;
    if (X.route_begin + X.hop < X.route_end)
      enqueue(x, route_link[X.route_begin + X.hop]);  // the head reached the next node
    else
      deliver(x);
  }

  GDP_INLINE double next_link_time() { return S.link_events.top_time(); }

  // Runs the step; returns the step time (Full: also fills *R), +inf on the hot path's first
  // out of memory, a lower bound above the limit once Bounded stops.
  double run() {
    const int32_t N = P.num_ops;
    reset();
    resident();
    if constexpr (!Full) {
      if (S.oom) return kInf;
    }
    for (int32_t i : P.sources) make_ready(i, -1);
    dispatch();
    if constexpr (!Full) {
      if (S.oom) return kInf;
      if (Bounded && stopped) return last_end;
    }
    // Next event: the earlier of the two calendars' roots, devices first at equal times.
    for (;;) {
      const double td = S.dev_events.top_time(), tl = next_link_time();
      if (td <= tl) {
        if (td == EventTree::kNone) break;
        now = td;
        const int32_t d = S.dev_events.top_source();
        S.dev_events.set(d, EventTree::kNone);
        op_end(d);
      } else {
        now = tl;
        link_event(S.link_events.top_source());
      }
      if (std::min(S.dev_events.top_time(), next_link_time()) != now) dispatch();
      if constexpr (!Full) {
        if (S.oom) return kInf;
        if (Bounded && stopped) return last_end;
      }
    }
    if (ops_run != N)
      throw std::logic_error("simulator: only " + std::to_string(ops_run) + " of " +
                             std::to_string(N) + " ops ran (internal error)");
    if constexpr (Full) finish();
    return last_end;
  }

  // Full: the result's statistics, critical path and op times.
  void finish() {
    const int32_t N = P.num_ops, D = P.num_devices;
    R->step_time_s = last_end;
    R->ops_run = ops_run;
    R->transfers = S.num_xfers;
    R->devices.resize(D);
    for (int32_t d = 0; d < D; ++d) {
      DeviceStats& ds = R->devices[d];
      ds.busy_s = S.busy_s[d];
      ds.peak_memory_bytes = S.peak_bytes[d];
      ds.resident_bytes = S.resident_bytes[d];
      ds.end_memory_bytes = S.mem_bytes[d];
      ds.ops = S.dev_ops[d];
    }
    R->link_bytes.assign(S.link_bytes.begin(), S.link_bytes.end());
    if (S.oom) {
      std::ostringstream os;
      os << "out of memory on " << P.cluster.devices[S.oom_device].name << " at t=" << S.oom_time_s
         << " s: " << S.oom_bytes << " bytes in use > capacity " << P.capacity_bytes[S.oom_device]
         << " bytes";
      R->valid = false;
      R->status = SimStatus::out_of_memory;
      R->reason = os.str();
    }
    if (P.opt.record_critical_path && N > 0) {
      int32_t cur = 0;
      for (int32_t i = 1; i < N; ++i)
        if (S.end_s[i] > S.end_s[cur]) cur = i;
      for (int32_t guard = 0; cur >= 0 && guard < N; ++guard) {
        R->critical_path.push_back(cur);
        cur = S.pred[cur];
      }
      std::reverse(R->critical_path.begin(), R->critical_path.end());
    }
    if (P.opt.record_op_times) {
      R->op_start_s.assign(S.start_s.begin(), S.start_s.end());
      R->op_end_s.assign(S.end_s.begin(), S.end_s.end());
    }
  }
};

// One pass over the placement before a simulation: each device's queue region (its op
// count), its memory limit, and whether memory must be tracked at all: only when it is
// checked and the ops of some device could together exceed its capacity (the sum of their
// mem_bound). Bounded: each device's total op time, for the lower bound. Check: the validity
// test of check_placement (devices in range, colocation groups whole) done in the same pass.
// Returns -1 for an invalid placement (Check), 1 when memory must be tracked, else 0.
template <bool Bounded, bool Check>
int prepare(const SimProgram& P, const int32_t* dev, SimState& S) {
  const int32_t N = P.num_ops, D = P.num_devices;
  bool any_limit = false;
  int64_t min_limit = std::numeric_limits<int64_t>::max();
  for (int32_t d = 0; d < D; ++d) {
    const bool lim = P.opt.check_memory && P.capacity_bytes[d] > 0;
    S.limit_bytes[d] = lim ? P.capacity_bytes[d] : std::numeric_limits<int64_t>::max();
    any_limit |= lim;
    min_limit = std::min(min_limit, S.limit_bytes[d]);
    S.bound_bytes[d] = 0;
    if constexpr (Bounded) S.work_left_s[d] = 0;
  }
  // The whole graph fits on the smallest device: no placement can run out of memory.
  const bool per_device = any_limit && P.mem_bound_total > min_limit;
  if constexpr (Check) {
    uint32_t bad = 0;
    for (int32_t i = 0; i < N; ++i)
      bad |= static_cast<uint32_t>(dev[i]) >= static_cast<uint32_t>(D);
    if (bad) return -1;
    for (int32_t i : P.coloc_ops)
      if (dev[P.coloc_first[i]] != dev[i]) return -1;
  }
  // Op counts per device in four partial sums (so that a run of ops on one device is not one
  // chain of dependent increments).
  int32_t* const c4 = S.counts.data();
  std::fill(c4, c4 + 4 * D, 0);
  int32_t i = 0;
  for (; i + 4 <= N; i += 4) {
    ++c4[dev[i]];
    ++c4[D + dev[i + 1]];
    ++c4[2 * D + dev[i + 2]];
    ++c4[3 * D + dev[i + 3]];
  }
  for (; i < N; ++i) ++c4[dev[i]];
  for (int32_t d = 0; d < D; ++d) S.q_tail[d] = c4[d] + c4[D + d] + c4[2 * D + d] + c4[3 * D + d];
  if (per_device)
    for (int32_t k = 0; k < N; ++k) S.bound_bytes[dev[k]] += P.mem_bound[k];
  if constexpr (Bounded)
    for (int32_t k = 0; k < N; ++k) S.work_left_s[dev[k]] += P.time_of(k, dev[k]);
  const int32_t* const count = S.q_tail.data();
  int32_t at = 0;
  for (int32_t d = 0; d < D; ++d) {
    const int32_t n = count[d];
    S.q_head[d] = S.q_tail[d] = S.q_inst[d] = at;
    at += n;
  }
  if (!per_device) return 0;
  for (int32_t d = 0; d < D; ++d)
    if (S.bound_bytes[d] > S.limit_bytes[d]) return 1;
  return 0;
}

// The hot path: the step time only (+inf when invalid or out of memory), or with a finite
// limit, a lower bound above it as soon as one is known.
double fast_step_time(const SimProgram& P, const Placement& pl, SimState& S, double limit,
                      bool* stopped) {
  *stopped = false;
  if (static_cast<int64_t>(pl.device.size()) != P.num_ops) return kInf;
  const int32_t* dev = pl.device.data();
  if (limit < kInf) {
    limit += std::abs(limit) * 1e-9;
    const int mem = prepare<true, true>(P, dev, S);
    if (mem < 0) return kInf;
    // Every device must run its own ops one after another.
    double lb = 0;
    for (int32_t d = 0; d < P.num_devices; ++d) lb = std::max(lb, S.work_left_s[d]);
    if (lb > limit) {
      *stopped = true;
      return lb;
    }
    auto run = [&](auto&& loop) {
      const double t = loop.run();
      *stopped = loop.stopped;
      return t;
    };
    return mem ? run(EventLoop<false, true, true>{P, S, nullptr, dev, limit})
               : run(EventLoop<false, false, true>{P, S, nullptr, dev, limit});
  }
  const int mem = prepare<false, true>(P, dev, S);
  if (mem < 0) return kInf;
  return mem ? EventLoop<false, true, false>{P, S, nullptr, dev, kInf}.run()
             : EventLoop<false, false, false>{P, S, nullptr, dev, kInf}.run();
}

// A valid placement (check_placement), every statistic.
double full_run(const SimProgram& P, const Placement& pl, SimState& S, SimResult* R) {
  const int32_t* dev = pl.device.data();
  prepare<false, false>(P, dev, S);
  return EventLoop<true, true, false>{P, S, R, dev, kInf}.run();
}

}  // namespace

// The states step_times hands to its threads: taken at the start of a call, returned at
// the end, so that a search's many small batches allocate nothing once warm.
struct Simulator::StatePool {
  std::atomic<int64_t> early_stops{0};  // step_time calls with a limit that stopped early
  std::mutex mu;
  std::vector<std::unique_ptr<SimState>> free;
  std::unique_ptr<SimState> take(const SimProgram& p) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!free.empty()) {
        std::unique_ptr<SimState> s = std::move(free.back());
        free.pop_back();
        return s;
      }
    }
    return std::make_unique<SimState>(p);
  }
  void give(std::unique_ptr<SimState> s) {
    std::lock_guard<std::mutex> lock(mu);
    free.push_back(std::move(s));
  }
};

Simulator::Simulator(const Graph& g, const Cluster& c, const CostModel& cost, SimOptions opt)
    : prog_(std::make_unique<SimProgram>(g, c, cost, opt)), pool_(std::make_unique<StatePool>()) {
  state_ = std::make_unique<SimState>(*prog_);
}

Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;

std::unique_ptr<SimState> Simulator::make_state() const {
  return std::make_unique<SimState>(*prog_);
}

SimResult Simulator::run(const Placement& p) { return run(p, *state_); }

SimResult Simulator::run(const Placement& p, SimState& state) const {
  SimResult r;
  std::string reason;
  r.status = check_placement(*prog_, p, &reason);
  if (r.status != SimStatus::valid) {
    r.valid = false;
    r.reason = reason;
    r.step_time_s = kInf;
    return r;
  }
  full_run(*prog_, p, state, &r);
  return r;
}

double Simulator::step_time(const Placement& p, SimState& state) const {
  return step_time(p, state, kInf);
}

double Simulator::step_time(const Placement& p, SimState& state, double limit) const {
  bool stopped = false;
  const double t = fast_step_time(*prog_, p, state, limit, &stopped);
  if (stopped) pool_->early_stops.fetch_add(1, std::memory_order_relaxed);
  return t;
}

std::vector<double> Simulator::step_times(const std::vector<Placement>& ps) const {
  return step_times(ps, {});
}

std::vector<double> Simulator::step_times(const std::vector<Placement>& ps,
                                          const std::vector<double>& limits) const {
  if (!limits.empty() && limits.size() != ps.size())
    throw std::invalid_argument("Simulator::step_times: " + std::to_string(limits.size()) +
                                " limits for " + std::to_string(ps.size()) + " placements");
  std::vector<double> out(ps.size(), kInf);
  const int64_t n = static_cast<int64_t>(ps.size());
  // An exception may not leave an OpenMP region (it would terminate the program): the first
  // one is kept and rethrown on the calling thread.
  std::exception_ptr error;
#pragma omp parallel if (n > 1)
  {
    std::unique_ptr<SimState> st;
    try {
      st = pool_->take(*prog_);
    } catch (...) {
#pragma omp critical(gdp_step_times_error)
      if (!error) error = std::current_exception();
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < n; ++k) {
      if (!st) continue;
      try {
        out[k] = step_time(ps[k], *st, limits.empty() ? kInf : limits[k]);
      } catch (...) {
#pragma omp critical(gdp_step_times_error)
        if (!error) error = std::current_exception();
      }
    }
    if (st) pool_->give(std::move(st));
  }
  if (error) std::rethrow_exception(error);
  return out;
}

int64_t Simulator::early_stops() const { return pool_->early_stops.load(); }

double Simulator::op_time_s(int32_t op, int32_t device) const { return prog_->time_of(op, device); }
const SimOptions& Simulator::options() const { return prog_->opt; }
const Graph& Simulator::graph() const { return prog_->graph; }
const Cluster& Simulator::cluster() const { return prog_->cluster; }

}  // namespace gdp
