// The discrete-event loop: per-device compute streams with ready queues, per-directed-link
// FIFOs (busy-until time + arrival events), memory accounting, critical path. Rules and
// their justification: docs/cost-model.md.
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
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

// One simulation. Full = false is the RL hot path: no recording, stops at the first
// out-of-memory and returns +inf. Full = true fills *R.
template <bool Full>
double simulate(const SimProgram& P, const Placement& pl, SimState& S, SimResult* R) {
  const int32_t N = P.num_ops, D = P.num_devices, L = P.num_links;
  const int32_t* dev = pl.device.data();
  const bool fifo = P.opt.queue_policy == QueuePolicy::fifo;
  const bool check_mem = P.opt.check_memory;
  [[maybe_unused]] const bool rec_trace = Full && P.opt.record_trace;

  // Reset (no allocation: every container keeps its capacity).
  std::copy(P.in_degree.begin(), P.in_degree.end(), S.pending.begin());
  for (int32_t d = 0; d < D; ++d) {
    S.ready[d].clear();
    S.qhead[d] = S.qtail[d] = -1;
    S.running[d] = -1;
    S.last_op[d] = -1;
    S.mem_bytes[d] = 0;
    S.busy_s[d] = 0;
    S.dev_ops[d] = 0;
    S.stamp[d] = -1;
    S.is_dirty[d] = 0;
  }
  S.dirty.clear();
  S.batch.clear();
  for (int32_t l = 0; l < L; ++l) {
    S.link_free_s[l] = 0;
    S.link_head[l] = S.link_tail[l] = S.link_last[l] = -1;
    S.link_bytes[l] = 0;
  }
  S.dev_events.clear();
  S.link_events.clear();
  for (int32_t d = 0; d < D; ++d)
    S.limit_bytes[d] = (check_mem && P.capacity_bytes[d] > 0) ? P.capacity_bytes[d]
                                                              : std::numeric_limits<int64_t>::max();
  S.num_xfers = 0;
  S.oom = false;
  S.oom_device = -1;
  if constexpr (Full) {  // so that an op that never ran shows as -1
    std::fill(S.start_s.begin(), S.start_s.end(), -1.0);
    std::fill(S.end_s.begin(), S.end_s.end(), -1.0);
  }
  int32_t ops_run = 0;
  double last_end = 0;
  double now = 0;

  auto alloc = [&](int32_t d, int64_t bytes) GDP_INLINE {
    int64_t m = (S.mem_bytes[d] += bytes);
    if (m > S.peak_bytes[d]) S.peak_bytes[d] = m;
    if (m > S.limit_bytes[d] && !S.oom) [[unlikely]] {
      S.oom = true;
      S.oom_device = d;
      S.oom_time_s = now;
      S.oom_bytes = m;
    }
  };

  // Resident parameters.
  for (int32_t i = 0; i < N; ++i) S.mem_bytes[dev[i]] += P.param_bytes[i];
  for (int32_t d = 0; d < D; ++d) {
    S.resident_bytes[d] = S.mem_bytes[d];
    S.peak_bytes[d] = S.mem_bytes[d];
    alloc(d, 0);  // over capacity already => out of memory at t = 0
  }
  if constexpr (!Full) {
    if (S.oom) return kInf;
  }

  auto mark_dirty = [&](int32_t d) GDP_INLINE {
    if (!S.is_dirty[d]) {
      S.is_dirty[d] = 1;
      S.dirty.push_back(d);
    }
  };
  // FIFO policy: the ops that become ready at one instant are collected in S.batch and
  // appended to their device's FIFO (a linked list through S.qnext) in topological order
  // when the instant is over, so the queue is ordered by (ready time, topological position)
  // without a heap. topo_priority uses a per-device heap keyed by topological position.
  auto make_ready = [&](int32_t i, [[maybe_unused]] int32_t pred_op) GDP_INLINE {
    if constexpr (Full) {
      S.ready_s[i] = now;
      S.pred[i] = pred_op;
    }
    const int32_t d = dev[i];
    if (fifo)
      S.batch.push_back((static_cast<uint64_t>(d) << 32) | static_cast<uint32_t>(P.topo_pos[i]));
    else
      S.ready[d].push(ReadyEntry{static_cast<double>(P.topo_pos[i]), P.topo_pos[i], i});
    mark_dirty(d);
  };
  auto pop_ready = [&](int32_t d) -> int32_t {
    if (!fifo) return S.ready[d].empty() ? -1 : S.ready[d].pop().op;
    const int32_t i = S.qhead[d];
    if (i >= 0) {
      S.qhead[d] = S.qnext[i];
      if (S.qhead[d] < 0) S.qtail[d] = -1;
    }
    return i;
  };
  auto dispatch = [&]() GDP_INLINE {
    if (fifo && !S.batch.empty()) {
      if (S.batch.size() > 1) std::sort(S.batch.begin(), S.batch.end());
      for (uint64_t key : S.batch) {
        const int32_t d = static_cast<int32_t>(key >> 32);
        const int32_t i = P.topo_order[static_cast<uint32_t>(key)];
        S.qnext[i] = -1;
        if (S.qtail[d] < 0)
          S.qhead[d] = i;
        else
          S.qnext[S.qtail[d]] = i;
        S.qtail[d] = i;
      }
      S.batch.clear();
    }
    for (int32_t d : S.dirty) {
      S.is_dirty[d] = 0;
      if (S.running[d] >= 0) continue;
      const int32_t i = pop_ready(d);
      if (i < 0) continue;
      S.running[d] = i;
      ++ops_run;
      const OpInfo& oi = P.op_info[i];
      alloc(d, oi.alloc_bytes);
      // Its end will read its input slots and output tensors: fetch them now. (Pointer
      // arithmetic: the range can be empty, at the end of the array or of an empty one.)
      __builtin_prefetch(P.in_slot.data() + oi.in_begin);
      __builtin_prefetch(P.tensor_info.data() + oi.t_begin);
      double t = P.time_of(i, d);
      double end = now + t;
      S.busy_s[d] += t;
      S.dev_ops[d]++;
      if (end > last_end) last_end = end;
      S.dev_events.set(d, end);
      if constexpr (Full) {
        S.start_s[i] = now;
        S.end_s[i] = end;
        if (now > S.ready_s[i]) S.pred[i] = S.last_op[d];  // waited for the device
        if (rec_trace) R->trace.push_back(TraceEvent{P.graph.op(i).name, d, now, end});
      }
    }
    S.dirty.clear();
  };
  // Puts transfer x on directed link l at time `now` (FIFO: it starts when the link is free).
  auto enqueue = [&](int32_t x, int32_t l) GDP_INLINE {
    Xfer& X = S.xfers[x];
    double start = now;
    if (S.link_free_s[l] > now) {
      start = S.link_free_s[l];
      if constexpr (Full) X.pred_op = S.xfers[S.link_last[l]].pred_op;  // waited behind it
    }
    const int64_t bytes = P.tensor_info[X.tensor].xfer_bytes;
    // Cut-through: the link streams the tensor at its bandwidth but cannot finish before the
    // tail has arrived from the previous hop (docs/cost-model.md, "Routes").
    double done = start + static_cast<double>(bytes) / P.link_bw_Bps[l];
    if (done < X.tail_s) done = X.tail_s;
    S.link_free_s[l] = done;
    const double lat = P.link_latency_s[l];
    X.tail_s = done + lat;
    X.arrive_s = (X.route_begin + X.hop + 1 < X.route_end) ? start + lat : done + lat;
    S.link_bytes[l] += bytes;
    if constexpr (Full) S.link_last[l] = x;
    X.next = -1;
    if (S.link_tail[l] < 0) {
      S.link_head[l] = S.link_tail[l] = x;
      S.link_events.set(l, X.arrive_s);
    } else {
      S.xfers[S.link_tail[l]].next = x;
      S.link_tail[l] = x;
    }
    if constexpr (Full) {
      if (rec_trace) {
        int32_t src = P.tensor_op[X.tensor];
        R->trace.push_back(TraceEvent{P.graph.op(src).name + ":" +
                                          std::to_string(X.tensor - P.tensor_ptr[src]) + " -> " +
                                          P.cluster.devices[X.dst].name,
                                      D + l, start, done});
      }
    }
  };
  auto deliver = [&](int32_t x) {
    const Xfer& X = S.xfers[x];
    const int32_t t = X.tensor, dc = X.dst;
    const TensorInfo& ti = P.tensor_info[t];
    alloc(dc, ti.xfer_bytes);
    if (--S.src_ref[t] == 0) S.mem_bytes[X.src_dev] -= ti.bytes;
    for (int32_t e = ti.cons_begin; e < ti.cons_end; ++e) {
      int32_t c = P.cons_op[e];
      if (dev[c] == dc && --S.pending[c] == 0) make_ready(c, X.pred_op);
    }
  };
  auto op_end = [&](int32_t d) {
    const int32_t i = S.running[d];
    S.running[d] = -1;
    S.last_op[d] = i;
    mark_dirty(d);
    const OpInfo& oi = P.op_info[i];
    S.mem_bytes[d] -= oi.temp_bytes;
    // Inputs: this consumer is done with its copy of each input tensor.
    for (int32_t s = oi.in_begin; s < oi.in_end; ++s) {
      const InSlot slot = P.in_slot[s];
      const int32_t x = S.edge_xfer[slot.edge];
      if (x < 0) {  // produced on this device
        if (--S.src_ref[slot.tensor] == 0) S.mem_bytes[d] -= P.tensor_info[slot.tensor].bytes;
      } else if (--S.xfers[x].refs == 0) {
        S.mem_bytes[d] -= P.tensor_info[slot.tensor].xfer_bytes;
      }
    }
    // Outputs: wake local consumers, send one transfer per remote destination device.
    for (int32_t t = oi.t_begin; t < oi.t_end; ++t) {
      const TensorInfo& ti = P.tensor_info[t];
      int32_t refs = 0;
      for (int32_t e = ti.cons_begin; e < ti.cons_end; ++e) {
        const int32_t c = P.cons_op[e];
        const int32_t dc = dev[c];
        ++refs;
        if (dc == d) {
          S.edge_xfer[e] = -1;
          if (--S.pending[c] == 0) make_ready(c, i);
          continue;
        }
        int32_t x;
        if (S.stamp[dc] == t) {
          x = S.stamp_xfer[dc];
          --refs;  // the transfer already holds the source copy
        } else {
          x = S.num_xfers++;
          S.stamp[dc] = t;
          S.stamp_xfer[dc] = x;
          Xfer& X = S.xfers[x];
          X.tensor = t;
          X.dst = dc;
          X.src_dev = d;
          X.hop = 0;
          X.refs = 0;
          X.tail_s = 0;
          if constexpr (Full) X.pred_op = i;
          const size_t k = static_cast<size_t>(d) * D + dc;
          X.route_begin = P.route_ptr[k];
          X.route_end = P.route_ptr[k + 1];
          enqueue(x, P.route_link[X.route_begin]);
        }
        S.xfers[x].refs++;
        S.edge_xfer[e] = x;
      }
      S.src_ref[t] = refs;
      if (refs == 0) S.mem_bytes[d] -= ti.bytes;
    }
  };
  auto link_event = [&](int32_t l) {
    const int32_t x = S.link_head[l];
    Xfer& X = S.xfers[x];
    S.link_head[l] = X.next;
    if (X.next < 0) {
      S.link_tail[l] = -1;
      S.link_events.set(l, EventTree::kNone);
    } else {
      S.link_events.set(l, S.xfers[X.next].arrive_s);
    }
    X.hop++;
    if (X.route_begin + X.hop < X.route_end)
      enqueue(x, P.route_link[X.route_begin + X.hop]);  // the head reached the next node
    else
      deliver(x);
  };

  for (int32_t i = 0; i < N; ++i)
    if (P.in_degree[i] == 0) make_ready(i, -1);
  dispatch();
  if constexpr (!Full) {
    if (S.oom) return kInf;
  }
  // Next event: the earlier of the two calendars' roots, devices first at equal times.
  for (;;) {
    const double td = S.dev_events.top_time(), tl = S.link_events.top_time();
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
    if (std::min(S.dev_events.top_time(), S.link_events.top_time()) != now) dispatch();
    if constexpr (!Full) {
      if (S.oom) return kInf;
    }
  }
  if (ops_run != N)
    throw std::logic_error("simulator: only " + std::to_string(ops_run) + " of " +
                           std::to_string(N) + " ops ran (internal error)");

  if constexpr (Full) {
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
  return last_end;
}

}  // namespace

