// The threads-as-devices runtime of `gdp validate` (validate/cpu_executor.h). One mutex guards
// the scheduling state; kernels and copies run outside it. The ready queue of a device is a
// min-heap keyed like the simulator's: (completion event that made the op ready, topological
// position) for fifo, the topological position alone for topo_priority.
#include "validate/cpu_executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gdp::validate {

namespace {

using Clock = std::chrono::steady_clock;

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

// The placement must give every op a device of the cluster.
void check_placement_fits(const Graph& g, const Placement& p, int32_t num_devices) {
  if (static_cast<int64_t>(p.device.size()) != g.num_ops())
    throw InputError("placement has " + std::to_string(p.device.size()) + " entries but graph '" +
                     g.name + "' has " + std::to_string(g.num_ops()) + " ops");
  for (int32_t i = 0; i < g.num_ops(); ++i)
    if (p.device[i] < 0 || p.device[i] >= num_devices)
      throw InputError("placement: op '" + g.op(i).name + "' is on device " +
                       std::to_string(p.device[i]) + " but the cluster has " +
                       std::to_string(num_devices) + " devices");
}

// The transfers of a placed graph: one per (tensor, remote destination device), in the order
// of the producing op, its outputs, then the destination device. `consumers` gets, per
// transfer, the consuming ops on the destination (one entry per edge).
std::vector<RealTransfer> plan_transfers(const Graph& g, const Placement& p, int32_t D,
                                         std::vector<std::vector<int32_t>>* consumers) {
  std::vector<RealTransfer> xs;
  const auto& edges = g.edges();
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const int32_t nout = static_cast<int32_t>(g.op(i).outputs.size());
    const int64_t e0 = g.out_ptr()[i], e1 = g.out_ptr()[i + 1];
    for (int32_t k = 0; k < nout; ++k) {
      int64_t bytes = 0;  // the tensor's largest edge (the simulator's xfer_bytes)
      for (int64_t q = e0; q < e1; ++q) {
        const Edge& e = edges[g.out_edge_ids()[q]];
        if (e.src_output == k) bytes = std::max(bytes, e.bytes);
      }
      for (int32_t d = 0; d < D; ++d) {
        if (d == p.device[i]) continue;
        std::vector<int32_t> cons;
        for (int64_t q = e0; q < e1; ++q) {
          const Edge& e = edges[g.out_edge_ids()[q]];
          if (e.src_output == k && p.device[e.dst] == d) cons.push_back(e.dst);
        }
        if (cons.empty()) continue;
        xs.push_back(RealTransfer{i, k, p.device[i], d, bytes});
        if (consumers) consumers->push_back(std::move(cons));
      }
    }
  }
  return xs;
}

}  // namespace

int64_t executor_buffer_bytes(const Graph& g, const Placement& p, int32_t D, int32_t* largest_op) {
  check_placement_fits(g, p, D);
  std::vector<int64_t> dev_floats(D, 0);
  int32_t largest = -1;
  int64_t largest_floats = -1;
  for (int32_t i = 0; i < g.num_ops(); ++i) {
    const int64_t f = plan_kernel(g.op(i)).workspace_floats();
    dev_floats[p.device[i]] = std::max(dev_floats[p.device[i]], f);
    if (f > largest_floats) {
      largest = i;
      largest_floats = f;
    }
  }
  if (largest_op) *largest_op = largest;
  int64_t total = 0;
  for (int64_t f : dev_floats) total += 4 * f;
  std::vector<int64_t> pair_bytes(static_cast<size_t>(D) * D, 0);
  for (const RealTransfer& x : plan_transfers(g, p, D, nullptr)) {
    int64_t& b = pair_bytes[static_cast<size_t>(x.src_device) * D + x.dst_device];
    b = std::max(b, x.bytes);
  }
  for (int64_t b : pair_bytes) total += 2 * b;
  return total;
}

struct CpuExecutor::Impl {
  // The plan (fixed after construction).
  int32_t N = 0, D = 0;
  std::vector<std::string> names;                  // (N) op names, for messages
  std::vector<int32_t> dev;                        // (N) device of each op
  std::vector<int32_t> topo_pos;                   // (N)
  std::vector<int32_t> topo;                       // (N) topological order
  std::vector<int32_t> in_degree;                  // (N) input edges
  std::vector<KernelPlan> plans;                   // (N)
  std::vector<std::vector<int32_t>> local_cons;    // (N) consumers on the op's device, per edge
  std::vector<std::vector<int32_t>> op_xfers;      // (N) transfers the op sends
  std::vector<RealTransfer> xfers;                 // (T)
  std::vector<std::vector<int32_t>> xfer_cons;     // (T) consumers on the destination, per edge
  std::vector<int32_t> xfer_pair;                  // (T) index into pairs
  std::vector<std::pair<int32_t, int32_t>> pairs;  // (P) ordered (source, destination) devices
  bool fifo = true;
  Clock::duration spin{};

