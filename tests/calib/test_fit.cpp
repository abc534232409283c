// The calibration fit: NNLS by hand, recovery of known efficiencies, launch overhead, latency
// and bandwidth from synthetic measurements with 5% multiplicative noise, term statuses, error
// statistics, and the prediction being the cost model's own.
#include <catch2/catch.hpp>
#include <cmath>

#include "calib/fit.h"
#include "calib/nnls.h"
#include "core/error.h"
#include "core/rng.h"

using namespace gdp;
using namespace gdp::calib;

namespace {

DeviceSpec test_device() {
  DeviceSpec d;
  d.name = "dev";
  d.kind = "X";
  d.peak_fp32_flops = 10e12;
  d.peak_fp16_flops = 40e12;
  d.mem_bandwidth_Bps = 1e12;
  d.memory_bytes = 1 << 30;
  d.launch_overhead_s = 5e-6;
  return d;
}

struct Truth {
  double launch_s = 20e-6;
  std::map<OpClass, double> c = {{OpClass::matmul, 0.7},      {OpClass::conv, 0.5},
                                 {OpClass::elementwise, 0.3}, {OpClass::reduction, 0.4},
                                 {OpClass::memory, 0.5},      {OpClass::other, 0.6}};
  std::map<OpClass, double> m = {{OpClass::matmul, 0.6},       {OpClass::conv, 0.8},
                                 {OpClass::elementwise, 0.85}, {OpClass::reduction, 0.55},
                                 {OpClass::memory, 0.75},      {OpClass::other, 0.5}};
};

double truth_time(const Truth& t, const DeviceSpec& d, OpClass c, double F, double B, bool mx) {
  const double comp = F / (d.peak_fp32_flops * t.c.at(c)),
               mem = B / (d.mem_bandwidth_Bps * t.m.at(c));
  return t.launch_s + (mx ? std::max(comp, mem) : comp + mem);
}

// Per class 60 ops: flops log-uniform in [1e5, 1e12], intensity log-uniform in [0.1, 1000]
// flop/byte (both sides of every ridge; the small ones dominated by the launch overhead);
// the memory class has no flops. Times with uniform +-5% multiplicative noise.
std::vector<OpSample> synthetic(const Truth& t, const DeviceSpec& d, bool mx, uint64_t seed) {
  Rng rng(seed);
  std::vector<OpSample> v;
  for (OpClass c : all_op_classes()) {
    for (int i = 0; i < 60; ++i) {
      OpSample s;
      s.op_class = c;
      s.label = std::string(op_class_name(c)) + " #" + std::to_string(i);
      const double F = std::pow(10.0, rng.uniform(5, 12));
      const double ai = std::pow(10.0, rng.uniform(-1, 3));
      s.flops = c == OpClass::memory ? 0 : F;
      s.bytes = F / ai;
      s.time_s = truth_time(t, d, c, s.flops, s.bytes, mx) * (1 + rng.uniform(-0.05, 0.05));
      v.push_back(s);
    }
  }
  return v;
}

}  // namespace

TEST_CASE("calib/nnls: closed-form cases", "[calib]") {
  // Identity: the negative entry is clamped to 0, the others are b.
  Eigen::MatrixXd A = Eigen::MatrixXd::Identity(3, 3);
  Eigen::VectorXd b(3);
  b << 1, -2, 3;
  NnlsResult r = nnls(A, b);
  CHECK(r.converged);
  CHECK(r.x[0] == Approx(1));
  CHECK(r.x[1] == 0);
  CHECK(r.x[2] == Approx(3));
  CHECK(r.residual == Approx(2));
  // A positive unconstrained solution is the NNLS solution (columns of very different scales).
  Rng rng(3);
  Eigen::MatrixXd M(20, 3);
  for (int i = 0; i < 20; ++i) {
    M(i, 0) = 1e-6 * (1 + rng.uniform());
    M(i, 1) = 1e3 * rng.uniform();
    M(i, 2) = rng.uniform();
  }
  Eigen::VectorXd x_true(3);
  x_true << 5e5, 2e-3, 0.7;
  Eigen::VectorXd y = M * x_true;
  r = nnls(M, y);
  CHECK(r.x[0] == Approx(x_true[0]).epsilon(1e-9));
  CHECK(r.x[1] == Approx(x_true[1]).epsilon(1e-9));
  CHECK(r.x[2] == Approx(x_true[2]).epsilon(1e-9));
  // A zero column stays 0.
  M.col(1).setZero();
  r = nnls(M, y);
  CHECK(r.x[1] == 0);
  CHECK((r.x.array() >= 0).all());
}

