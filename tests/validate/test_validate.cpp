// `gdp validate` (validate/): the per-class kernels against plain references, the real run's
// schedule (dependencies, one stream per device, copies for cross-device tensors), its trace,
// the report, and the errors on bad input. Never asserts on timings: the machine is shared.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "datasets/registry.h"
#include "sim/simulator.h"
#include "validate/validate.h"

using namespace gdp;
using namespace gdp::validate;
using Catch::Matchers::Contains;

namespace {

// A cluster JSON with two devices of a custom "cpu" kind joined by one memcpy "link".
const char* kCpuClusterJson = R"({"format": "gdp-cluster", "version": 1, "name": "cpu2-test",
  "devices": [
    {"name": "cpu0", "kind": "cpu", "peak_fp32_tflops": 0.05, "peak_fp16_tflops": 0.05,
     "mem_bandwidth_GBps": 20, "memory_bytes": 8589934592, "launch_overhead_us": 2},
    {"name": "cpu1", "kind": "cpu", "peak_fp32_tflops": 0.05, "peak_fp16_tflops": 0.05,
     "mem_bandwidth_GBps": 20, "memory_bytes": 8589934592, "launch_overhead_us": 2}],
  "links": [{"a": "cpu0", "b": "cpu1", "bandwidth_GBps": 10, "latency_us": 1}]})";

// A profile for the "cpu" kind only (every other kind keeps the defaults).
const char* kCpuProfileJson = R"({"format": "gdp-device-profile", "version": 1, "profiles": [
  {"device_kind": "cpu",
   "compute_efficiency": {"matmul": 0.5, "conv": 0.5, "elementwise": 0.5, "reduction": 0.5,
                          "memory": 0.5, "other": 0.5},
   "memory_efficiency": {"matmul": 0.5, "conv": 0.5, "elementwise": 0.5, "reduction": 0.5,
                         "memory": 0.5, "other": 0.5},
   "use_fp16_peak": false, "roofline_max": true}]})";

Cluster cpu_cluster() { return parse_cluster_json(kCpuClusterJson, "cpu2-test.json"); }

Op make_op(const std::string& name, const std::string& type, double flops, int64_t out_bytes) {
  Op op;
  op.name = name;
  op.type = type;
  op.flops = flops;
  op.bytes_accessed = 3.0 * out_bytes;
  op.outputs.push_back(TensorSpec{{out_bytes / 4}, DType::f32, out_bytes});
  return op;
}

// a (MatMul) -> b (MatMul) -> d (Sum) -> e (Add);  a -> c (Relu) -> d.
// Placed a, b, e on device 0 and c, d on device 1: a->c and b->d cross devices.
Graph small_graph() {
  Graph g;
  g.name = "small";
  const int64_t kB = 64 * 64 * 4;  // a 64x64 float tensor
  g.add_op(make_op("a", "MatMul", 2.0 * 64 * 64 * 64, kB));
  g.add_op(make_op("b", "MatMul", 2.0 * 64 * 64 * 64, kB));
  g.add_op(make_op("c", "Relu", 64 * 64, kB));
  g.add_op(make_op("d", "Sum", 64 * 64, kB));
  g.add_op(make_op("e", "Add", 64 * 64, kB));
  g.add_edge(0, 0, 1, kB);  // a -> b
  g.add_edge(0, 0, 2, kB);  // a -> c (cross)
  g.add_edge(1, 0, 3, kB);  // b -> d (cross)
  g.add_edge(2, 0, 3, kB);  // c -> d
  g.add_edge(3, 0, 4, kB);  // d -> e (cross)
  g.finalize();
  return g;
}

Placement small_placement() { return Placement{{0, 0, 1, 1, 0}}; }

ValidateOptions quick(int32_t runs = 3) {
  ValidateOptions o;
  o.runs = runs;
  o.warmup = 1;
  return o;
}