  // Buffers: a kernel workspace per device, a source and a destination buffer per pair.
  std::vector<std::vector<float>> workspace;         // (D)
  std::vector<std::vector<unsigned char>> pair_src;  // (P)
  std::vector<std::vector<unsigned char>> pair_dst;  // (P)
  int64_t buffer_bytes = 0;

  // Scheduling state, guarded by mu.
  std::mutex mu;
  std::vector<std::condition_variable> dev_cv;   // (D)
  std::vector<std::condition_variable> pair_cv;  // (P)
  std::condition_variable done_cv;
  std::vector<int32_t> pending;                  // (N) inputs not yet present
  std::vector<std::vector<uint64_t>> ready;      // (D) min-heaps of keys
  std::vector<std::vector<int32_t>> pair_queue;  // (P) FIFO of transfers
  // Work queued per device and per pair (mirrors the queues' sizes; read without the mutex
  // by the polling threads).
  std::unique_ptr<std::atomic<int32_t>[]> dev_avail, pair_avail;  // (D), (P)
  std::atomic<bool> stopping{false};
  std::vector<size_t> pair_head;  // (P)
  uint64_t event_seq = 0;
  int64_t remaining = 0;  // ops + transfers not done in this step
  bool stop = false;
  std::string error;  // a worker's exception
  Clock::time_point t0;
  RealStep rec;

  std::vector<std::thread> threads;

  uint64_t key(uint64_t seq, int32_t op) const {
    const uint64_t pos = static_cast<uint32_t>(topo_pos[op]);
    return fifo ? (seq << 32) | pos : pos;
  }
  void make_ready(int32_t op, uint64_t seq) {
    auto& h = ready[dev[op]];
    h.push_back(key(seq, op));
    std::push_heap(h.begin(), h.end(), std::greater<uint64_t>());
    dev_avail[dev[op]].fetch_add(1, std::memory_order_release);
    dev_cv[dev[op]].notify_one();
  }
  int32_t pop_ready(int32_t d) {
    auto& h = ready[d];
    dev_avail[d].fetch_sub(1, std::memory_order_relaxed);
    std::pop_heap(h.begin(), h.end(), std::greater<uint64_t>());
    const uint64_t k = h.back();
    h.pop_back();
    return topo[static_cast<uint32_t>(k & 0xffffffffu)];
  }
  double since_t0(Clock::time_point t) const {
    return std::chrono::duration<double>(t - t0).count();
  }
  void finish_one() {
    if (--remaining == 0) done_cv.notify_all();
  }
  void fail(const std::string& what) {  // under mu
    if (error.empty()) error = what;
    remaining = 0;
    done_cv.notify_all();
  }

  // Waits (lk held) until pred() holds: first polls `avail` for up to `spin`, then sleeps.
  template <class Pred>
  void wait_for_work(std::unique_lock<std::mutex>& lk, std::condition_variable& cv,
                     const std::atomic<int32_t>& avail, Pred pred) {
    if (pred()) return;
    if (spin.count() > 0) {
      lk.unlock();
      const Clock::time_point until = Clock::now() + spin;
      while (avail.load(std::memory_order_acquire) == 0 &&
             !stopping.load(std::memory_order_relaxed) && Clock::now() < until)
        std::this_thread::yield();
      lk.lock();
    }
    cv.wait(lk, pred);
  }

