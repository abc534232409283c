// The GPU runtime of `gdp validate --backend cuda` (validate/cuda_executor.h). The host enqueues
// a whole step in one topological pass: per op, waits on the events of its incoming transfers,
// a start event, the kernel, an end event on its GPU's default stream; per transfer, a wait on
// the producer's end event, start event, copy, end event on the pair's copy stream. Then it
// synchronises and reads every event against the step's start event of the same GPU.
// Empty without the CUDA backend.
#include "validate/cuda_executor.h"

#ifdef GDP_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "cuda/bench.h"
#include "cuda/kernels.h"

namespace gdp::validate {

namespace {

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

int as_int(int64_t v, const std::string& op) {
  if (v > std::numeric_limits<int>::max())
    throw InputError("validate: op '" + op + "' has a kernel dimension over 2^31 (" +
                     std::to_string(v) + "); divide its work with --scale");
  return static_cast<int>(v);
}

// The implicit GEMM of a convolution: (B*Ho*Wo, Co) = (B*Ho*Wo, KH*KW*Ci) (KH*KW*Ci, Co).
void conv_gemm_shape(const calib::ConvShape& s, int64_t* M, int64_t* N, int64_t* K) {
  *M = s.B * s.Ho() * s.Wo();
  *N = s.Co;
  *K = s.KH * s.KW * s.Ci;
}

// Floats of device workspace the kernel of `plan` uses in this executor's layout.
int64_t gpu_workspace_floats(const KernelPlan& k) {
  switch (k.kind) {
    case KernelKind::none:
      return 0;
    case KernelKind::gemm:
      return k.m * k.k + k.k * k.n + k.m * k.n;
    case KernelKind::conv2d: {
      int64_t M, N, K;
      conv_gemm_shape(k.conv, &M, &N, &K);
      return M * K + K * N + M * N;
    }
    case KernelKind::add:
      return 3 * k.n;
    case KernelKind::relu:
    case KernelKind::tanh:
    case KernelKind::gelu:
    case KernelKind::copy:
      return 2 * k.n;
    case KernelKind::row_sum:
      return k.m * k.n + k.m;
    case KernelKind::softmax:
    case KernelKind::transpose:
      return 2 * k.m * k.n;
    case KernelKind::layer_norm:
      return 2 * k.m * k.n + 2 * k.m + 2 * k.n;
  }
  return 0;
}

// Queues the kernel of `k` on the current device's default stream (cuda/kernels.h) or, for
// GEMMs, on `s` (the same stream, with the GPU's own cuBLAS handle).
void launch(const KernelPlan& k, float* ws, const cuda::Stream& s, const std::string& op) {
  switch (k.kind) {
    case KernelKind::none:
      return;
    case KernelKind::gemm: {
      float* A = ws;
      float* B = A + k.m * k.k;
      float* C = B + k.k * k.n;
      cuda::gemm_on(s, C, A, B, as_int(k.m, op), as_int(k.n, op), as_int(k.k, op));
      return;
    }
    case KernelKind::conv2d: {
      int64_t M, N, K;
      conv_gemm_shape(k.conv, &M, &N, &K);
      float* col = ws;
      float* w = col + M * K;
      float* out = w + K * N;
      cuda::gemm_on(s, out, col, w, as_int(M, op), as_int(N, op), as_int(K, op));
      return;
    }
    case KernelKind::add:
      cuda::add_forward(ws + 2 * k.n, ws, ws + k.n, 1, as_int(k.n, op), false);
      return;
    case KernelKind::relu:
      cuda::relu_forward(ws + k.n, ws, static_cast<size_t>(k.n));
      return;
    case KernelKind::tanh:
      cuda::tanh_forward(ws + k.n, ws, static_cast<size_t>(k.n));
      return;
    case KernelKind::gelu:
      cuda::gelu_forward(ws + k.n, ws, static_cast<size_t>(k.n));
      return;
    case KernelKind::copy:
      cuda::copy_d2d(s, ws + k.n, ws, static_cast<size_t>(k.n) * sizeof(float));
      return;
    case KernelKind::row_sum:
      cuda::sum_forward(ws + k.m * k.n, ws, as_int(k.m, op), as_int(k.n, op));
      return;
    case KernelKind::softmax:
      cuda::softmax_forward(ws + k.m * k.n, ws, as_int(k.m, op), as_int(k.n, op));
      return;
    case KernelKind::transpose:
      cuda::swap_axes(ws + k.m * k.n, ws, 1, as_int(k.m, op), 1, as_int(k.n, op), 1, false);
      return;
    case KernelKind::layer_norm: {
      const int64_t mn = k.m * k.n;
      float* x = ws;
      float* out = x + mn;
      float* mean = out + mn;
      float* rstd = mean + k.m;
      float* gamma = rstd + k.m;
      float* beta = gamma + k.n;
      cuda::layernorm_forward(out, mean, rstd, x, gamma, beta, as_int(k.m, op), as_int(k.n, op));
      return;
    }
  }
}

}  // namespace

struct CudaExecutor::Impl {
  int32_t N = 0, D = 0, G = 0;  // ops, cluster devices, GPUs used
  std::vector<int32_t> dev;     // (N)
  std::vector<int32_t> gpu_of;  // (D) GPU of each cluster device
  std::vector<std::string> names;
  std::vector<KernelPlan> plans;               // (N)
  std::vector<int32_t> order;                  // (N) enqueue order (topological)
  std::vector<std::vector<int32_t>> in_xfers;  // (N) transfers the op waits for
  std::vector<std::vector<int32_t>> op_xfers;  // (N) transfers the op sends
  std::vector<RealTransfer> xfers;             // (T)
  std::vector<int32_t> xfer_pair;              // (T)
  std::vector<std::pair<int32_t, int32_t>> pairs;