// The real schedule obeys the data dependencies and runs one op at a time per device.
void check_schedule(const Graph& g, const Placement& p, const std::vector<RealTransfer>& xs,
                    const RealStep& r) {
  const int32_t N = g.num_ops();
  for (int32_t i = 0; i < N; ++i) {
    REQUIRE(r.op_start_s[i] >= 0);
    REQUIRE(r.op_end_s[i] >= r.op_start_s[i]);
    REQUIRE(r.step_s >= r.op_end_s[i]);
  }
  for (const Edge& e : g.edges()) {
    INFO("edge " << g.op(e.src).name << " -> " << g.op(e.dst).name);
    REQUIRE(r.op_start_s[e.dst] >= r.op_end_s[e.src]);
    if (p.device[e.src] == p.device[e.dst]) continue;
    // The consumer also waits for the copy of the tensor to its device.
    bool found = false;
    for (size_t x = 0; x < xs.size(); ++x) {
      if (xs[x].src_op != e.src || xs[x].output != e.src_output ||
          xs[x].dst_device != p.device[e.dst])
        continue;
      found = true;
      REQUIRE(r.xfer_start_s[x] >= r.op_end_s[e.src]);
      REQUIRE(r.xfer_end_s[x] >= r.xfer_start_s[x]);
      REQUIRE(r.op_start_s[e.dst] >= r.xfer_end_s[x]);
    }
    REQUIRE(found);
  }
  // One compute stream per device: the ops of a device do not overlap.
  std::vector<std::vector<std::pair<double, double>>> by_dev;
  for (int32_t i = 0; i < N; ++i) {
    if (p.device[i] >= static_cast<int32_t>(by_dev.size())) by_dev.resize(p.device[i] + 1);
    by_dev[p.device[i]].push_back({r.op_start_s[i], r.op_end_s[i]});
  }
  for (auto& v : by_dev) {
    std::sort(v.begin(), v.end());
    for (size_t k = 1; k < v.size(); ++k) REQUIRE(v[k].first >= v[k - 1].second);
  }
}

}  // namespace

TEST_CASE("validate/kernels: a GEMM of the op's flops, streams of the op's bytes", "[validate]") {
  KernelPlan g = plan_kernel(OpClass::matmul, 2.0 * 64 * 64 * 64, 1e6);
  CHECK(g.kind == KernelKind::gemm);
  CHECK(g.m == 64);
  CHECK(g.n == 64);
  CHECK(g.k == 64);
  CHECK(g.flops() == 2.0 * 64 * 64 * 64);
  // Not a cube: M = N = floor(cbrt), K carries the rest (within one part in M*N).
  KernelPlan r = plan_kernel(OpClass::conv, 1e9, 0);
  CHECK(r.kind == KernelKind::gemm);
  CHECK(std::abs(r.flops() - 1e9) / 1e9 < 0.01);
  // Tiny ops still run a minimal kernel.
  KernelPlan t = plan_kernel(OpClass::matmul, 0.5, 0);
  CHECK((t.kind == KernelKind::gemm && t.m == 1 && t.n == 1 && t.k == 1));
  CHECK(plan_kernel(OpClass::elementwise, 0, 0).kind == KernelKind::none);
  // Memory-bound classes stream read + write buffers of the op's bytes.
  KernelPlan s = plan_kernel(OpClass::elementwise, 1e9, 8000);
  CHECK(s.kind == KernelKind::scale_add);
  CHECK(s.bytes() == 8000);
  CHECK(plan_kernel(OpClass::memory, 0, 8000).kind == KernelKind::copy);
  CHECK(plan_kernel(OpClass::other, 0, 8000).kind == KernelKind::scale_add);
  KernelPlan red = plan_kernel(OpClass::reduction, 0, 4 * 65 * 100);
  CHECK(red.kind == KernelKind::reduce);
  CHECK(red.in_floats == 64 * 100);
  CHECK(red.out_floats == 100);
  // A matmul without flops streams its bytes; an elementwise op without bytes computes.
  CHECK(plan_kernel(OpClass::matmul, 0, 8000).kind == KernelKind::scale_add);
  CHECK(plan_kernel(OpClass::elementwise, 1000, 0).kind == KernelKind::gemm);
  // The op's bytes are bytes_accessed, else its output bytes (the cost model's rule).
  Op op = make_op("x", "Relu", 0, 4000);
  op.bytes_accessed = 0;
  CHECK(plan_kernel(op).bytes() == 4000);
}

TEST_CASE("validate/kernels compute what they claim (against plain loops)", "[validate]") {
  SECTION("gemm, odd sizes") {
    KernelPlan p;
    p.kind = KernelKind::gemm;
    p.m = 7;
    p.n = 5;
    p.k = 3;
    std::vector<float> ws(p.workspace_floats());
    init_workspace(ws.data(), p.workspace_floats());
    run_kernel(p, ws.data());
    const float* a = ws.data();      // (M, K) column-major
    const float* b = a + p.m * p.k;  // (K, N)
    const float* c = b + p.k * p.n;  // (M, N)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double ref = 0;
        for (int64_t l = 0; l < p.k; ++l) ref += double(a[i + l * p.m]) * b[l + j * p.k];
        CHECK(std::abs(c[i + j * p.m] - ref) <= 1e-6 + 1e-5 * std::abs(ref));
      }
  }
  SECTION("streams") {
    KernelPlan red = plan_kernel(OpClass::reduction, 0, 4 * 65 * 3);
    std::vector<float> ws(red.workspace_floats());
    init_workspace(ws.data(), red.workspace_floats());
    run_kernel(red, ws.data());
    for (int64_t j = 0; j < red.out_floats; ++j) {
      double ref = 0;
      for (int64_t i = 0; i < kReduceWidth; ++i) ref += ws[j * kReduceWidth + i];
      CHECK(std::abs(ws[red.in_floats + j] - ref) <= 1e-5 * (1 + std::abs(ref)));
    }
    KernelPlan s = plan_kernel(OpClass::elementwise, 0, 4 * 2 * 33);
    std::vector<float> w2(s.workspace_floats());
    init_workspace(w2.data(), s.workspace_floats());
    run_kernel(s, w2.data());
    for (int64_t i = 0; i < s.out_floats; ++i) CHECK(w2[s.in_floats + i] == 0.5f * w2[i] + 0.25f);
    KernelPlan cp = plan_kernel(OpClass::memory, 0, 4 * 2 * 33);
    std::vector<float> w3(cp.workspace_floats());
    init_workspace(w3.data(), cp.workspace_floats());
    run_kernel(cp, w3.data());
    for (int64_t i = 0; i < cp.out_floats; ++i) CHECK(w3[cp.in_floats + i] == w3[i]);
  }
}

