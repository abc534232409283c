// `gdp validate --backend cuda` (validate/cuda_executor.cpp, validate_cuda) against the host
// double of cuda/bench.h and cuda/kernels.h (tests/host_double/): the enqueue order is
// topological, every cross-device tensor is one copy (peer or staged), every consumer starts
// after its producers (recorded events), the report and trace have every op. Never asserts on
// timings. Built only as test_gpu_tools_host_double (GDP_HOST_DOUBLE_BENCH).
#ifdef GDP_HOST_DOUBLE_BENCH

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "host_double/bench_host.h"
#include "validate/cuda_executor.h"
#include "validate/validate.h"

using namespace gdp;
using namespace gdp::validate;

namespace {

Op make_op(const std::string& name, const std::string& type, double flops, int64_t out_bytes) {
  Op op;
  op.name = name;
  op.type = type;
  op.flops = flops;
  op.bytes_accessed = 3.0 * out_bytes;
  op.outputs.push_back(TensorSpec{{out_bytes / 4}, DType::f32, out_bytes});
  return op;
}

// a (MatMul) -> b (MatMul) -> d (Sum) -> e (Add);  a -> c (Relu) -> d. Placed a, b, e on
// device 0 and c, d on device 1: a->c, b->d and d->e cross devices.
Graph five_ops() {
  Graph g;
  g.name = "five";
  const int64_t kB = 16 * 16 * 4;
  g.add_op(make_op("a", "MatMul", 2.0 * 16 * 16 * 16, kB));
  g.add_op(make_op("b", "MatMul", 2.0 * 16 * 16 * 16, kB));
  g.add_op(make_op("c", "Relu", 16 * 16, kB));
  g.add_op(make_op("d", "Sum", 16 * 16, kB));
  g.add_op(make_op("e", "Add", 16 * 16, kB));
  g.add_edge(0, 0, 1, kB);
  g.add_edge(0, 0, 2, kB);
  g.add_edge(1, 0, 3, kB);
  g.add_edge(2, 0, 3, kB);
  g.add_edge(3, 0, 4, kB);
  g.finalize();
  return g;
}

}  // namespace

TEST_CASE("validate/cuda-host-double/the executor respects dependencies through events",
          "[validate][host-double]") {
  const bool peer = GENERATE(true, false);
  const int gpus = GENERATE(2, 1);  // 1: both cluster devices share the one GPU
  cuda::host_double::set_fake_devices(gpus, peer);
  const Graph g = five_ops();
  const Placement p{{0, 0, 1, 1, 0}};
  const Cluster c = nominal_cpu_cluster(2);
  CudaExecOptions o;
  o.priority = {0, 5, 1, 6, 9};  // c before b: still topological
  CudaExecutor ex(g, p, c, o);
  CHECK(ex.gpus() == gpus);
  CHECK(ex.transfers().size() == 3);
  CHECK(ex.copy_streams() == 2);
  CHECK(ex.enqueue_order() == std::vector<int32_t>{0, 2, 1, 3, 4});
  for (int run = 0; run < 2; ++run) {
    const RealStep r = ex.run_step();
    REQUIRE(r.op_start_s.size() == 5);
    for (int i = 0; i < 5; ++i) {
      CHECK(r.op_start_s[i] >= 0);
      CHECK(r.op_end_s[i] > r.op_start_s[i]);
      CHECK(r.op_end_s[i] <= r.step_s);
    }
    for (const Edge& e : g.edges())
      if (p.device[e.src] == p.device[e.dst]) CHECK(r.op_start_s[e.dst] >= r.op_end_s[e.src]);
    for (size_t x = 0; x < ex.transfers().size(); ++x) {
      const RealTransfer& t = ex.transfers()[x];
      CHECK(r.xfer_start_s[x] >= r.op_end_s[t.src_op]);
      CHECK(r.xfer_end_s[x] > r.xfer_start_s[x]);
    }
    // Each consumer of a copied tensor starts after its copy ends. Times of two
    // GPUs have two origins (a start event per GPU), so they compare only on one GPU; on two,
    // the host double's stream_wait has checked that each wait follows its event's record.
    if (gpus == 1)
      for (size_t x = 0; x < ex.transfers().size(); ++x) {
        const RealTransfer& t = ex.transfers()[x];
        for (const Edge& e : g.edges())
          if (e.src == t.src_op && e.src_output == t.output && p.device[e.dst] == t.dst_device)
            CHECK(r.op_start_s[e.dst] >= r.xfer_end_s[x]);
      }
  }
  const auto n = cuda::host_double::counters();
  CHECK(n.waits >= 2 * 6);  // per run: 3 copies wait on producers, 3 consumers on copies
  if (gpus == 2) CHECK((peer ? n.peer_copies : n.staged_copies) == 6);
}

TEST_CASE("validate/cuda-host-double/validate_cuda reports every class and the trace",
          "[validate][host-double]") {
  cuda::host_double::set_fake_devices(2, true);
  const Graph g = five_ops();
  const Placement p{{0, 0, 1, 1, 0}};
  const Cluster c = nominal_cpu_cluster(2);
  ValidateOptions o;
  o.runs = 3;
  o.warmup = 1;
  const ValidationReport r = validate_cuda(g, p, c, CostModel(), o);
  CHECK(r.backend == "cuda");
  CHECK(r.gpus == 2);
  CHECK(r.step_s.size() == 3);
  CHECK(r.measured_median_s > 0);
  CHECK(r.transfers.size() == 3);
  std::vector<std::string> names;
  for (const ClassComparison& row : r.classes) names.push_back(row.name);
  CHECK(names ==
        std::vector<std::string>{"matmul", "elementwise", "reduction", "copies", "delivery"});
  const SimResult t = real_run_trace(r.median_run, r.transfers, g, p, c);
  CHECK(t.trace.size() == 5 + 3);
  CHECK(report_to_json(r).find("\"backend\": \"cuda\"") != std::string::npos);
}

TEST_CASE("validate/cuda-host-double/a placement off the cluster is an InputError",
          "[validate][host-double]") {
  cuda::host_double::set_fake_devices(2, true);
  const Graph g = five_ops();
  CHECK_THROWS_AS(CudaExecutor(g, Placement{{0, 0, 2, 1, 0}}, nominal_cpu_cluster(2)), InputError);
}

#endif  // GDP_HOST_DOUBLE_BENCH