  std::vector<cuda::Stream> compute;                  // (D) default stream of gpu_of[d]
  std::vector<cuda::Stream> copy;                     // (P) on the source device's GPU
  std::vector<float*> workspace;                      // (D)
  std::vector<void*> pair_src, pair_dst, pair_stage;  // (P); staging pinned, or null (peer)
  std::vector<cuda::Event> t0;                        // (G)
  std::vector<cuda::Event> op_start, op_end;          // (N)
  std::vector<cuda::Event> xfer_start, xfer_end;      // (T)
  std::vector<int32_t> gpus_with_ops;
  int64_t buffer_bytes = 0;

  ~Impl() {
    try {
      for (int g = 0; g < G; ++g) {
        cuda::set_device(g);
        cuda::synchronize();
      }
    } catch (...) {
    }
    for (float* p : workspace) cuda::device_free_on(p);
    for (void* p : pair_src) cuda::device_free_on(p);
    for (void* p : pair_dst) cuda::device_free_on(p);
    for (void* p : pair_stage) cuda::host_free_pinned(p);
  }
};

CudaExecutor::CudaExecutor(const Graph& g, const Placement& p, const Cluster& c,
                           const CudaExecOptions& opt)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (!g.finalized())
    throw InputError("validate: graph '" + g.name + "' is not finalized (call Graph::finalize())");
  m.N = g.num_ops();
  m.D = c.num_devices();
  (void)executor_buffer_bytes(g, p, m.D);  // checks the placement against graph and cluster
  if (!opt.priority.empty() && static_cast<int32_t>(opt.priority.size()) != m.N)
    throw InputError("validate: CudaExecOptions::priority has " +
                     std::to_string(opt.priority.size()) + " entries for " + std::to_string(m.N) +
                     " ops");
  if (cuda::cuda_device_count() == 0)
    throw InputError("--backend cuda: no GPU is visible (" + cuda::cuda_last_error_string() + ")");
  m.G = std::min<int32_t>(m.D, cuda::device_count());
  m.gpu_of.resize(m.D);
  for (int32_t d = 0; d < m.D; ++d) m.gpu_of[d] = d % m.G;
  m.dev = p.device;
  for (const Op& op : g.ops()) m.names.push_back(op.name);
  m.plans.resize(m.N);
  for (int32_t i = 0; i < m.N; ++i) m.plans[i] = plan_kernel(g.op(i));