  void device_loop(int32_t d) {
#ifdef _OPENMP
    omp_set_num_threads(1);  // the thread is the device: Eigen's GEMM stays on it
#endif
    float* ws = workspace[d].data();
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      wait_for_work(lk, dev_cv[d], dev_avail[d], [&] { return stop || !ready[d].empty(); });
      if (stop) return;
      const int32_t i = pop_ready(d);
      lk.unlock();
      const Clock::time_point s = Clock::now();
      std::string what;
      try {
        run_kernel(plans[i], ws);
      } catch (const std::exception& e) {
        what = e.what();
      }
      const Clock::time_point e = Clock::now();
      lk.lock();
      if (!what.empty()) {
        fail("op '" + names[i] + "': " + what);
        continue;
      }
      rec.op_start_s[i] = since_t0(s);
      rec.op_end_s[i] = since_t0(e);
      const uint64_t seq = ++event_seq;
      for (int32_t c : local_cons[i])
        if (--pending[c] == 0) make_ready(c, seq);
      for (int32_t x : op_xfers[i]) {
        const int32_t q = xfer_pair[x];
        pair_queue[q].push_back(x);
        pair_avail[q].fetch_add(1, std::memory_order_release);
        pair_cv[q].notify_one();
      }
      finish_one();
    }
  }

  void copy_loop(int32_t q) {
    unsigned char* src = pair_src[q].data();
    unsigned char* dst = pair_dst[q].data();
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      wait_for_work(lk, pair_cv[q], pair_avail[q],
                    [&] { return stop || pair_head[q] < pair_queue[q].size(); });
      if (stop) return;
      const int32_t x = pair_queue[q][pair_head[q]++];
      pair_avail[q].fetch_sub(1, std::memory_order_relaxed);
      lk.unlock();
      const Clock::time_point s = Clock::now();
      std::memcpy(dst, src, static_cast<size_t>(xfers[x].bytes));
      const Clock::time_point e = Clock::now();
      lk.lock();
      rec.xfer_start_s[x] = since_t0(s);
      rec.xfer_end_s[x] = since_t0(e);
      const uint64_t seq = ++event_seq;
      for (int32_t c : xfer_cons[x])
        if (--pending[c] == 0) make_ready(c, seq);
      finish_one();
    }
  }
};

CpuExecutor::CpuExecutor(const Graph& g, const Placement& p, const Cluster& c,
                         const ExecOptions& opt)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (!g.finalized())
    throw InputError("validate: graph '" + g.name + "' is not finalized (call Graph::finalize())");
  m.N = g.num_ops();
  m.D = c.num_devices();
  int32_t largest_op = -1;
  const int64_t need = executor_buffer_bytes(g, p, m.D, &largest_op);
  if (need > opt.max_buffer_bytes && largest_op >= 0)
    throw InputError(
        "validate: graph '" + g.name + "' needs " + mib(need) +
        " of buffers for the real run (op '" + g.op(largest_op).name + "' alone " +
        mib(4 * plan_kernel(g.op(largest_op)).workspace_floats()) + "), over the limit of " +
        mib(opt.max_buffer_bytes) + "; divide its work with --scale (e.g. --scale " +
        std::to_string(static_cast<int64_t>(std::ceil(double(need) / opt.max_buffer_bytes))) +
        ") or raise --max-memory-mib");
  m.fifo = opt.queue_policy == QueuePolicy::fifo;
  m.spin = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, opt.spin_s)));
  m.dev = p.device;
  for (const Op& op : g.ops()) m.names.push_back(op.name);
  m.topo = g.topo_order();
  m.topo_pos.assign(m.N, 0);
  for (int32_t k = 0; k < m.N; ++k) m.topo_pos[m.topo[k]] = k;
  m.in_degree.assign(m.N, 0);
  m.local_cons.assign(m.N, {});
  m.plans.resize(m.N);
  for (int32_t i = 0; i < m.N; ++i) m.plans[i] = plan_kernel(g.op(i));
  for (const Edge& e : g.edges()) {
    m.in_degree[e.dst]++;
    if (m.dev[e.src] == m.dev[e.dst]) m.local_cons[e.src].push_back(e.dst);
  }
  m.xfers = plan_transfers(g, p, m.D, &m.xfer_cons);
  m.op_xfers.assign(m.N, {});
  std::vector<int32_t> pair_of(static_cast<size_t>(m.D) * m.D, -1);
  std::vector<int64_t> pair_max;
  for (size_t x = 0; x < m.xfers.size(); ++x) {
    const RealTransfer& t = m.xfers[x];
    int32_t& q = pair_of[static_cast<size_t>(t.src_device) * m.D + t.dst_device];
    if (q < 0) {
      q = static_cast<int32_t>(m.pairs.size());
      m.pairs.push_back({t.src_device, t.dst_device});
      pair_max.push_back(0);
    }
    pair_max[q] = std::max(pair_max[q], t.bytes);
    m.xfer_pair.push_back(q);
    m.op_xfers[t.src_op].push_back(static_cast<int32_t>(x));
  }

  // Buffers, allocated and filled before any timing.
  std::vector<int64_t> ws_floats(m.D, 0);
  std::vector<int32_t> ops_on(m.D, 0);
  for (int32_t i = 0; i < m.N; ++i) {
    ws_floats[m.dev[i]] = std::max(ws_floats[m.dev[i]], m.plans[i].workspace_floats());
    ops_on[m.dev[i]]++;
  }
  m.workspace.resize(m.D);
  for (int32_t d = 0; d < m.D; ++d) {
    m.workspace[d].resize(static_cast<size_t>(ws_floats[d]));
    init_workspace(m.workspace[d].data(), ws_floats[d]);
    m.buffer_bytes += 4 * ws_floats[d];
  }
  const size_t P = m.pairs.size();
  m.pair_src.resize(P);
  m.pair_dst.resize(P);
  for (size_t q = 0; q < P; ++q) {
    m.pair_src[q].assign(static_cast<size_t>(pair_max[q]), 1);
    m.pair_dst[q].assign(static_cast<size_t>(pair_max[q]), 0);
    m.buffer_bytes += 2 * pair_max[q];
  }

  // Scheduling state, sized once.
  m.dev_cv = std::vector<std::condition_variable>(m.D);
  m.pair_cv = std::vector<std::condition_variable>(P);
  m.pending.assign(m.N, 0);
  m.ready.resize(m.D);
  for (int32_t d = 0; d < m.D; ++d) m.ready[d].reserve(ops_on[d]);
  m.pair_queue.resize(P);
  m.pair_head.assign(P, 0);
  m.dev_avail = std::make_unique<std::atomic<int32_t>[]>(m.D);
  m.pair_avail = std::make_unique<std::atomic<int32_t>[]>(P);
  for (int32_t d = 0; d < m.D; ++d) m.dev_avail[d] = 0;
  for (size_t q = 0; q < P; ++q) m.pair_avail[q] = 0;
  for (size_t x = 0; x < m.xfers.size(); ++x) m.pair_queue[m.xfer_pair[x]].reserve(m.xfers.size());
  m.rec.op_start_s.assign(m.N, -1);
  m.rec.op_end_s.assign(m.N, -1);
  m.rec.xfer_start_s.assign(m.xfers.size(), -1);
  m.rec.xfer_end_s.assign(m.xfers.size(), -1);

  for (int32_t d = 0; d < m.D; ++d)
    if (ops_on[d] > 0) m.threads.emplace_back([&m, d] { m.device_loop(d); });
  for (size_t q = 0; q < P; ++q)
    m.threads.emplace_back([&m, q] { m.copy_loop(static_cast<int32_t>(q)); });
}

