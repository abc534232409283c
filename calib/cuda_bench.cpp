// The GPU micro-benchmark suite (calib/cuda_bench.h): shapes per size, the event-timed harness,
// host and peer copies. Empty without the CUDA backend.
#include "calib/cuda_bench.h"

#ifdef GDP_HAVE_CUDA

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include "calib/cpu_kernels.h"
#include "cuda/bench.h"
#include "cuda/kernels.h"

namespace gdp::calib {

namespace {

using Clock = std::chrono::steady_clock;

// A device buffer of n floats on the current device with deterministic values in [-1, 1].
std::shared_ptr<cuda::DeviceBuffer> dbuf(int64_t n, uint32_t seed = 1) {
  const size_t m = static_cast<size_t>(std::max<int64_t>(n, 1));
  auto b = std::make_shared<cuda::DeviceBuffer>(m);
  std::vector<float> h(m);
  uint32_t x = seed * 2654435761u + 12345u;
  for (float& f : h) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  b->upload(h.data());
  return b;
}

struct Job {
  std::string label;
  OpClass op_class = OpClass::other;
  double flops = 0, bytes = 0;
  std::function<std::function<void()>()> make;  // allocates; returns the timed call
  bool stream = false;                          // a device-to-device copy (bandwidth peak)
};

std::string fmt_count(int64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= (1 << 10) && n % (1 << 10) == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

struct Gemm {
  int64_t M, N, K;
};
struct Rc {
  int64_t R, C;
};

std::vector<Gemm> gemm_shapes(BenchSize s) {
  std::vector<Gemm> v = {{64, 64, 64}, {256, 256, 256}, {1, 1024, 1024}};
  if (s == BenchSize::tiny) return v;
  for (Gemm g : std::vector<Gemm>{{1024, 1024, 1024},
                                  {2048, 2048, 2048},
                                  {4096, 4096, 4096},
                                  {32, 4096, 4096},
                                  {8192, 1024, 1024},
                                  {128, 4096, 256},
                                  {1024, 1024, 64},
                                  {16384, 128, 128},
                                  {512, 512, 512}})
    v.push_back(g);
  if (s == BenchSize::quick) return v;
  for (Gemm g : std::vector<Gemm>{{8192, 8192, 8192},
                                  {8, 8192, 8192},
                                  {4096, 256, 4096},
                                  {96, 96, 96},
                                  {1, 4096, 4096},
                                  {65536, 64, 64},
                                  {64, 64, 65536},
                                  {2048, 32, 256}})
    v.push_back(g);
  return v;
}

std::vector<ConvShape> conv_shapes(BenchSize s) {
  auto c = [](int64_t B, int64_t H, int64_t Ci, int64_t Co, int64_t k, int64_t stride,
              int64_t pad) {
    ConvShape x;
    x.B = B;
    x.H = x.W = H;
    x.Ci = Ci;
    x.Co = Co;
    x.KH = x.KW = k;
    x.stride = stride;
    x.pad = pad;
    return x;
  };
  std::vector<ConvShape> v = {c(1, 16, 8, 8, 3, 1, 1)};
  if (s == BenchSize::tiny) return v;
  for (ConvShape x :
       {c(8, 56, 64, 64, 3, 1, 1), c(8, 28, 128, 128, 3, 1, 1), c(8, 14, 256, 256, 3, 1, 1),
        c(8, 56, 64, 256, 1, 1, 0), c(8, 7, 512, 512, 3, 1, 1), c(8, 224, 3, 64, 7, 2, 3)})
    v.push_back(x);
  if (s == BenchSize::quick) return v;
  for (ConvShape x : {c(32, 56, 64, 64, 3, 1, 1), c(32, 28, 256, 512, 1, 2, 0),
                      c(32, 14, 512, 512, 3, 1, 1), c(1, 28, 96, 96, 5, 1, 2)})
    v.push_back(x);
  return v;
}

std::vector<int64_t> elementwise_sizes(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return {1024, 65536};
    case BenchSize::quick:
      return {1024, 65536, 1 << 20, 16 << 20, 64 << 20};
    case BenchSize::full:
      return {16, 1024, 16384, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  }
  return {};
}

std::vector<Rc> reduction_shapes(BenchSize s) {
  std::vector<Rc> v = {{64, 256}};
  if (s == BenchSize::tiny) return v;
  for (Rc x : std::vector<Rc>{{1024, 1024}, {4096, 4096}, {65536, 128}, {16, 65536}, {8, 64}})
    v.push_back(x);
  if (s == BenchSize::quick) return v;
  for (Rc x : std::vector<Rc>{{16384, 4096}, {262144, 256}, {1, 1 << 20}, {50000, 128}})
    v.push_back(x);
  return v;
}

std::vector<Rc> transpose_shapes(BenchSize s) {
  std::vector<Rc> v = {{256, 256}};
  if (s == BenchSize::tiny) return v;
  for (Rc x : std::vector<Rc>{{4096, 4096}, {8192, 1024}, {16, 65536}}) v.push_back(x);
  if (s == BenchSize::quick) return v;
  for (Rc x : std::vector<Rc>{{16384, 8192}}) v.push_back(x);
  return v;
}

// Device-to-device copy sizes (floats).
std::vector<int64_t> d2d_sizes(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return {1024, 262144};
    case BenchSize::quick:
      return {1024, 262144, 4 << 20, 64 << 20};
    case BenchSize::full:
      return {1024, 65536, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  }
  return {};
}

// Host<->device and peer copy sizes in bytes.
std::vector<int64_t> link_sizes(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return {4096, 262144, 4 << 20};
    case BenchSize::quick:
      return {64, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
    case BenchSize::full:
      return {64, 1024, 16384, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  }
  return {};
}

int as_int(int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max())
    throw std::runtime_error(std::string("cuda bench: ") + what + " too large");
  return static_cast<int>(v);
}

std::vector<Job> make_jobs(BenchSize s) {
  std::vector<Job> jobs;
  const double f4 = 4.0;
  // The launch overhead as the fit sees it: a 1-element scale, back to back.
  {
    Job j;
    j.label = "scale n=1";
    j.op_class = OpClass::elementwise;
    j.flops = 1;
    j.bytes = 8;
    j.make = [] {
      auto x = dbuf(1), o = dbuf(1, 2);
      return std::function<void()>([=] { cuda::scale_forward(o->data(), x->data(), 0.5f, 1); });
    };
    jobs.push_back(std::move(j));
  }
  for (Gemm g : gemm_shapes(s)) {
    Job j;
    j.label =
        "matmul " + std::to_string(g.M) + "x" + std::to_string(g.N) + "x" + std::to_string(g.K);
    j.op_class = OpClass::matmul;
    j.flops = 2.0 * g.M * g.N * g.K;
    j.bytes = f4 * (g.M * g.K + g.K * g.N + g.M * g.N);
    j.make = [g] {
      auto A = dbuf(g.M * g.K), B = dbuf(g.K * g.N, 2), C = dbuf(g.M * g.N, 3);
      const int M = as_int(g.M, "M"), N = as_int(g.N, "N"), K = as_int(g.K, "K");
      return std::function<void()>(
          [=] { cuda::gemm(C->data(), A->data(), B->data(), M, N, K, false, false); });
    };
    jobs.push_back(std::move(j));
  }
  // Convolutions as the GEMM of their im2col shape (the im2col itself is not run):
  // out (B*Ho*Wo, Co) = col (B*Ho*Wo, KH*KW*Ci) w (KH*KW*Ci, Co); flops and bytes of the conv.
  for (ConvShape c : conv_shapes(s)) {
    Job j;
    j.label = "conv B" + std::to_string(c.B) + " " + std::to_string(c.H) + "x" +
              std::to_string(c.W) + "x" + std::to_string(c.Ci) + "->" + std::to_string(c.Co) +
              " k" + std::to_string(c.KH) + " s" + std::to_string(c.stride) + " (im2col gemm)";
    j.op_class = OpClass::conv;
    const double out = static_cast<double>(c.B * c.Ho() * c.Wo() * c.Co);
    j.flops = 2.0 * out * c.KH * c.KW * c.Ci;
    j.bytes = f4 * (static_cast<double>(c.B * c.H * c.W * c.Ci) + c.KH * c.KW * c.Ci * c.Co + out);
    j.make = [c] {
      const int64_t M = c.B * c.Ho() * c.Wo(), N = c.Co, K = c.KH * c.KW * c.Ci;
      auto col = dbuf(M * K), w = dbuf(K * N, 2), o = dbuf(M * N, 3);
      const int m = as_int(M, "M"), n = as_int(N, "N"), k = as_int(K, "K");
      return std::function<void()>(
          [=] { cuda::gemm(o->data(), col->data(), w->data(), m, n, k, false, false); });
    };
    jobs.push_back(std::move(j));
  }
  for (int64_t n : elementwise_sizes(s)) {
    const double d = static_cast<double>(n);
    const int ni = as_int(n, "n");
    Job j;
    j.label = "add n=" + fmt_count(n);
    j.op_class = OpClass::elementwise;
    j.flops = d;
    j.bytes = 12 * d;
    j.make = [n, ni] {
      auto a = dbuf(n), b = dbuf(n, 2), o = dbuf(n, 3);
      return std::function<void()>(
          [=] { cuda::add_forward(o->data(), a->data(), b->data(), 1, ni, false); });
    };
    jobs.push_back(std::move(j));
    Job r;
    r.label = "relu n=" + fmt_count(n);
    r.op_class = OpClass::elementwise;
    r.flops = d;
    r.bytes = 8 * d;
    r.make = [n] {
      auto x = dbuf(n), o = dbuf(n, 2);
      return std::function<void()>(
          [=] { cuda::relu_forward(o->data(), x->data(), static_cast<size_t>(n)); });
    };
    jobs.push_back(std::move(r));
    Job g;
    g.label = "gelu n=" + fmt_count(n);
    g.op_class = OpClass::elementwise;
    g.flops = 8 * d;
    g.bytes = 8 * d;
    g.make = [n] {
      auto x = dbuf(n), o = dbuf(n, 2);
      return std::function<void()>(
          [=] { cuda::gelu_forward(o->data(), x->data(), static_cast<size_t>(n)); });
    };
    jobs.push_back(std::move(g));
    Job k;
    k.label = "scale n=" + fmt_count(n);
    k.op_class = OpClass::elementwise;
    k.flops = d;
    k.bytes = 8 * d;
    k.make = [n] {
      auto x = dbuf(n), o = dbuf(n, 2);
      return std::function<void()>(
          [=] { cuda::scale_forward(o->data(), x->data(), 0.5f, static_cast<size_t>(n)); });
    };
    jobs.push_back(std::move(k));
  }
  for (Rc rc : reduction_shapes(s)) {
    const double d = static_cast<double>(rc.R * rc.C);
    const std::string shape = std::to_string(rc.R) + "x" + std::to_string(rc.C);
    const int R = as_int(rc.R, "R"), C = as_int(rc.C, "C");
    Job j;
    j.label = "row_sum " + shape;
    j.op_class = OpClass::reduction;
    j.flops = d;
    j.bytes = 4 * (d + static_cast<double>(rc.R));
    j.make = [rc, R, C] {
      auto x = dbuf(rc.R * rc.C), o = dbuf(rc.R, 2);
      return std::function<void()>([=] { cuda::sum_forward(o->data(), x->data(), R, C); });
    };
    jobs.push_back(std::move(j));
    Job k;
    k.label = "softmax " + shape;
    k.op_class = OpClass::reduction;
    k.flops = 5 * d;
    k.bytes = 8 * d;
    k.make = [rc, R, C] {
      auto x = dbuf(rc.R * rc.C), o = dbuf(rc.R * rc.C, 2);
      return std::function<void()>([=] { cuda::softmax_forward(o->data(), x->data(), R, C); });
    };
    jobs.push_back(std::move(k));
    Job l;
    l.label = "layer_norm " + shape;
    l.op_class = OpClass::reduction;
    l.flops = 8 * d;
    l.bytes = 8 * d + 8 * static_cast<double>(rc.C);
    l.make = [rc, R, C] {
      auto x = dbuf(rc.R * rc.C), o = dbuf(rc.R * rc.C, 2);
      auto g = dbuf(rc.C, 3), b = dbuf(rc.C, 4), mean = dbuf(rc.R, 5), rstd = dbuf(rc.R, 6);
      return std::function<void()>([=] {
        cuda::layernorm_forward(o->data(), mean->data(), rstd->data(), x->data(), g->data(),
                                b->data(), R, C);
      });
    };
    jobs.push_back(std::move(l));
  }
  for (Rc rc : transpose_shapes(s)) {
    Job j;
    j.label = "transpose " + std::to_string(rc.R) + "x" + std::to_string(rc.C);
    j.op_class = OpClass::memory;
    j.bytes = 8.0 * static_cast<double>(rc.R * rc.C);
    const int R = as_int(rc.R, "R"), C = as_int(rc.C, "C");
    j.make = [rc, R, C] {
      auto x = dbuf(rc.R * rc.C), o = dbuf(rc.R * rc.C, 2);
      return std::function<void()>(
          [=] { cuda::swap_axes(o->data(), x->data(), 1, R, 1, C, 1, false); });
    };
    jobs.push_back(std::move(j));
  }
  for (int64_t n : d2d_sizes(s)) {
    Job j;
    j.label = "d2d copy " + fmt_count(n * 4) + "B";
    j.op_class = OpClass::memory;
    j.bytes = 8.0 * static_cast<double>(n);
    j.stream = true;
    j.make = [n] {
      auto x = dbuf(n), o = dbuf(n, 2);
      return std::function<void()>([=] {
        cuda::copy_d2d(cuda::Stream::default_stream(cuda::get_device()), o->data(), x->data(),
                       static_cast<size_t>(n) * 4);
      });
    };
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// Median seconds per call of fn() on `s` by events: the calls per timed batch are doubled until
// a batch lasts ts.min_batch_s, then warm-up batches, then ts.repeats timed batches.
double gpu_median_time_s(const std::function<void()>& fn, const cuda::Stream& s,
                         const TimingSettings& ts) {
  cuda::Event e0(s.device()), e1(s.device());
  auto batch = [&](int64_t k) {
    e0.record(s);
    for (int64_t i = 0; i < k; ++i) fn();
    e1.record(s);
    e1.synchronize();
    return cuda::elapsed_s(e0, e1);
  };
  fn();  // first call: module loading, cuBLAS heuristics
  s.synchronize();
  int64_t k = 1;
  for (;;) {
    const double t = batch(k);
    if (t >= ts.min_batch_s || k >= (int64_t{1} << 20)) break;
    const double want = t > 0 ? ts.min_batch_s / t * 1.2 : 16.0;
    k = static_cast<int64_t>(static_cast<double>(k) * std::clamp(want, 2.0, 16.0));
  }
  for (int w = 0; w < ts.warmup_batches; ++w) batch(k);
  std::vector<double> per_call;
  for (int r = 0; r < std::max(1, ts.repeats); ++r)
    per_call.push_back(batch(k) / static_cast<double>(k));
  std::nth_element(per_call.begin(), per_call.begin() + per_call.size() / 2, per_call.end());
  return per_call[per_call.size() / 2];
}

int copy_repeats(BenchSize s) { return s == BenchSize::tiny ? 3 : s == BenchSize::quick ? 9 : 21; }

// One transfer at a time (the latency is part of what is measured): median of repeats after
// three warm-ups, each timed by events around the single copy on `s`.
CopySample time_copy(const std::string& label, double bytes, const std::function<void()>& copy,
                     const cuda::Stream& s, BenchSize size) {
  cuda::Event e0(s.device()), e1(s.device());
  std::vector<double> times;
  const int warmup = 3, repeats = copy_repeats(size);
  for (int r = 0; r < warmup + repeats; ++r) {
    e0.record(s);
    copy();
    e1.record(s);
    e1.synchronize();
    if (r >= warmup) times.push_back(cuda::elapsed_s(e0, e1));
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  CopySample c;
  c.label = label;
  c.bytes = bytes;
  c.time_s = times[times.size() / 2];
  return c;
}

void copy_line(const CudaBenchOptions& opt, const CopySample& c) {
  if (!opt.progress) return;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%-30s %12.3f us  %8.2f GB/s", c.label.c_str(), c.time_s * 1e6,
                c.time_s > 0 ? c.bytes / c.time_s / 1e9 : 0.0);
  opt.progress(buf);
}

struct PinnedBuffer {
  void* p = nullptr;
  explicit PinnedBuffer(size_t bytes) : p(cuda::host_alloc_pinned(bytes)) {}
  ~PinnedBuffer() { cuda::host_free_pinned(p); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
};
struct DeviceBytes {
  void* p = nullptr;
  DeviceBytes(int device, size_t bytes) : p(cuda::device_alloc_on(device, bytes)) {}
  ~DeviceBytes() { cuda::device_free_on(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
};

}  // namespace

CudaBenchResult run_cuda_benchmarks(const CudaBenchOptions& opt) {
  const auto t_start = Clock::now();
  CudaBenchResult res;
  res.gpus = cuda::device_count();
  if (res.gpus < 1) throw std::runtime_error("cuda bench: no GPU is visible");
  if (opt.device < 0 || opt.device >= res.gpus)
    throw std::runtime_error("cuda bench: no GPU " + std::to_string(opt.device));
  res.device = opt.device;
  for (int d = 0; d < res.gpus; ++d) {
    const cuda::DeviceProperties p = cuda::device_properties(d);
    res.names.push_back(p.name);
    res.memory_bytes.push_back(p.memory_bytes);
    if (d == opt.device) {
      res.sm_count = p.sm_count;
      res.sm_clock_hz = p.sm_clock_hz;
    }
  }
  const int saved = cuda::get_device();
  cuda::set_device(opt.device);
  try {
    const cuda::Stream s = cuda::Stream::default_stream(opt.device);
    const TimingSettings ts = timing_for(opt.size);
    std::vector<Job> jobs = make_jobs(opt.size);
    for (size_t i = 0; i < jobs.size(); ++i) {
      const Job& j = jobs[i];
      OpSample smp;
      smp.label = j.label;
      smp.op_class = j.op_class;
      smp.flops = j.flops;
      smp.bytes = j.bytes;
      {
        std::function<void()> run = j.make();  // buffers freed at the end of the scope
        smp.time_s = gpu_median_time_s(run, s, ts);
      }
      res.ops.push_back(smp);
      if (i == 0) res.launch_s = smp.time_s;  // the 1-element scale
      if (j.op_class == OpClass::matmul && smp.time_s > 0 &&
          j.flops / smp.time_s > res.peak_flops) {
        res.peak_flops = j.flops / smp.time_s;
        res.peak_from = j.label;
      }
      if (j.stream && smp.time_s > 0 && j.bytes / smp.time_s > res.bandwidth_Bps) {
        res.bandwidth_Bps = j.bytes / smp.time_s;
        res.bandwidth_from = j.label;
      }
      if (opt.progress) {
        char buf[220];
        std::snprintf(buf, sizeof buf, "[%zu/%zu] %-36s %12.3f us  %9.2f GFLOP/s  %8.2f GB/s",
                      i + 1, jobs.size(), j.label.c_str(), smp.time_s * 1e6,
                      smp.time_s > 0 ? j.flops / smp.time_s / 1e9 : 0.0,
                      smp.time_s > 0 ? j.bytes / smp.time_s / 1e9 : 0.0);
        opt.progress(buf);
      }
    }

    // Host <-> device copies with pinned host memory.
    const std::vector<int64_t> sizes = link_sizes(opt.size);
    const int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    {
      const cuda::Stream cs(opt.device);
      PinnedBuffer host(static_cast<size_t>(largest));
      DeviceBytes dev(opt.device, static_cast<size_t>(largest));
      for (int64_t b : sizes) {
        const size_t n = static_cast<size_t>(b);
        res.h2d.push_back(time_copy(
            "h2d " + fmt_count(b) + "B", static_cast<double>(b),
            [&] { cuda::copy_h2d(cs, dev.p, host.p, n); }, cs, opt.size));
        copy_line(opt, res.h2d.back());
        res.d2h.push_back(time_copy(
            "d2h " + fmt_count(b) + "B", static_cast<double>(b),
            [&] { cuda::copy_d2h(cs, host.p, dev.p, n); }, cs, opt.size));
        copy_line(opt, res.d2h.back());
      }
    }

    // Peer copies between every ordered pair (a stream on the source GPU).
    if (opt.peers && res.gpus >= 2) {
      for (int a = 0; a < res.gpus; ++a)
        for (int b = 0; b < res.gpus; ++b)
          if (a != b) {
            cuda::enable_peer_access(a, b);
            cuda::enable_peer_access(b, a);
          }
      for (int a = 0; a < res.gpus; ++a)
        for (int b = 0; b < res.gpus; ++b) {
          if (a == b) continue;
          PeerCopies pc;
          pc.src = a;
          pc.dst = b;
          pc.direct = cuda::peer_enabled(a, b);
          const cuda::Stream cs(a);
          DeviceBytes src(a, static_cast<size_t>(largest)), dst(b, static_cast<size_t>(largest));
          std::unique_ptr<PinnedBuffer> staging;
          if (!pc.direct) staging = std::make_unique<PinnedBuffer>(static_cast<size_t>(largest));
          for (int64_t bytes : sizes) {
            const size_t n = static_cast<size_t>(bytes);
            void* stage = staging ? staging->p : nullptr;
            pc.copies.push_back(time_copy(
                "gpu" + std::to_string(a) + "->gpu" + std::to_string(b) + " " + fmt_count(bytes) +
                    "B" + (pc.direct ? "" : " (via host)"),
                static_cast<double>(bytes),
                [&] { cuda::copy_peer(cs, dst.p, b, src.p, a, n, stage); }, cs, opt.size));
            copy_line(opt, pc.copies.back());
          }
          res.peers.push_back(std::move(pc));
        }
    }
  } catch (...) {
    try {
      cuda::set_device(saved);
    } catch (...) {
    }
    throw;
  }
  cuda::set_device(saved);
  res.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  return res;
}

}  // namespace gdp::calib

#endif  // GDP_HAVE_CUDA
