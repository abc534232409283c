// Micro-benchmarks of this machine's CPU as a device kind: op samples of every class (GEMMs,
// implicit-GEMM convolutions, element-wise, reductions, softmax, layer norm, transpose, copy),
// the dispatch overhead, the peaks (best GEMM flop/s, best streaming copy bandwidth) and
// copies between two threads' buffers (the CPU devices' links). One thread per device:
// everything is timed single-threaded. Times: warm-up, then the median of repeats.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "calib/fit.h"

namespace gdp::calib {

// tiny: a second or two, for tests; quick: ~10-20 s; full: a few minutes.
enum class BenchSize : uint8_t { tiny, quick, full };
const char* bench_size_name(BenchSize s);

struct TimingSettings {
  double min_batch_s = 1e-3;  // calls per timed batch are doubled until a batch lasts this long
  int warmup_batches = 1;     // after sizing the batch
  int repeats = 5;            // timed batches; the median per call is the time
};
TimingSettings timing_for(BenchSize s);

// Median seconds per call of fn() (sizing runs and warm-up batches are not counted).
double median_time_s(const std::function<void()>& fn, const TimingSettings& ts);

struct CpuBenchOptions {
  BenchSize size = BenchSize::full;
  std::function<void(const std::string&)> progress;  // one line per measurement; may be empty
};

struct CpuBenchResult {
  std::vector<OpSample> ops;       // every class but `other`
  std::vector<CopySample> copies;  // thread-to-thread copies
  double peak_flops = 0;           // best GEMM flop/s observed
  std::string peak_from;           // its label
  double bandwidth_Bps = 0;        // best streaming copy bandwidth (bytes read + written / s)
  std::string bandwidth_from;
  double dram_bandwidth_Bps = 0;  // the copy of the largest arrays (beyond the caches in full)
  double dispatch_s = 0;          // a 1-element add through a kernel table
  double wall_s = 0;              // the whole run
};

CpuBenchResult run_cpu_benchmarks(const CpuBenchOptions& opt);

}  // namespace gdp::calib
