// Cost model tests: op classification, roofline numbers worked by hand, measured-time
// precedence, and the strictness of the device profile JSON reader (one case per class).
#include <catch2/catch.hpp>
#include <string>

#include "core/error.h"
#include "sim/cost_model.h"
#include "sim_fixtures.h"
#include "test_paths.h"

using namespace gdp;
using namespace gdp::test;

namespace {

Op flop_op(const std::string& type, double flops, double bytes) {
  Op op;
  op.name = "x";
  op.type = type;
  op.flops = flops;
  op.bytes_accessed = bytes;
  return op;
}

std::string error_of(const std::string& text) {
  try {
    CostModel::from_json_text(text, "prof.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kClassMap =
    R"({"matmul": 0.5, "conv": 0.5, "elementwise": 0.5, "reduction": 0.5, "memory": 0.5, "other": 0.5})";

std::string profile_text(const std::string& profile_body) {
  return std::string(R"({"format": "gdp-device-profile", "version": 1, "profiles": [)") +
         profile_body + "]}";
}

std::string good_profile(const std::string& kind = "") {
  return std::string(R"({"device_kind": ")") + kind + R"(", "compute_efficiency": )" + kClassMap +
         R"(, "memory_efficiency": )" + kClassMap +
         R"(, "use_fp16_peak": false, "roofline_max": true})";
}

}  // namespace

TEST_CASE("sim/cost/classify_op maps common TensorFlow and PyTorch types", "[sim][cost]") {
  CHECK(classify_op("MatMul") == OpClass::matmul);
  CHECK(classify_op("BatchMatMulV2") == OpClass::matmul);
  CHECK(classify_op("Conv2DBackpropFilter") == OpClass::conv);
  CHECK(classify_op("Relu") == OpClass::elementwise);
  CHECK(classify_op("ReluGrad") == OpClass::elementwise);
  CHECK(classify_op("ApplyAdam") == OpClass::elementwise);
  CHECK(classify_op("Sum") == OpClass::reduction);
  CHECK(classify_op("MaxPool") == OpClass::reduction);
  CHECK(classify_op("Transpose") == OpClass::memory);
  CHECK(classify_op("ConcatV2") == OpClass::memory);
  CHECK(classify_op("SomethingNew") == OpClass::other);
  OpClass c;
  CHECK(parse_op_class("reduction", &c));
  CHECK(c == OpClass::reduction);
  CHECK_FALSE(parse_op_class("reductions", &c));
}

TEST_CASE("sim/cost/classify_op maps aten ops as gdp.torch writes them", "[sim][cost]") {
  CHECK(classify_op("aten.mm") == OpClass::matmul);
  CHECK(classify_op("aten.addmm") == OpClass::matmul);
  CHECK(classify_op("aten.bmm") == OpClass::matmul);
  CHECK(classify_op("aten.convolution") == OpClass::conv);
  CHECK(classify_op("aten.convolution_backward") == OpClass::conv);
  CHECK(classify_op("aten.add") == OpClass::elementwise);
  CHECK(classify_op("aten.add_") == OpClass::elementwise);  // in place: as the op it computes
  CHECK(classify_op("aten.addcdiv") == OpClass::elementwise);
  CHECK(classify_op("aten.threshold_backward") == OpClass::elementwise);
  CHECK(classify_op("aten.hardswish_backward") == OpClass::elementwise);
  CHECK(classify_op("aten.gelu_backward") == OpClass::elementwise);
  CHECK(classify_op("aten.native_batch_norm") == OpClass::reduction);
  CHECK(classify_op("aten.native_batch_norm_backward") == OpClass::reduction);
  CHECK(classify_op("aten.native_layer_norm_backward") == OpClass::reduction);
  CHECK(classify_op("aten._softmax") == OpClass::reduction);
  CHECK(classify_op("aten._log_softmax_backward_data") == OpClass::reduction);
  CHECK(classify_op("aten.max_pool2d_with_indices_backward") == OpClass::reduction);
  CHECK(classify_op("aten._adaptive_avg_pool2d") == OpClass::reduction);
  CHECK(classify_op("aten.nll_loss_forward") == OpClass::reduction);
  CHECK(classify_op("aten.sum") == OpClass::reduction);
  CHECK(classify_op("aten.mean") == OpClass::reduction);
  CHECK(classify_op("aten.cat") == OpClass::memory);
  CHECK(classify_op("aten.clone") == OpClass::memory);
  CHECK(classify_op("aten.slice_backward") == OpClass::memory);
  CHECK(classify_op("aten.constant_pad_nd") == OpClass::memory);
  CHECK(classify_op("aten.index_put") == OpClass::memory);
  CHECK(classify_op("aten::mm") == OpClass::matmul);
  CHECK(classify_op("Parameter") == OpClass::memory);
  CHECK(classify_op("Input") == OpClass::memory);
  // An aten name outside the table falls back to the general rules, then to other.
  CHECK(classify_op("aten.batch_norm_gather_stats") == OpClass::reduction);
  CHECK(classify_op("aten.linalg_qr") == OpClass::other);
}

TEST_CASE("sim/cost/roofline numbers by hand", "[sim][cost]") {
  DeviceSpec dev = test_device("gpu0");
  SECTION("compute bound, max") {
    // 2^38 flops / (2^40 * 0.5) = 0.5 s; 2^26 bytes / (2^30 * 0.5) = 0.125 s.
    CostModel m = half_efficiency_model(true);
    OpCostBreakdown b = m.op_cost(flop_op("MatMul", 0x1p38, 0x1p26), dev);
    CHECK_FALSE(b.measured);
    CHECK(b.op_class == OpClass::matmul);
    CHECK(b.compute_s == 0.5);
    CHECK(b.memory_s == 0.125);
    CHECK(b.time_s == kLaunch_s + 0.5);
  }
  SECTION("memory bound, max") {
    CostModel m = half_efficiency_model(true);
    CHECK(m.op_time_s(flop_op("Add", 0x1p30, 0x1p28), dev) == kLaunch_s + 0.5);
  }
  SECTION("added instead of max") {
    CostModel m = half_efficiency_model(false);
    CHECK(m.op_time_s(flop_op("MatMul", 0x1p38, 0x1p26), dev) == kLaunch_s + 0.625);
  }
  SECTION("default efficiencies: matmul 0.75 of fp32 peak, memory 0.8 of bandwidth") {
    CostModel m;
    DeviceSpec v = test_device("v");
    v.peak_fp32_flops = 15.7e12;
    v.mem_bandwidth_Bps = 900e9;
    v.launch_overhead_s = 5e-6;
    double t = m.op_time_s(flop_op("MatMul", 15.7e12 * 0.75 * 1e-3, 1e3), v);
    CHECK(t == Approx(5e-6 + 1e-3).epsilon(1e-12));
    double tm = m.op_time_s(flop_op("Transpose", 0, 900e9 * 0.8 * 2e-3), v);
    CHECK(tm == Approx(5e-6 + 2e-3).epsilon(1e-12));
  }
  SECTION("fp16 peak when the profile asks for it") {
    DeviceProfile p = half_efficiency_model().profile("T");
    p.use_fp16_peak = true;
    CostModel m;
    m.set_profile(p);
    CHECK(m.op_time_s(flop_op("MatMul", 0x1p38, 0), dev) == kLaunch_s + 0.25);
  }
  SECTION("unknown op with no flops costs its memory term (written bytes when no bytes_accessed)") {
    CostModel m = half_efficiency_model(true);
    Op op = flop_op("Mystery", 0, 0);
    op.outputs.push_back(TensorSpec{{1}, DType::f32, int64_t(1) << 27});  // 2^27 / 2^29 = 0.25 s
    OpCostBreakdown b = m.op_cost(op, dev);
    CHECK(b.op_class == OpClass::other);
    CHECK(b.compute_s == 0);
    CHECK(b.time_s == kLaunch_s + 0.25);
  }
  SECTION("per-kind profile overrides the default only for that kind") {
    CostModel m = half_efficiency_model(true);
    DeviceProfile fast = m.profile("T");
    fast.device_kind = "T";
    for (auto& [k, v] : fast.compute_efficiency) v = 1.0;
    m.set_profile(fast);
    CHECK(m.op_time_s(flop_op("MatMul", 0x1p38, 0), dev) == kLaunch_s + 0.25);
    DeviceSpec other = dev;
    other.kind = "U";
    CHECK(m.op_time_s(flop_op("MatMul", 0x1p38, 0), other) == kLaunch_s + 0.5);
  }
}

TEST_CASE("sim/cost/measured time takes precedence over the roofline", "[sim][cost]") {
  CostModel m = half_efficiency_model(true);
  DeviceSpec dev = test_device("gpu0");
  Op op = flop_op("MatMul", 0x1p38, 0x1p26);
  op.measured.push_back({"OTHER", 9.0});
  op.measured.push_back({"T", 0.0625});
  OpCostBreakdown b = m.op_cost(op, dev);
  CHECK(b.measured);
  CHECK(b.time_s == 0.0625);  // no launch overhead added to a measurement
  DeviceSpec other = dev;
  other.kind = "V";
  CHECK(m.op_time_s(op, other) == kLaunch_s + 0.5);  // no measurement for V: roofline
  // "*" (as the PipeDream importer writes) applies to any kind; an exact kind still wins.
  Op any = flop_op("MatMul", 0x1p38, 0);
  any.measured.push_back({"*", 0.25});
  CHECK(m.op_time_s(any, other) == 0.25);
  any.measured.push_back({"V", 0.125});
  CHECK(m.op_time_s(any, other) == 0.125);
  CHECK(m.op_cost(any, dev).measured);
}

TEST_CASE("sim/cost/a device without a peak is an InputError naming it", "[sim][cost]") {
  CostModel m;
  DeviceSpec dev = test_device("gpu7");
  dev.peak_fp32_flops = 0;
  REQUIRE_THROWS_AS(m.op_time_s(flop_op("MatMul", 1e9, 0), dev), InputError);
  REQUIRE_THROWS_WITH(m.op_time_s(flop_op("MatMul", 1e9, 0), dev), Catch::Contains("gpu7"));
}

TEST_CASE("sim/cost/profile JSON round-trips and the shipped default equals the built-in one",
          "[sim][cost][json]") {
  CostModel a = CostModel::from_json_text(profile_text(good_profile() + "," + good_profile("V100")),
                                          "p.json");
  CHECK(a.profile("V100").device_kind == "V100");
  CHECK(a.profile("K80").compute_efficiency.at(OpClass::conv) == 0.5);
  CostModel b = CostModel::from_json_text(a.to_json(), "roundtrip");
  CHECK(b.to_json() == a.to_json());

  CostModel shipped = CostModel::from_json_file(source_dir() + "/sim/profiles/default.json");
  CostModel builtin;
  CHECK(shipped.to_json() == builtin.to_json());
}

TEST_CASE("sim/cost/profile JSON is strict", "[sim][cost][json]") {
  SECTION("invalid JSON (NaN is not JSON)") {
    std::string body = good_profile();
    body.replace(body.find("0.5"), 3, "NaN");
    std::string e = error_of(profile_text(body));
    CHECK_THAT(e, Catch::Contains("prof.json") && Catch::Contains("invalid JSON"));
  }
  SECTION("unknown key at the top level") {
    std::string e =
        error_of(R"({"format": "gdp-device-profile", "version": 1, "profiles": [], "extra": 1})");
    CHECK_THAT(e, Catch::Contains("prof.json: extra") && Catch::Contains("unknown key"));
  }
  SECTION("unknown key inside a profile (misspelt class)") {
    std::string body = good_profile();
    body.replace(body.find("\"other\""), 7, "\"othre\"");
    std::string e = error_of(profile_text(body));
    CHECK_THAT(e, Catch::Contains("profiles[0].compute_efficiency.othre") &&
                      Catch::Contains("unknown key"));
  }
  SECTION("missing key") {
    std::string body = good_profile();
    body.replace(body.find(", \"roofline_max\": true"),
                 std::string(", \"roofline_max\": true").size(), "");
    std::string e = error_of(profile_text(body));
    CHECK_THAT(e, Catch::Contains("profiles[0].roofline_max") && Catch::Contains("missing key"));
  }
  SECTION("wrong type") {
    std::string body = good_profile();
    body.replace(body.find("false"), 5, "\"no\"");
    std::string e = error_of(profile_text(body));
    CHECK_THAT(e, Catch::Contains("profiles[0].use_fp16_peak") &&
                      Catch::Contains("expected true or false") && Catch::Contains("string"));
  }
  SECTION("negative number") {
    std::string body = good_profile();
    body.replace(body.find("0.5"), 3, "-0.5");
    std::string e = error_of(profile_text(body));
    CHECK_THAT(e, Catch::Contains("profiles[0].compute_efficiency.matmul") &&
                      Catch::Contains("(0, 1]") && Catch::Contains("-0.5"));
  }
  SECTION("efficiency above one") {
    std::string body = good_profile();
    body.replace(body.rfind("0.5"), 3, "1.5");
    std::string e = error_of(profile_text(body));
    CHECK_THAT(e,
               Catch::Contains("profiles[0].memory_efficiency.other") && Catch::Contains("(0, 1]"));
  }
  SECTION("wrong format tag and version") {
    CHECK_THAT(error_of(R"({"format": "gdp-graph", "version": 1, "profiles": []})"),
               Catch::Contains("format") && Catch::Contains("gdp-device-profile"));
    CHECK_THAT(error_of(R"({"format": "gdp-device-profile", "version": 2, "profiles": []})"),
               Catch::Contains("version") && Catch::Contains("expected the integer 1"));
  }
  SECTION("empty profile list and duplicate kinds") {
    CHECK_THAT(error_of(profile_text("")),
               Catch::Contains("profiles") && Catch::Contains("non-empty"));
    CHECK_THAT(error_of(profile_text(good_profile("A") + "," + good_profile("A"))),
               Catch::Contains("profiles[1].device_kind") && Catch::Contains("duplicate"));
  }
  SECTION("missing file") {
    REQUIRE_THROWS_WITH(CostModel::from_json_file("/nonexistent/p.json"),
                        Catch::Contains("/nonexistent/p.json"));
  }
}