  // The transfers: one per (tensor, remote device), as the simulator and the CPU executor.
  const auto& edges = g.edges();
  m.in_xfers.assign(m.N, {});
  m.op_xfers.assign(m.N, {});
  std::vector<int32_t> pair_of(static_cast<size_t>(m.D) * m.D, -1);
  std::vector<int64_t> pair_max;
  for (int32_t i = 0; i < m.N; ++i) {
    const int32_t nout = static_cast<int32_t>(g.op(i).outputs.size());
    const int64_t e0 = g.out_ptr()[i], e1 = g.out_ptr()[i + 1];
    for (int32_t k = 0; k < nout; ++k) {
      int64_t bytes = 0;
      for (int64_t q = e0; q < e1; ++q) {
        const Edge& e = edges[g.out_edge_ids()[q]];
        if (e.src_output == k) bytes = std::max(bytes, e.bytes);
      }
      for (int32_t d = 0; d < m.D; ++d) {
        if (d == m.dev[i]) continue;
        std::vector<int32_t> cons;
        for (int64_t q = e0; q < e1; ++q) {
          const Edge& e = edges[g.out_edge_ids()[q]];
          if (e.src_output == k && m.dev[e.dst] == d) cons.push_back(e.dst);
        }
        if (cons.empty()) continue;
        const int32_t x = static_cast<int32_t>(m.xfers.size());
        m.xfers.push_back(RealTransfer{i, k, m.dev[i], d, bytes});
        m.op_xfers[i].push_back(x);
        for (int32_t con : cons) m.in_xfers[con].push_back(x);
        int32_t& q = pair_of[static_cast<size_t>(m.dev[i]) * m.D + d];
        if (q < 0) {
          q = static_cast<int32_t>(m.pairs.size());
          m.pairs.push_back({m.dev[i], d});
          pair_max.push_back(0);
        }
        pair_max[q] = std::max(pair_max[q], bytes);
        m.xfer_pair.push_back(q);
      }
    }
  }
  for (auto& v : m.in_xfers) {  // a consumer of several edges of one tensor waits once
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // The enqueue order: Kahn's algorithm by (priority, topological position).
  {
    const std::vector<int32_t> topo = g.topo_order();
    std::vector<int32_t> pos(m.N);
    for (int32_t k = 0; k < m.N; ++k) pos[topo[k]] = k;
    std::vector<int32_t> indeg(m.N, 0);
    for (const Edge& e : edges) indeg[e.dst]++;
    using Key = std::pair<double, int32_t>;  // (priority, topological position)
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
    auto prio = [&](int32_t i) {
      const double v = opt.priority.empty() ? 0.0 : opt.priority[i];
      return std::isfinite(v) ? v : std::numeric_limits<double>::max();
    };
    for (int32_t i = 0; i < m.N; ++i)
      if (indeg[i] == 0) ready.push({prio(i), pos[i]});
    while (!ready.empty()) {
      const int32_t i = topo[ready.top().second];
      ready.pop();
      m.order.push_back(i);
      for (int64_t q = g.out_ptr()[i]; q < g.out_ptr()[i + 1]; ++q) {
        const int32_t j = edges[g.out_edge_ids()[q]].dst;
        if (--indeg[j] == 0) ready.push({prio(j), pos[j]});
      }
    }
  }

  // Buffers (checked against the limit before any allocation).
  std::vector<int64_t> ws_floats(m.D, 0);
  for (int32_t i = 0; i < m.N; ++i)
    ws_floats[m.dev[i]] = std::max(ws_floats[m.dev[i]], gpu_workspace_floats(m.plans[i]));
  int64_t need = 0;
  for (int64_t f : ws_floats) need += 4 * f;
  for (int64_t b : pair_max) need += 2 * b;
  if (need > opt.max_buffer_bytes)
    throw InputError("validate: graph '" + g.name + "' needs " + mib(need) +
                     " of device buffers for the real run, over the limit of " +
                     mib(opt.max_buffer_bytes) +
                     "; divide its work with --scale or raise "
                     "--max-memory-mib");
  try {
    for (int32_t d = 0; d < m.D; ++d)
      m.compute.push_back(cuda::Stream::default_stream(m.gpu_of[d]));
    for (int32_t a = 0; a < m.G; ++a)
      for (int32_t b = 0; b < m.G; ++b)
        if (a != b) cuda::enable_peer_access(a, b);
    m.workspace.assign(m.D, nullptr);
    for (int32_t d = 0; d < m.D; ++d) {
      if (ws_floats[d] == 0) continue;
      m.workspace[d] = static_cast<float*>(
          cuda::device_alloc_on(m.gpu_of[d], static_cast<size_t>(ws_floats[d]) * sizeof(float)));
      std::vector<float> host(static_cast<size_t>(ws_floats[d]));
      init_workspace(host.data(), ws_floats[d]);
      cuda::copy_h2d(m.compute[d], m.workspace[d], host.data(), host.size() * sizeof(float));
      m.compute[d].synchronize();
      m.buffer_bytes += 4 * ws_floats[d];
    }
    const size_t P = m.pairs.size();
    m.pair_src.assign(P, nullptr);
    m.pair_dst.assign(P, nullptr);
    m.pair_stage.assign(P, nullptr);
    for (size_t q = 0; q < P; ++q) {
      const int32_t gs = m.gpu_of[m.pairs[q].first], gd = m.gpu_of[m.pairs[q].second];
      const size_t bytes = static_cast<size_t>(pair_max[q]);
      m.copy.emplace_back(gs);
      m.pair_src[q] = cuda::device_alloc_on(gs, bytes);
      m.pair_dst[q] = cuda::device_alloc_on(gd, bytes);
      if (bytes > 0) {
        cuda::fill_bytes_on(m.copy[q], m.pair_src[q], 1, bytes);
        m.copy[q].synchronize();
      }
      m.buffer_bytes += 2 * pair_max[q];
      if (!cuda::peer_enabled(gs, gd)) {
        m.pair_stage[q] = cuda::host_alloc_pinned(bytes);
        m.buffer_bytes += pair_max[q];
      }
    }
    for (int32_t k = 0; k < m.G; ++k) m.t0.emplace_back(k);
    for (int32_t i = 0; i < m.N; ++i) {
      m.op_start.emplace_back(m.gpu_of[m.dev[i]]);
      m.op_end.emplace_back(m.gpu_of[m.dev[i]]);
    }
    for (const RealTransfer& x : m.xfers) {
      m.xfer_start.emplace_back(m.gpu_of[x.src_device]);
      m.xfer_end.emplace_back(m.gpu_of[x.src_device]);
    }
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const InputError*>(&e)) throw;
    throw InputError(std::string("validate: setting up the GPU run failed: ") + e.what());
  }
  std::vector<bool> used(m.G, false);
  for (int32_t i = 0; i < m.N; ++i) used[m.gpu_of[m.dev[i]]] = true;
  for (int32_t k = 0; k < m.G; ++k)
    if (used[k]) m.gpus_with_ops.push_back(k);
}