TEST_CASE("calib/error statistics by hand", "[calib]") {
  ErrorStats s = error_stats({0.5, 0.1, 0.3, 0.2, 0.4, 0.9, 0.8, 0.7, 0.6, 1.0});
  CHECK(s.n == 10);
  CHECK(s.median == Approx(0.55));
  CHECK(s.p90 == Approx(0.9));  // nearest rank: the 9th of 10
  CHECK(s.max == Approx(1.0));
  CHECK(error_stats({0.25}).p90 == Approx(0.25));
  CHECK(error_stats({}).n == 0);
}

TEST_CASE("calib/sample ops have their class and are priced by the cost model", "[calib]") {
  const DeviceSpec d = test_device();
  CostModel model;
  for (OpClass c : all_op_classes()) {
    OpSample s{"x", c, 3e9, 2e8, 1e-3};
    CHECK(classify_op(sample_op(s).type) == c);
    const double comp = 3e9 / (d.peak_fp32_flops * model.profile("X").compute_efficiency.at(c));
    const double mem = 2e8 / (d.mem_bandwidth_Bps * model.profile("X").memory_efficiency.at(c));
    CHECK(predict_s(s, model, d) == Approx(d.launch_overhead_s + std::max(comp, mem)));
  }
}

TEST_CASE("calib/fit recovers efficiencies and launch overhead (roofline max with 5% noise)",
          "[calib]") {
  // Tolerance: 4% on every efficiency and on the launch overhead (observed: under 1.5%).
  const DeviceSpec d = test_device();
  const Truth t;
  const std::vector<OpSample> samples = synthetic(t, d, true, 11);
  OpFit f = fit_ops(samples, d);
  CHECK(f.used == static_cast<int64_t>(samples.size()));
  CHECK(f.launch_overhead_s == Approx(t.launch_s).epsilon(0.04));
  for (const ClassFit& cf : f.classes) {
    INFO(op_class_name(cf.op_class));
    CHECK(cf.samples == 60);
    CHECK(cf.memory == TermFit::fitted);
    CHECK(cf.memory_efficiency == Approx(t.m.at(cf.op_class)).epsilon(0.04));
    if (cf.op_class == OpClass::memory) {
      CHECK(cf.compute == TermFit::no_data);
      CHECK(cf.compute_efficiency ==
            Approx(default_device_profile().compute_efficiency.at(OpClass::memory)));
    } else {
      CHECK(cf.compute == TermFit::fitted);
      CHECK(cf.compute_efficiency == Approx(t.c.at(cf.op_class)).epsilon(0.04));
    }
  }
  CHECK(f.profile.device_kind == "X");
  CHECK(f.profile.roofline_max);
  // The fitted model's error is the noise: every relative error within 5% (+ rounding).
  CostModel m;
  m.set_profile(f.profile);
  DeviceSpec fitted = d;
  fitted.launch_overhead_s = f.launch_overhead_s;
  Evaluation ev = evaluate(samples, m, fitted);
  CHECK(ev.overall.n == static_cast<int64_t>(samples.size()));
  CHECK(ev.overall.max < 0.08);
  CHECK(ev.overall.median < 0.035);
  // ... and the default profile's is much larger.
  CHECK(evaluate(samples, CostModel(), d).overall.median > 0.2);
}

TEST_CASE("calib/fit recovers the sum model (compute + memory with 5% noise)", "[calib]") {
  const DeviceSpec d = test_device();
  const Truth t;
  OpFitOptions o;
  o.roofline_max = false;
  OpFit f = fit_ops(synthetic(t, d, false, 12), d, o);
  CHECK_FALSE(f.profile.roofline_max);
  CHECK(f.launch_overhead_s == Approx(t.launch_s).epsilon(0.04));
  for (const ClassFit& cf : f.classes) {
    INFO(op_class_name(cf.op_class));
    CHECK(cf.memory_efficiency == Approx(t.m.at(cf.op_class)).epsilon(0.04));
    if (cf.op_class != OpClass::memory)
      CHECK(cf.compute_efficiency == Approx(t.c.at(cf.op_class)).epsilon(0.04));
  }
}