TEST_CASE("validate/a small graph over two devices reports a finite step and error", "[validate]") {
  Graph g = small_graph();
  Cluster c = cpu_cluster();
  CostModel cost = CostModel::from_json_text(kCpuProfileJson, "cpu-profile.json");
  ValidationReport r = validate_cpu(g, small_placement(), c, cost, quick());
  CHECK(r.ops == 5);
  CHECK(r.step_s.size() == 3);
  CHECK(std::isfinite(r.measured_median_s));
  CHECK(r.measured_median_s > 0);
  CHECK(r.measured_min_s <= r.measured_median_s);
  CHECK(r.measured_median_s <= r.measured_max_s);
  CHECK(r.predicted_valid);
  CHECK(std::isfinite(r.predicted_s));
  CHECK(r.predicted_s > 0);
  CHECK(std::isfinite(r.rel_error));
  // Rows for the classes present, then the copies and deliveries; each with a finite error.
  std::vector<std::string> names;
  for (const ClassComparison& row : r.classes) {
    names.push_back(row.name);
    CHECK(std::isfinite(row.rel_error()));
  }
  CHECK(names ==
        std::vector<std::string>{"matmul", "elementwise", "reduction", "copies", "delivery"});
  CHECK(r.classes[0].count == 2);
  CHECK(r.classes[3].count == 3);  // a -> cpu1, b -> cpu1, d -> cpu0
  CHECK(r.classes[4].count == 3);
  // 16 KiB tensors over a 10 GB/s link of 1 us latency, never contended in this schedule.
  CHECK(r.classes[3].predicted_s == Approx(3 * 16384 / 10e9));
  CHECK(r.classes[4].predicted_s == Approx(3 * (1e-6 + 16384 / 10e9)));
  // The prediction per class is the simulator's op times (profile for kind "cpu").
  Simulator sim(g, c, cost);
  CHECK(r.classes[0].predicted_s == Approx(sim.op_time_s(0, 0) + sim.op_time_s(1, 0)));
  CHECK(r.predicted_s == sim.run(small_placement()).step_time_s);
  // The JSON report parses and carries the figures.
  nlohmann::json j = nlohmann::json::parse(report_to_json(r));
  CHECK(j["measured_step_s"]["median"].get<double>() == r.measured_median_s);
  CHECK(j["classes"].size() == 5);
}

