// The CPU micro-benchmark suite: shapes per size, the timing harness, the thread-to-thread
// copy ping-pong.
#include "calib/cpu_bench.h"

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "calib/cpu_kernels.h"

namespace gdp::calib {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A buffer of n floats with deterministic values in [-1, 1] (every page touched).
std::shared_ptr<std::vector<float>> buffer(int64_t n, uint32_t seed = 1) {
  auto v = std::make_shared<std::vector<float>>(static_cast<size_t>(std::max<int64_t>(n, 1)));
  uint32_t x = seed * 2654435761u + 12345u;
  for (float& f : *v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return v;
}

// One measurement: what the cost model sees and how to build the timed call (buffers are
// allocated by make(), outside the timing).
struct Job {
  std::string label;
  OpClass op_class = OpClass::other;
  double flops = 0, bytes = 0;
  std::function<std::function<void()>()> make;
  bool stream = false;  // a streaming copy: counts towards the bandwidth peak
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
  std::vector<Gemm> v = {{16, 16, 16}, {64, 64, 64}, {128, 128, 128}, {1, 256, 256}};
  if (s == BenchSize::tiny) return v;
  for (Gemm g : std::vector<Gemm>{{256, 256, 256},
                                  {512, 512, 512},
                                  {32, 1024, 1024},
                                  {1, 1024, 1024},
                                  {512, 64, 512},
                                  {128, 4096, 256},
                                  {1024, 1024, 64},
                                  {2048, 32, 256}})
    v.push_back(g);
  if (s == BenchSize::quick) return v;
  for (Gemm g : std::vector<Gemm>{{1024, 1024, 1024},
                                  {8, 4096, 4096},
                                  {2048, 256, 2048},
                                  {96, 96, 96},
                                  {768, 768, 768},
                                  {1, 4096, 1024},
                                  {4096, 4096, 16},
                                  {64, 64, 8192}})
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
  std::vector<ConvShape> v = {c(1, 8, 4, 8, 3, 1, 1), c(1, 16, 8, 8, 1, 1, 0)};
  if (s == BenchSize::tiny) return v;
  for (ConvShape x :
       {c(1, 56, 64, 64, 3, 1, 1), c(1, 28, 128, 128, 3, 1, 1), c(1, 14, 256, 256, 3, 1, 1),
        c(1, 56, 64, 256, 1, 1, 0), c(1, 7, 512, 512, 3, 1, 1), c(2, 32, 3, 32, 3, 1, 1),
        c(1, 112, 3, 64, 7, 2, 3), c(4, 16, 32, 32, 3, 1, 1)})
    v.push_back(x);
  if (s == BenchSize::quick) return v;
  for (ConvShape x :
       {c(4, 56, 64, 64, 3, 1, 1), c(1, 28, 256, 512, 1, 2, 0), c(1, 14, 512, 512, 3, 1, 1),
        c(8, 16, 32, 32, 3, 1, 1), c(1, 224, 3, 64, 7, 2, 3), c(2, 28, 96, 96, 5, 1, 2)})
    v.push_back(x);
  return v;
}

std::vector<int64_t> elementwise_sizes(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return {1, 1024, 65536};
    case BenchSize::quick:
      return {1, 16, 1024, 16384, 262144, 4 << 20};
    case BenchSize::full:
      return {1, 16, 256, 4096, 65536, 1 << 20, 4 << 20, 16 << 20};
  }
  return {};
}

std::vector<Rc> reduction_shapes(BenchSize s) {
  std::vector<Rc> v = {{4, 64}, {64, 256}};
  if (s == BenchSize::tiny) return v;
  for (Rc x : std::vector<Rc>{{1, 16}, {16, 1024}, {256, 1024}, {1024, 4096}, {4096, 128}})
    v.push_back(x);
  if (s == BenchSize::quick) return v;
  for (Rc x : std::vector<Rc>{{2048, 4096}, {32768, 512}, {8, 65536}, {1, 1 << 20}}) v.push_back(x);
  return v;
}

std::vector<Rc> transpose_shapes(BenchSize s) {
  std::vector<Rc> v = {{64, 64}};
  if (s == BenchSize::tiny) return v;
  for (Rc x : std::vector<Rc>{{256, 256}, {1024, 1024}, {2048, 512}, {16, 4096}}) v.push_back(x);
  if (s == BenchSize::quick) return v;
  for (Rc x : std::vector<Rc>{{4096, 4096}, {8192, 1024}}) v.push_back(x);
  return v;
}

// Copy sizes (floats); the largest is the DRAM figure (the L3 of a server CPU can hold
// hundreds of MiB: full mode copies 1 GiB arrays).
std::vector<int64_t> copy_sizes(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return {1024, 262144};
    case BenchSize::quick:
      return {1024, 65536, 262144, 4 << 20, 128 << 20};
    case BenchSize::full:
      return {1024, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  }
  return {};
}

// Thread-to-thread copy sizes in bytes.
std::vector<int64_t> link_sizes(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return {4096, 262144, 4 << 20};
    case BenchSize::quick:
      return {64, 4096, 65536, 1 << 20, 16 << 20};
    case BenchSize::full:
      return {64, 1024, 16384, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  }
  return {};
}

std::vector<Job> make_jobs(BenchSize s) {
  std::vector<Job> jobs;
  const double f4 = 4.0;  // bytes per float
  // Dispatch: a 1-element add through a table of kernels (what an executor does per op).
  {
    Job j;
    j.label = "dispatch add n=1";
    j.op_class = OpClass::elementwise;
    j.flops = 1;
    j.bytes = 12;
    j.make = [] {
      auto a = buffer(1), b = buffer(1, 2), o = buffer(1, 3);
      using Kernel = void (*)(float*, const float*, const float*, int64_t);
      static Kernel table[] = {add};
      static volatile int which = 0;
      return std::function<void()>([a, b, o] { table[which](o->data(), a->data(), b->data(), 1); });
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
      auto A = buffer(g.M * g.K), B = buffer(g.K * g.N, 2), C = buffer(g.M * g.N, 3);
      return std::function<void()>([=] { gemm(C->data(), A->data(), B->data(), g.M, g.N, g.K); });
    };
    jobs.push_back(std::move(j));
  }
  for (ConvShape c : conv_shapes(s)) {
    Job j;
    j.label = "conv B" + std::to_string(c.B) + " " + std::to_string(c.H) + "x" +
              std::to_string(c.W) + "x" + std::to_string(c.Ci) + "->" + std::to_string(c.Co) +
              " k" + std::to_string(c.KH) + " s" + std::to_string(c.stride);
    j.op_class = OpClass::conv;
    const double out = static_cast<double>(c.B * c.Ho() * c.Wo() * c.Co);
    j.flops = 2.0 * out * c.KH * c.KW * c.Ci;
    j.bytes = f4 * (static_cast<double>(c.B * c.H * c.W * c.Ci) + c.KH * c.KW * c.Ci * c.Co + out);
    j.make = [c] {
      auto in = buffer(c.B * c.H * c.W * c.Ci), w = buffer(c.KH * c.KW * c.Ci * c.Co, 2);
      auto col = buffer(c.col_elements(), 3), out = buffer(c.B * c.Ho() * c.Wo() * c.Co, 4);
      return std::function<void()>(
          [=] { conv2d_im2col(out->data(), col->data(), in->data(), w->data(), c); });
    };
    jobs.push_back(std::move(j));
  }
  struct Unary {
    const char* name;
    void (*fn)(float*, const float*, int64_t);
    double flops_per_element;  // the graph builders' convention (datasets/builder.h)
  };
  for (int64_t n : elementwise_sizes(s)) {
    const double d = static_cast<double>(n);
    Job j;
    j.label = "add n=" + fmt_count(n);
    j.op_class = OpClass::elementwise;
    j.flops = d;
    j.bytes = 12 * d;
    j.make = [n] {
      auto a = buffer(n), b = buffer(n, 2), o = buffer(n, 3);
      return std::function<void()>([=] { add(o->data(), a->data(), b->data(), n); });
    };
    jobs.push_back(std::move(j));
    for (Unary u : {Unary{"relu", relu, 1}, Unary{"tanh", tanh_op, 4}, Unary{"gelu", gelu, 8}}) {
      if (n == 1) continue;
      Job k;
      k.label = std::string(u.name) + " n=" + fmt_count(n);
      k.op_class = OpClass::elementwise;
      k.flops = u.flops_per_element * d;
      k.bytes = 8 * d;
      k.make = [n, u] {
        auto x = buffer(n), o = buffer(n, 2);
        return std::function<void()>([=] { u.fn(o->data(), x->data(), n); });
      };
      jobs.push_back(std::move(k));
    }
  }
  for (Rc rc : reduction_shapes(s)) {
    const double d = static_cast<double>(rc.R * rc.C);
    const std::string shape = std::to_string(rc.R) + "x" + std::to_string(rc.C);
    Job j;
    j.label = "row_sum " + shape;
    j.op_class = OpClass::reduction;
    j.flops = d;
    j.bytes = 4 * (d + static_cast<double>(rc.R));
    j.make = [rc] {
      auto x = buffer(rc.R * rc.C), o = buffer(rc.R, 2);
      return std::function<void()>([=] { row_sum(o->data(), x->data(), rc.R, rc.C); });
    };
    jobs.push_back(std::move(j));
    Job k;
    k.label = "softmax " + shape;
    k.op_class = OpClass::reduction;
    k.flops = 5 * d;
    k.bytes = 8 * d;
    k.make = [rc] {
      auto x = buffer(rc.R * rc.C), o = buffer(rc.R * rc.C, 2);
      return std::function<void()>([=] { softmax(o->data(), x->data(), rc.R, rc.C); });
    };
    jobs.push_back(std::move(k));
    Job l;
    l.label = "layer_norm " + shape;
    l.op_class = OpClass::reduction;
    l.flops = 8 * d;
    l.bytes = 8 * d + 8 * static_cast<double>(rc.C);
    l.make = [rc] {
      auto x = buffer(rc.R * rc.C), o = buffer(rc.R * rc.C, 2);
      auto g = buffer(rc.C, 3), b = buffer(rc.C, 4);
      return std::function<void()>(
          [=] { layer_norm(o->data(), x->data(), g->data(), b->data(), rc.R, rc.C); });
    };
    jobs.push_back(std::move(l));
  }
  for (Rc rc : transpose_shapes(s)) {
    Job j;
    j.label = "transpose " + std::to_string(rc.R) + "x" + std::to_string(rc.C);
    j.op_class = OpClass::memory;
    j.bytes = 8.0 * static_cast<double>(rc.R * rc.C);
    j.make = [rc] {
      auto x = buffer(rc.R * rc.C), o = buffer(rc.R * rc.C, 2);
      return std::function<void()>([=] { transpose(o->data(), x->data(), rc.R, rc.C); });
    };
    jobs.push_back(std::move(j));
  }
  for (int64_t n : copy_sizes(s)) {
    Job j;
    j.label = "copy " + fmt_count(n * 4) + "B";
    j.op_class = OpClass::memory;
    j.bytes = 8.0 * static_cast<double>(n);
    j.stream = true;
    j.make = [n] {
      auto x = buffer(n), o = buffer(n, 2);
      return std::function<void()>([=] { copy(o->data(), x->data(), n); });
    };
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// Copies from the main thread's freshly written buffer into a partner thread's buffer, done by
// the partner: the time from the request to the partner's completion flag, as a transfer between
// two CPU devices (threads) would take.
std::vector<CopySample> measure_thread_copies(BenchSize s, const CpuBenchOptions& opt) {
  struct Channel {
    std::atomic<int64_t> request{0}, done{0};
    const char* src = nullptr;
    char* dst = nullptr;
    size_t bytes = 0;
  } ch;
  auto wait_for = [](const std::atomic<int64_t>& a, int64_t v) {
    int spins = 0;
    while (a.load(std::memory_order_acquire) != v)
      if (++spins > 2000) {
        std::this_thread::yield();
        spins = 0;
      }
  };
  std::thread partner([&] {
    int64_t seen = 0;
    for (;;) {
      int spins = 0;
      int64_t r;
      while ((r = ch.request.load(std::memory_order_acquire)) == seen)
        if (++spins > 2000) {
          std::this_thread::yield();
          spins = 0;
        }
      if (r < 0) return;
      seen = r;
      std::memcpy(ch.dst, ch.src, ch.bytes);
      ch.done.store(r, std::memory_order_release);
    }
  });
  const int warmup = 3;
  const int repeats = s == BenchSize::tiny ? 5 : s == BenchSize::quick ? 15 : 31;
  std::vector<CopySample> out;
  int64_t seq = 0;
  for (int64_t bytes : link_sizes(s)) {
    std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes), 0);
    ch.src = src.data();
    ch.dst = dst.data();
    ch.bytes = static_cast<size_t>(bytes);
    std::vector<double> times;
    for (int rep = 0; rep < warmup + repeats; ++rep) {
      std::memset(src.data(), rep & 0x7f, src.size());  // the data is fresh in the sender's cache
      const auto t0 = Clock::now();
      ch.request.store(++seq, std::memory_order_release);
      wait_for(ch.done, seq);
      const double t = seconds_since(t0);
      if (rep >= warmup) times.push_back(t);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    CopySample c;
    c.label = "thread copy " + fmt_count(bytes) + "B";
    c.bytes = static_cast<double>(bytes);
    c.time_s = times[times.size() / 2];
    out.push_back(c);
    if (opt.progress) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%-28s %10.3f us  %8.2f GB/s", c.label.c_str(), c.time_s * 1e6,
                    c.bytes / c.time_s / 1e9);
      opt.progress(buf);
    }
  }
  ch.request.store(-1, std::memory_order_release);
  partner.join();
  return out;
}

}  // namespace