TEST_CASE("calib/fit at the fp16 peak with a fixed launch overhead and clamping at the peak",
          "[calib]") {
  DeviceSpec d = test_device();
  // Matmuls only, compute bound, 1.5x faster than the fp32 peak: clamped to 1 at fp32, fitted
  // (1.5 * 10 / 40 = 0.375) at fp16.
  std::vector<OpSample> v;
  for (int i = 0; i < 20; ++i) {
    const double F = 1e9 * (i + 1);
    v.push_back({"mm" + std::to_string(i), OpClass::matmul, F, F / 1000,
                 d.launch_overhead_s + F / (1.5 * d.peak_fp32_flops)});
  }
  OpFitOptions o;
  o.fit_launch = false;
  OpFit f32 = fit_ops(v, d, o);
  CHECK(f32.launch_overhead_s == d.launch_overhead_s);
  CHECK(f32.classes[0].compute == TermFit::at_peak);
  CHECK(f32.classes[0].compute_efficiency == 1.0);
  o.use_fp16_peak = true;
  OpFit f16 = fit_ops(v, d, o);
  CHECK(f16.profile.use_fp16_peak);
  CHECK(f16.classes[0].compute == TermFit::fitted);
  CHECK(f16.classes[0].compute_efficiency == Approx(0.375).epsilon(1e-6));
  CHECK(f16.objective < 1e-12);
  CHECK(f16.objective < f32.objective);
}

TEST_CASE("calib/fit: never-binding and missing terms keep the base value", "[calib]") {
  const DeviceSpec d = test_device();
  // Element-wise ops at 0.25 flop/byte: always memory bound, so the compute term is only
  // bounded; the base value (0.5) stays non-binding and is kept. No sample of other classes.
  std::vector<OpSample> v;
  for (int i = 0; i < 10; ++i) {
    const double B = 1e6 * std::pow(2.0, i);
    v.push_back({"ew", OpClass::elementwise, B / 4, B, 3e-6 + B / (0.8 * d.mem_bandwidth_Bps)});
  }
  OpFit f = fit_ops(v, d);
  const ClassFit& ew = f.classes[static_cast<int>(OpClass::elementwise)];
  CHECK(ew.memory == TermFit::fitted);
  CHECK(ew.memory_efficiency == Approx(0.8).epsilon(1e-6));
  CHECK(ew.compute == TermFit::not_binding);
  CHECK(ew.compute_efficiency == Approx(0.5));
  CHECK(f.launch_overhead_s == Approx(3e-6).epsilon(1e-6));
  for (OpClass c :
       {OpClass::matmul, OpClass::conv, OpClass::reduction, OpClass::memory, OpClass::other}) {
    const ClassFit& cf = f.classes[static_cast<int>(c)];
    CHECK(cf.samples == 0);
    CHECK(cf.compute == TermFit::no_data);
    CHECK(cf.memory == TermFit::no_data);
    CHECK(cf.compute_efficiency == default_device_profile().compute_efficiency.at(c));
    CHECK(cf.memory_efficiency == default_device_profile().memory_efficiency.at(c));
  }
  // The fitted profile is a valid profile: it round-trips through the strict reader.
  CostModel m;
  m.set_profile(f.profile);
  CostModel back = CostModel::from_json_text(m.to_json(), "fitted");
  CHECK(back.profile("X").memory_efficiency.at(OpClass::elementwise) ==
        Approx(ew.memory_efficiency));
}

TEST_CASE("calib/link fit recovers latency and bandwidth (5% noise)", "[calib]") {
  // Tolerance: 4% (observed under 2%).
  Rng rng(5);
  std::vector<CopySample> v;
  const double lat = 2e-6, bw = 10e9;
  for (double bytes = 64; bytes <= 64e6; bytes *= 4)
    for (int r = 0; r < 3; ++r)
      v.push_back({"copy", bytes, (lat + bytes / bw) * (1 + rng.uniform(-0.05, 0.05))});
  LinkFit f = fit_link(v);
  CHECK(f.latency_s == Approx(lat).epsilon(0.04));
  CHECK(f.bandwidth_Bps == Approx(bw).epsilon(0.04));
  CHECK(f.error.max < 0.08);
  CHECK(f.worst.size() == 3);
  // One size only: the bandwidth is not identified.
  CHECK_THROWS_WITH(fit_link({{"a", 100, 1e-6}, {"b", 100, 1.1e-6}}),
                    Catch::Contains("bandwidth is not identified"));
}

TEST_CASE("calib/fit rejects bad samples naming them", "[calib]") {
  const DeviceSpec d = test_device();
  CHECK_THROWS_WITH(fit_ops({{"bad one", OpClass::matmul, -1, 10, 1e-3}}, d),
                    Catch::Contains("bad one") && Catch::Contains("flops"));
  CHECK_THROWS_WITH(fit_ops({{"zero", OpClass::matmul, 1, 10, 0}}, d),
                    Catch::Contains("no sample with a positive measured time"));
  DeviceSpec nobw = d;
  nobw.mem_bandwidth_Bps = 0;
  CHECK_THROWS_WITH(fit_ops({{"m", OpClass::memory, 0, 10, 1e-3}}, nobw),
                    Catch::Contains("memory bandwidth"));
}
