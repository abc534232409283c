// `gdp calibrate --backend cuda` (calib/cuda_bench.cpp, calibrate_cuda) against the host double
// of cuda/bench.h and cuda/kernels.h (tests/host_double/): the suite's structure (every class
// sampled, copies per size and per ordered GPU pair, peer or staged), the fit's outputs (a
// profile for the device kind, a cluster with a host switch and a link per GPU pair). Never
// asserts on timings. Built only as test_gpu_tools_host_double (GDP_HOST_DOUBLE_BENCH).
#ifdef GDP_HOST_DOUBLE_BENCH

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>

#include "calib/calibrate.h"
#include "calib/cuda_bench.h"
#include "core/io.h"
#include "host_double/bench_host.h"

using namespace gdp;
using namespace gdp::calib;

TEST_CASE("calib/cuda-host-double/the tiny suite samples every class and every copy",
          "[calib][host-double]") {
  const bool peer = GENERATE(true, false);
  cuda::host_double::set_fake_devices(2, peer);
  CudaBenchOptions o;
  o.size = BenchSize::tiny;
  int lines = 0;
  o.progress = [&](const std::string&) { ++lines; };
  const CudaBenchResult r = run_cuda_benchmarks(o);
  CHECK(r.gpus == 2);
  CHECK(r.names.size() == 2);
  std::set<OpClass> classes;
  for (const OpSample& s : r.ops) {
    CHECK(s.time_s > 0);
    CHECK(s.bytes > 0);
    classes.insert(s.op_class);
  }
  CHECK(classes == std::set<OpClass>{OpClass::matmul, OpClass::conv, OpClass::elementwise,
                                     OpClass::reduction, OpClass::memory});
  // 1 launch + 3 gemm + 1 conv + 2 sizes x 4 element-wise + 3 row kernels + 1 transpose + 2 d2d
  CHECK(r.ops.size() == 19);
  CHECK(r.launch_s > 0);
  CHECK(r.peak_flops > 0);
  CHECK(r.bandwidth_Bps > 0);
  CHECK(r.h2d.size() == 3);
  CHECK(r.d2h.size() == 3);
  REQUIRE(r.peers.size() == 2);  // 0->1 and 1->0
  for (const PeerCopies& p : r.peers) {
    CHECK(p.src != p.dst);
    CHECK(p.direct == peer);
    CHECK(p.copies.size() == 3);
    for (const CopySample& c : p.copies) CHECK(c.time_s > 0);
  }
  const auto n = cuda::host_double::counters();
  CHECK((peer ? n.peer_copies : n.staged_copies) > 0);
  CHECK((peer ? n.staged_copies : n.peer_copies) == 0);
  CHECK(lines == static_cast<int>(r.ops.size() + r.h2d.size() + r.d2h.size() + 6));
}

TEST_CASE("calib/cuda-host-double/calibrate_cuda writes a profile and a measured cluster",
          "[calib][host-double]") {
  cuda::host_double::set_fake_devices(3, true);
  CudaCalibrationOptions o;
  o.size = BenchSize::tiny;
  const CudaCalibration c = calibrate_cuda(o);
  CHECK(c.device.kind == "host double gpu0");  // not a known kind: the raw name
  CHECK(c.peaks_measured);
  CHECK(c.device.peak_fp32_flops == c.bench.peak_flops);
  CHECK(c.fit.profile.device_kind == c.device.kind);
  CHECK(c.peers.size() == 3);  // 0-1, 0-2, 1-2
  REQUIRE(c.cluster.num_devices() == 3);
  CHECK(c.cluster.switches == std::vector<std::string>{"host"});
  CHECK(c.cluster.links.size() == 3 + 3);  // a host link per GPU, a link per pair
  for (const DeviceSpec& d : c.cluster.devices) CHECK(d.kind == c.device.kind);
  CHECK(c.cluster.route(0, 1).size() == 1);  // the direct peer link
  // Both outputs read back through the strict readers (the switch and the links included).
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "gdp_test_cuda_bench_host";
  std::filesystem::create_directories(dir);
  write_profile_file(c.model, (dir / "gpu_profile.json").string());
  write_cluster_file(c.cluster, (dir / "gpu_cluster.json").string());
  const Cluster back = read_cluster((dir / "gpu_cluster.json").string());
  CHECK(back.links.size() == c.cluster.links.size());
  CHECK(back.switches == c.cluster.switches);
  std::filesystem::remove_all(dir);
  const std::string rep = cuda_report(c);
  CHECK(rep.find("peer bandwidth matrix") != std::string::npos);
  CHECK(rep.find("host <-> gpu") != std::string::npos);
  CHECK(cuda_device_kind("NVIDIA H200") == "H200");
  CHECK(cuda_device_kind("Tesla V100-SXM2-16GB") == "V100");
  CHECK(cuda_device_kind("NVIDIA A100-SXM4-80GB") == "A100");
  CHECK(cuda_device_kind("Some GPU") == "Some GPU");
}

#endif  // GDP_HOST_DOUBLE_BENCH
