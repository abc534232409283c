// Runs one training step of a placed graph for real on this machine's CPU, for `gdp validate`:
// a worker thread per device of the cluster (its compute stream) and a copy thread per ordered
// pair of devices that exchange tensors (the link between them), with the simulator's
// scheduling rules (docs/cost-model.md §2-3) and a real kernel per op: the calibration's kernel
// for its class and size (validate/kernels.h over calib/cpu_kernels.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/simulator.h"
#include "validate/kernels.h"

namespace gdp::validate {

struct ExecOptions {
  QueuePolicy queue_policy = QueuePolicy::fifo;  // order of each device's ready queue
  int64_t max_buffer_bytes = int64_t{4} << 30;   // refuse graphs that need more buffers
  // An idle thread polls for work (yielding the core) this long before it sleeps on its
  // condition variable: a wake-up from sleep costs the OS scheduler's latency.
  double spin_s = 50e-6;
};

// One cross-device tensor copy: output `output` of op `src_op`, sent once to `dst_device` for
// all its consumers there (the simulator's rule), `bytes` = the tensor's largest edge bytes.
struct RealTransfer {
  int32_t src_op = 0, output = 0;
  int32_t src_device = 0, dst_device = 0;
  int64_t bytes = 0;
};

// What one real step recorded. Times in seconds from the step's start (when the source ops
// were handed to the device threads).
struct RealStep {
  double step_s = 0;                             // the last op's end
  std::vector<double> op_start_s, op_end_s;      // (num_ops)
  std::vector<double> xfer_start_s, xfer_end_s;  // (num_transfers), index as transfers()
};

class CpuExecutor {
 public:
  // Plans the kernels and transfers, allocates and fills every buffer and starts the threads.
  // Throws InputError when the placement does not fit the graph or the cluster, or when the
  // buffers would exceed opt.max_buffer_bytes (the message names the largest op).
  CpuExecutor(const Graph& g, const Placement& p, const Cluster& c, const ExecOptions& opt = {});
  ~CpuExecutor();  // stops and joins the threads
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  // One step; the threads and buffers are reused. Not thread-safe (one caller at a time).
  RealStep run_step();

  const std::vector<KernelPlan>& kernels() const;      // (num_ops)
  const std::vector<RealTransfer>& transfers() const;  // (num_transfers)
  int64_t buffer_bytes() const;                        // allocated for kernels and copies
  int32_t device_threads() const;                      // one per device with ops
  int32_t copy_threads() const;                        // one per ordered device pair with transfers

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The buffer bytes a CpuExecutor would allocate: per device the largest kernel workspace of
// its ops, per ordered device pair with transfers a source and a destination buffer of the
// largest transfer. `largest_op` (optional) gets the op with the largest workspace.
int64_t executor_buffer_bytes(const Graph& g, const Placement& p, int32_t num_devices,
                              int32_t* largest_op = nullptr);

}  // namespace gdp::validate
