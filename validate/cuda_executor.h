// Runs one training step of a placed graph for real on this machine's GPUs, for `gdp validate
// --backend cuda`: device d of the cluster is GPU d % (visible GPUs), its ops run in order on
// that GPU's default stream (where cuda/kernels.h launches), each op a real kernel of its class
// and size (validate/kernels.h's plan: cuBLAS GEMMs for matmul and conv, the library's
// element-wise, reduction, softmax, layer-norm and transpose kernels, device copies), each
// cross-device tensor a copy on a stream per ordered device pair (a peer copy, or a host round
// trip without peer access), dependencies through CUDA events, and every op and copy timed by
// events. Compiled with the CUDA backend only (GDP_HAVE_CUDA); no CUDA type in this header.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "validate/cpu_executor.h"

namespace gdp::validate {

struct CudaExecOptions {
  int64_t max_buffer_bytes = int64_t{4} << 30;  // refuse graphs that need more device buffers
  // Priority of each op in the host's enqueue order (lower first; ties by topological
  // position), e.g. the simulator's start times; empty: topological order. The order is always
  // made topological (a consumer is enqueued after its producers).
  std::vector<double> priority;  // (num_ops) or empty
};

class CudaExecutor {
 public:
  // Plans the kernels and transfers, allocates and fills every device buffer, creates the
  // streams and events. Throws InputError for a placement that does not fit, no visible GPU, or
  // buffers over the limit.
  CudaExecutor(const Graph& g, const Placement& p, const Cluster& c,
               const CudaExecOptions& opt = {});
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // Enqueues one step on every stream and waits for it. Times from the step's start event
  // (recorded on every GPU right after a full synchronisation; GPUs' clocks agree to within
  // the host's recording loop).
  RealStep run_step();

  const std::vector<KernelPlan>& kernels() const;      // (num_ops)
  const std::vector<RealTransfer>& transfers() const;  // (num_transfers)
  const std::vector<int32_t>& enqueue_order() const;   // (num_ops) a topological order
  int64_t buffer_bytes() const;                        // device and pinned buffers
  int32_t gpus() const;                                // GPUs used
  int32_t compute_streams() const;                     // one per GPU with ops
  int32_t copy_streams() const;                        // one per ordered device pair with transfers

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gdp::validate
