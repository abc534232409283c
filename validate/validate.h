// `gdp validate`: runs a placed graph for real on this machine (validate/cpu_executor.h) and
// sets the measured step time beside the simulator's prediction for the same graph, cluster
// and device profile, in total and per op class. Design and figures: docs/validation.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"
#include "validate/cpu_executor.h"

namespace gdp::validate {

// "cpu" passes. "cuda" passes in a CUDA build with a visible GPU; without a CUDA build or without
// a visible GPU it is an InputError saying so (like rl::check_device). Anything else is an
// InputError naming the backends.
void check_backend(const std::string& backend);

// The graph with every op's flops, bytes accessed, output, parameter, optimizer and temporary
// bytes and every edge's bytes divided by `scale` (>= 1; rounded to whole bytes), so that a
// large workload runs on a laptop. Measured op times cannot be scaled and are dropped when
// scale != 1. The name gets a "/scale" suffix then. Throws InputError for scale < 1 or NaN.
Graph scale_graph(const Graph& g, double scale);

// A cluster of `devices` CPU "devices" (kind "cpu", one core each) joined pairwise by memcpy
// "links", with nominal laptop figures (not measured: run `gdp calibrate` for real ones):
// 50 GFLOP/s fp32 peak, 20 GB/s memory bandwidth, 8 GiB memory, 2 us launch overhead, links
// of 10 GB/s per direction and 1 us latency.
Cluster nominal_cpu_cluster(int32_t devices);

struct ValidateOptions {
  int32_t runs = 5;    // timed runs; the step time is their median
  int32_t warmup = 1;  // untimed runs before them
  ExecOptions exec;    // ready-queue policy (also used for the prediction), buffer limit
};

// Measured against predicted time of one op class (or of the transfers).
struct ClassComparison {
  // An op class ("matmul", ...): the sum of its ops' median real durations against the sum
  // of the simulator's op times. "copies": each transfer's memcpy against bytes / the route's
  // bottleneck bandwidth. "delivery": each transfer's time from its producer's end to the
  // tensor's arrival (waiting, latency, copy), real against simulated.
  std::string name;
  int32_t count = 0;  // ops (transfers) in the row
  double measured_s = 0;
  double predicted_s = 0;
  double rel_error() const;  // (predicted - measured) / measured; NaN when measured is 0
};

struct ValidationReport {
  std::string graph_name;
  int32_t ops = 0;
  int32_t devices = 0;         // of the cluster
  std::vector<double> step_s;  // (runs) measured step time of each timed run
  double measured_median_s = 0, measured_min_s = 0, measured_max_s = 0;
  double predicted_s = 0;       // the simulator's step time (see predicted_valid)
  bool predicted_valid = true;  // false: sim.reason says why (out of memory still predicts)
  double rel_error = 0;         // (predicted - measured median) / measured median
  std::vector<ClassComparison> classes;  // op classes present, in declaration order, then
                                         // "copies" and "delivery" when there are transfers
  std::vector<RealTransfer> transfers;   // of the real run
  RealStep median_run;                   // the timed run whose step time is the median
  SimResult sim;                         // the prediction, with its trace
  std::string backend = "cpu";           // of the real run: "cpu" or "cuda"
  int32_t device_threads = 0;            // of the real run: one per device with ops (cuda: one
                                         // compute stream per GPU with ops)
  int32_t copy_threads = 0;              // one per ordered device pair with transfers (cuda:
                                         // copy streams)
  int32_t gpus = 0;                      // cuda: GPUs used (cluster device d on GPU d % gpus)
  int64_t buffer_bytes = 0;              // buffers of the real run
  unsigned hardware_threads = 0;         // std::thread::hardware_concurrency()
};

// Runs g (placed by p on the devices of c) `opt.warmup + opt.runs` times on the CPU backend and
// simulates it once with `cost`. Throws InputError when the placement does not fit g or c, or
// the buffers exceed the limit; an invalid prediction (split colocation group) is reported,
// not thrown.
ValidationReport validate_cpu(const Graph& g, const Placement& p, const Cluster& c,
                              const CostModel& cost, const ValidateOptions& opt);

// The same on this machine's GPUs (validate/cuda_executor.h): device d of the cluster runs on
// GPU d % (visible GPUs); the host enqueues the ops in the simulator's start order (made
// topological). opt.exec.max_buffer_bytes limits the device buffers; the queue policy and spin
// apply to the prediction only. Throws InputError without a CUDA build or a visible GPU.
ValidationReport validate_cuda(const Graph& g, const Placement& p, const Cluster& c,
                               const CostModel& cost, const ValidateOptions& opt);

// The real run as a SimResult whose trace has the simulator's rows and names: an event per op
// on its device's row, an event per copy on the row of the first link of its route, named
// "OP:OUTPUT -> DEVICE" like the simulator's transfers. Write it with trace_to_chrome_json.
SimResult real_run_trace(const RealStep& r, const std::vector<RealTransfer>& transfers,
                         const Graph& g, const Placement& p, const Cluster& c);

// The report as JSON (measured, predicted, errors, per-class rows; no traces).
std::string report_to_json(const ValidationReport& r);

}  // namespace gdp::validate