CudaExecutor::~CudaExecutor() = default;

RealStep CudaExecutor::run_step() {
  Impl& m = *impl_;
  RealStep r;
  try {
    for (int32_t k = 0; k < m.G; ++k) {
      cuda::set_device(k);
      cuda::synchronize();
    }
    for (int32_t k = 0; k < m.G; ++k) m.t0[k].record(cuda::Stream::default_stream(k));
    for (int32_t i : m.order) {
      const int32_t d = m.dev[i];
      const cuda::Stream& s = m.compute[d];
      cuda::set_device(s.device());  // cuda/kernels.h launches on the current device
      for (int32_t x : m.in_xfers[i]) cuda::stream_wait(s, m.xfer_end[x]);
      m.op_start[i].record(s);
      launch(m.plans[i], m.workspace[d], s, m.names[i]);
      m.op_end[i].record(s);
      for (int32_t x : m.op_xfers[i]) {
        const int32_t q = m.xfer_pair[x];
        const cuda::Stream& cs = m.copy[q];
        cuda::stream_wait(cs, m.op_end[i]);
        m.xfer_start[x].record(cs);
        const RealTransfer& t = m.xfers[x];
        cuda::copy_peer(cs, m.pair_dst[q], m.gpu_of[t.dst_device], m.pair_src[q],
                        m.gpu_of[t.src_device], static_cast<size_t>(t.bytes), m.pair_stage[q]);
        m.xfer_end[x].record(cs);
      }
    }
    for (int32_t k = 0; k < m.G; ++k) {
      cuda::set_device(k);
      cuda::synchronize();
    }
    r.op_start_s.resize(m.N);
    r.op_end_s.resize(m.N);
    for (int32_t i = 0; i < m.N; ++i) {
      const cuda::Event& z = m.t0[m.gpu_of[m.dev[i]]];
      r.op_start_s[i] = cuda::elapsed_s(z, m.op_start[i]);
      r.op_end_s[i] = cuda::elapsed_s(z, m.op_end[i]);
      r.step_s = std::max(r.step_s, r.op_end_s[i]);
    }
    r.xfer_start_s.resize(m.xfers.size());
    r.xfer_end_s.resize(m.xfers.size());
    for (size_t x = 0; x < m.xfers.size(); ++x) {
      const cuda::Event& z = m.t0[m.gpu_of[m.xfers[x].src_device]];
      r.xfer_start_s[x] = cuda::elapsed_s(z, m.xfer_start[x]);
      r.xfer_end_s[x] = cuda::elapsed_s(z, m.xfer_end[x]);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("validate: the GPU run failed: ") + e.what());
  }
  return r;
}

const std::vector<KernelPlan>& CudaExecutor::kernels() const { return impl_->plans; }
const std::vector<RealTransfer>& CudaExecutor::transfers() const { return impl_->xfers; }
const std::vector<int32_t>& CudaExecutor::enqueue_order() const { return impl_->order; }
int64_t CudaExecutor::buffer_bytes() const { return impl_->buffer_bytes; }
int32_t CudaExecutor::gpus() const { return impl_->G; }
int32_t CudaExecutor::compute_streams() const {
  return static_cast<int32_t>(impl_->gpus_with_ops.size());
}
int32_t CudaExecutor::copy_streams() const { return static_cast<int32_t>(impl_->pairs.size()); }

}  // namespace gdp::validate

#endif  // GDP_HAVE_CUDA