TEST_CASE("validate/the real trace is Chrome JSON with an event per op and a copy event",
          "[validate]") {
  Graph g = small_graph();
  Cluster c = cpu_cluster();
  Placement p = small_placement();
  ValidationReport r = validate_cpu(g, p, c, CostModel(), quick(1));
  const std::string text =
      trace_to_chrome_json(real_run_trace(r.median_run, r.transfers, g, p, c), c);
  nlohmann::json j = nlohmann::json::parse(text);  // throws on invalid JSON
  std::vector<std::string> ops, copies;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    CHECK(e["dur"].get<double>() >= 0);
    if (e["cat"] == "op") {
      ops.push_back(e["name"]);
      CHECK(e["tid"].get<int>() == p.device[g.find_op(e["name"])]);
    } else {
      copies.push_back(e["name"]);
      CHECK(e["tid"].get<int>() >= c.num_devices());  // a link row
    }
  }
  std::sort(ops.begin(), ops.end());
  CHECK(ops == std::vector<std::string>{"a", "b", "c", "d", "e"});
  std::sort(copies.begin(), copies.end());
  CHECK(copies == std::vector<std::string>{"a:0 -> cpu1", "b:0 -> cpu1", "d:0 -> cpu0"});
  // The simulated trace names the same copies.
  nlohmann::json s = nlohmann::json::parse(trace_to_chrome_json(r.sim, c));
  int sim_copies = 0;
  for (const auto& e : s["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "transfer") ++sim_copies;
  CHECK(sim_copies == 3);
}

TEST_CASE("validate/the scheduler respects dependencies and one stream per device", "[validate]") {
  SECTION("the small graph, every run") {
    Graph g = small_graph();
    Placement p = small_placement();
    CpuExecutor ex(g, p, cpu_cluster());
    REQUIRE(ex.transfers().size() == 3);
    CHECK(ex.device_threads() == 2);
    CHECK(ex.copy_threads() == 2);  // cpu0 -> cpu1, cpu1 -> cpu0
    for (int k = 0; k < 5; ++k) check_schedule(g, p, ex.transfers(), ex.run_step());
  }
  SECTION("an RNN language model round-robin over three devices") {
    datasets::GenOptions o;
    o.layers = 2;
    o.seq_len = 3;
    o.hidden = 16;
    o.vocab = 20;
    o.batch = 2;
    Graph g = datasets::generate("rnnlm", o);
    Placement p{std::vector<int32_t>(g.num_ops())};
    for (int32_t i = 0; i < g.num_ops(); ++i) p.device[i] = i % 3;
    CpuExecutor ex(g, p, nominal_cpu_cluster(3));
    CHECK(ex.device_threads() == 3);
    CHECK(ex.copy_threads() == 6);  // every ordered pair exchanges tensors
    for (int k = 0; k < 2; ++k) check_schedule(g, p, ex.transfers(), ex.run_step());
  }
}

TEST_CASE("validate/scale divides the work, and the prediction is of the scaled graph",
          "[validate]") {
  Graph g = small_graph();
  Graph s = scale_graph(g, 4);
  CHECK(s.name == "small/4");
  CHECK(s.op(0).flops == g.op(0).flops / 4);
  CHECK(s.op(0).bytes_accessed == g.op(0).bytes_accessed / 4);
  CHECK(s.op(0).outputs[0].bytes == g.op(0).outputs[0].bytes / 4);
  CHECK(s.edges()[1].bytes == g.edges()[1].bytes / 4);
  CHECK(scale_graph(g, 1).name == "small");
  CHECK_THROWS_AS(scale_graph(g, 0.5), InputError);
  ValidationReport r = validate_cpu(s, small_placement(), cpu_cluster(), CostModel(), quick(1));
  Simulator sim(s, cpu_cluster(), CostModel());
  CHECK(r.predicted_s == sim.run(small_placement()).step_time_s);
}

TEST_CASE("validate/bad input gives errors naming the problem", "[validate]") {
  Graph g = small_graph();
  Cluster c = cpu_cluster();
  CHECK_THROWS_WITH(validate_cpu(g, Placement{{0, 1}}, c, CostModel(), quick(1)),
                    Contains("2 entries") && Contains("5 ops"));
  CHECK_THROWS_WITH(validate_cpu(g, Placement{{0, 0, 7, 1, 0}}, c, CostModel(), quick(1)),
                    Contains("'c'") && Contains("device 7"));
  CHECK_THROWS_WITH(CpuExecutor(g, Placement{{0, 0, 7, 1, 0}}, c), Contains("device 7"));
  ValidateOptions zero = quick(1);
  zero.runs = 0;
  CHECK_THROWS_WITH(validate_cpu(g, small_placement(), c, CostModel(), zero), Contains("--runs"));
  // Over the buffer limit: the message names the largest op and suggests --scale.
  ValidateOptions tight = quick(1);
  tight.exec.max_buffer_bytes = 1024;
  CHECK_THROWS_WITH(validate_cpu(g, small_placement(), c, CostModel(), tight),
                    Contains("'a'") && Contains("--scale"));
  CHECK_THROWS_WITH(check_backend("tpu"), Contains("expected cpu or cuda") && Contains("tpu"));
  CHECK_NOTHROW(check_backend("cpu"));
  // Files: a missing graph, a placement naming an op the graph lacks.
  const auto dir = std::filesystem::temp_directory_path() / "gdp_test_validate_bad_input";
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH(read_graph_file((dir / "missing.json").string()), Contains("missing.json"));
  const std::string pl = (dir / "p.json").string();
  std::ofstream(pl) << R"({"format": "gdp-placement", "version": 1, "devices": 2,
    "placement": {"a": 0, "b": 0, "c": 1, "d": 1, "zz": 0}})";
  CHECK_THROWS_WITH(read_placement_file(pl, g, c.num_devices()),
                    Contains("p.json") && Contains("placement.zz"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("validate/cuda backend without a GPU or CUDA build gives a clear error", "[validate]") {
  // No build of this version validates on GPUs: with CUDA and a GPU it says that it is not
  // available yet; without, that there is no GPU or no CUDA backend.
  CHECK_THROWS_AS(check_backend("cuda"), InputError);
  CHECK_THROWS_WITH(check_backend("cuda"), Contains("--backend cuda") && Contains("--backend cpu"));
}