const char* bench_size_name(BenchSize s) {
  switch (s) {
    case BenchSize::tiny:
      return "tiny";
    case BenchSize::quick:
      return "quick";
    case BenchSize::full:
      return "full";
  }
  return "?";
}

TimingSettings timing_for(BenchSize s) {
  TimingSettings t;
  switch (s) {
    case BenchSize::tiny:
      t.min_batch_s = 2e-4;
      t.warmup_batches = 1;
      t.repeats = 3;
      break;
    case BenchSize::quick:
      t.min_batch_s = 5e-3;
      t.warmup_batches = 1;
      t.repeats = 7;
      break;
    case BenchSize::full:
      t.min_batch_s = 2e-2;
      t.warmup_batches = 2;
      t.repeats = 11;
      break;
  }
  return t;
}

double median_time_s(const std::function<void()>& fn, const TimingSettings& ts) {
  auto batch = [&](int64_t k) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < k; ++i) fn();
    return seconds_since(t0);
  };
  int64_t k = 1;
  for (;;) {
    const double t = batch(k);
    if (t >= ts.min_batch_s || k >= (int64_t{1} << 26)) break;
    // Grow towards the target (at most 16x a step, at least 2x).
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

CpuBenchResult run_cpu_benchmarks(const CpuBenchOptions& opt) {
  const auto t_start = Clock::now();
  const int saved_threads = Eigen::nbThreads();
  Eigen::setNbThreads(1);  // one device = one thread
  CpuBenchResult res;
  try {
    const TimingSettings ts = timing_for(opt.size);
    std::vector<Job> jobs = make_jobs(opt.size);
    double largest_stream = -1;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const Job& j = jobs[i];
      std::function<void()> run = j.make();
      OpSample smp;
      smp.label = j.label;
      smp.op_class = j.op_class;
      smp.flops = j.flops;
      smp.bytes = j.bytes;
      smp.time_s = median_time_s(run, ts);
      res.ops.push_back(smp);
      if (i == 0) res.dispatch_s = smp.time_s;
      if (j.op_class == OpClass::matmul && j.flops / smp.time_s > res.peak_flops) {
        res.peak_flops = j.flops / smp.time_s;
        res.peak_from = j.label;
      }
      if (j.stream) {
        const double bw = j.bytes / smp.time_s;
        if (bw > res.bandwidth_Bps) {
          res.bandwidth_Bps = bw;
          res.bandwidth_from = j.label;
        }
        if (j.bytes > largest_stream) {
          largest_stream = j.bytes;
          res.dram_bandwidth_Bps = bw;
        }
      }
      if (opt.progress) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "[%zu/%zu] %-30s %12.3f us  %8.2f GFLOP/s  %8.2f GB/s",
                      i + 1, jobs.size(), j.label.c_str(), smp.time_s * 1e6,
                      j.flops / smp.time_s / 1e9, j.bytes / smp.time_s / 1e9);
        opt.progress(buf);
      }
    }
    res.copies = measure_thread_copies(opt.size, opt);
  } catch (...) {
    Eigen::setNbThreads(saved_threads);
    throw;
  }
  Eigen::setNbThreads(saved_threads);
  res.wall_s = seconds_since(t_start);
  return res;
}

}  // namespace gdp::calib
