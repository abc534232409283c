// The CPU calibration end to end at the tiny size: samples of every measured class, peaks,
// a fit, a profile and a cluster that read back through the strict readers and simulate.
// Timings are never asserted (the machine is shared), only that they are positive and finite.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "calib/calibrate.h"
#include "core/io.h"
#include "sim/simulator.h"
#include "test_paths.h"

using namespace gdp;
using namespace gdp::calib;

TEST_CASE("calib/cpu calibration end to end (tiny): profile and cluster read back", "[calib]") {
  CpuCalibrationOptions o;
  o.size = BenchSize::tiny;
  o.devices = 3;
  int lines = 0;
  o.progress = [&](const std::string&) { ++lines; };
  CpuCalibration c = calibrate_cpu(o);
  CHECK(lines == static_cast<int>(c.bench.ops.size() + c.bench.copies.size()));
  for (const OpSample& s : c.bench.ops) {
    INFO(s.label);
    CHECK(std::isfinite(s.time_s));
    CHECK(s.time_s > 0);
  }
  for (OpClass k : {OpClass::matmul, OpClass::conv, OpClass::elementwise, OpClass::reduction,
                    OpClass::memory}) {
    INFO(op_class_name(k));
    CHECK(c.fit.classes[static_cast<int>(k)].samples > 0);
  }
  CHECK(c.fit.classes[static_cast<int>(OpClass::other)].samples == 0);
  CHECK(c.bench.peak_flops > 0);
  CHECK(c.bench.bandwidth_Bps > 0);
  CHECK(c.bench.copies.size() >= 2);
  CHECK(c.link.bandwidth_Bps > 0);
  CHECK(c.link.latency_s >= 0);
  CHECK(c.device.kind == "cpu");
  CHECK(c.device.peak_fp32_flops == c.bench.peak_flops);
  CHECK(c.fit.launch_overhead_s >= 0);
  // The best GEMM defines the peak: no matmul runs faster than the peak.
  CHECK(c.fit.classes[0].compute_efficiency <= 1.0);
  CHECK(!cpu_report(c).empty());

  const auto dir =
      std::filesystem::temp_directory_path() / ("gdp_calib_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string prof = (dir / "cpu.json").string(), clus = (dir / "cluster.json").string();
  write_profile_file(c.model, prof);
  write_cluster_file(c.cluster, clus);
  CostModel back = CostModel::from_json_file(prof);
  for (OpClass k : all_op_classes()) {
    CHECK(back.profile("cpu").compute_efficiency.at(k) ==
          Approx(c.fit.profile.compute_efficiency.at(k)));
    CHECK(back.profile("cpu").memory_efficiency.at(k) ==
          Approx(c.fit.profile.memory_efficiency.at(k)));
  }
  // The default profile stays in the file for other kinds.
  CHECK(back.profile("V100").compute_efficiency.at(OpClass::matmul) == Approx(0.75));
  Cluster cl = read_cluster(clus);
  REQUIRE(cl.num_devices() == 3);
  CHECK(cl.links.size() == 3);
  CHECK(cl.devices[1].kind == "cpu");
  CHECK(cl.devices[1].peak_fp32_flops == Approx(c.bench.peak_flops));
  CHECK(cl.devices[1].launch_overhead_s == Approx(c.fit.launch_overhead_s).margin(1e-15));
  CHECK(cl.links[0].bandwidth_Bps == Approx(c.link.bandwidth_Bps));

  // A two-op chain split across two CPU devices simulates: op times from the fitted profile,
  // one transfer over the fitted link.
  Graph g;
  g.name = "chain";
  Op a;
  a.name = "a";
  a.type = "MatMul";
  a.flops = 2e6;
  a.bytes_accessed = 3e4;
  a.outputs.push_back(TensorSpec{{100, 100}, DType::f32, 40000});
  Op b = a;
  b.id = 1;
  b.name = "b";
  b.type = "Relu";
  g.add_op(a);
  g.add_op(b);
  g.add_edge(0, 0, 1, 40000);
  g.finalize();
  Simulator sim(g, cl, back);
  SimResult r = sim.run(Placement{{0, 1}});
  REQUIRE(r.valid);
  const double ta = back.op_time_s(g.op(0), cl.devices[0]);
  const double tb = back.op_time_s(g.op(1), cl.devices[1]);
  CHECK(r.step_time_s ==
        Approx(ta + cl.links[0].latency_s + 40000 / cl.links[0].bandwidth_Bps + tb));
  std::filesystem::remove_all(dir);
}

TEST_CASE("calib/timing harness: median of repeats with batches sized to the minimum", "[calib]") {
  int calls = 0;
  TimingSettings ts;
  ts.min_batch_s = 1e-4;
  ts.warmup_batches = 1;
  ts.repeats = 3;
  const double t = median_time_s([&] { ++calls; }, ts);
  CHECK(t >= 0);
  CHECK(std::isfinite(t));
  CHECK(calls > 5);  // sized up from one call
}