CpuExecutor::~CpuExecutor() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
    impl_->stopping = true;
    for (auto& cv : impl_->dev_cv) cv.notify_all();
    for (auto& cv : impl_->pair_cv) cv.notify_all();
  }
  for (auto& t : impl_->threads) t.join();
}

RealStep CpuExecutor::run_step() {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lk(m.mu);
  if (!m.error.empty()) throw InputError("validate: the real run failed: " + m.error);
  m.pending = m.in_degree;
  for (auto& h : m.ready) h.clear();
  for (auto& q : m.pair_queue) q.clear();
  for (int32_t d = 0; d < m.D; ++d) m.dev_avail[d] = 0;
  for (size_t q = 0; q < m.pairs.size(); ++q) m.pair_avail[q] = 0;
  std::fill(m.pair_head.begin(), m.pair_head.end(), 0);
  std::fill(m.rec.op_start_s.begin(), m.rec.op_start_s.end(), -1);
  std::fill(m.rec.op_end_s.begin(), m.rec.op_end_s.end(), -1);
  std::fill(m.rec.xfer_start_s.begin(), m.rec.xfer_start_s.end(), -1);
  std::fill(m.rec.xfer_end_s.begin(), m.rec.xfer_end_s.end(), -1);
  m.event_seq = 0;
  m.remaining = m.N + static_cast<int64_t>(m.xfers.size());
  m.t0 = Clock::now();
  for (int32_t i : m.topo)
    if (m.in_degree[i] == 0) m.make_ready(i, 0);
  m.done_cv.wait(lk, [&] { return m.remaining <= 0; });
  if (!m.error.empty()) throw InputError("validate: the real run failed: " + m.error);
  RealStep r = m.rec;
  r.step_s = 0;
  for (double e : r.op_end_s) r.step_s = std::max(r.step_s, e);
  return r;
}

const std::vector<KernelPlan>& CpuExecutor::kernels() const { return impl_->plans; }
const std::vector<RealTransfer>& CpuExecutor::transfers() const { return impl_->xfers; }
int64_t CpuExecutor::buffer_bytes() const { return impl_->buffer_bytes; }
int32_t CpuExecutor::device_threads() const {
  return static_cast<int32_t>(impl_->threads.size() - impl_->pairs.size());
}
int32_t CpuExecutor::copy_threads() const { return static_cast<int32_t>(impl_->pairs.size()); }

}  // namespace gdp::validate