Simulator::Simulator(const Graph& g, const Cluster& c, const CostModel& cost, SimOptions opt)
    : prog_(std::make_unique<SimProgram>(g, c, cost, opt)) {
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
  simulate<true>(*prog_, p, state, &r);
  return r;
}

double Simulator::step_time(const Placement& p, SimState& state) const {
  if (check_placement(*prog_, p, nullptr) != SimStatus::valid) return kInf;
  return simulate<false>(*prog_, p, state, nullptr);
}

std::vector<double> Simulator::step_times(const std::vector<Placement>& ps) const {
  std::vector<double> out(ps.size(), kInf);
  const int64_t n = static_cast<int64_t>(ps.size());
  // An exception may not leave an OpenMP region (it would terminate the program): the first
  // one is kept and rethrown on the calling thread.
  std::exception_ptr error;
#pragma omp parallel if (n > 1)
  {
    SimState st(*prog_);
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < n; ++k) {
      try {
        out[k] = step_time(ps[k], st);
      } catch (...) {
#pragma omp critical(gdp_step_times_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return out;
}

double Simulator::op_time_s(int32_t op, int32_t device) const { return prog_->time_of(op, device); }
const SimOptions& Simulator::options() const { return prog_->opt; }
const Graph& Simulator::graph() const { return prog_->graph; }
const Cluster& Simulator::cluster() const { return prog_->cluster; }

}  // namespace gdp
