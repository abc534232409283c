// Cost model: the time of an op on a device. Measured time when the graph carries one for
// the device kind; else a roofline from flops and bytes with per-op-class efficiencies and a
// launch overhead, the efficiencies read from a device profile JSON (docs/cost-model.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace gdp {

enum class OpClass : uint8_t { matmul, conv, elementwise, reduction, memory, other };
// Classifies an op type string ("MatMul", "Conv2DBackpropFilter", "ReluGrad", ...);
// case-insensitive; unknown types are OpClass::other.
OpClass classify_op(const std::string& op_type);
const char* op_class_name(OpClass c);                     // "matmul", "conv", ...
bool parse_op_class(const std::string& s, OpClass* out);  // false when unknown
std::vector<OpClass> all_op_classes();                    // in declaration order

struct DeviceProfile {
  std::string device_kind;  // "" = applies to any kind
  // Fraction of peak reached per op class, for compute and memory. Each in (0, 1].
  std::map<OpClass, double> compute_efficiency;
  std::map<OpClass, double> memory_efficiency;
  bool use_fp16_peak = false;  // price flops at the tensor-core peak
  bool roofline_max = true;    // max(compute, memory) (roofline) vs compute + memory
};

// The documented defaults (docs/cost-model.md; the same numbers as sim/profiles/default.json).
DeviceProfile default_device_profile();

// Components of an op's estimated time, for reports and tests (seconds).
struct OpCostBreakdown {
  bool measured = false;  // true: time_s is the measured time, other fields are 0
  OpClass op_class = OpClass::other;
  double compute_s = 0;  // flops / (peak * compute_efficiency)
  double memory_s = 0;   // bytes / (bandwidth * memory_efficiency)
  double launch_s = 0;   // DeviceSpec::launch_overhead_s
  double time_s = 0;     // total
};

class CostModel {
 public:
  CostModel();  // documented defaults
  // Strict readers (format "gdp-device-profile", version 1): unknown keys, missing keys,
  // wrong types and impossible numbers throw InputError naming the source, the JSON path
  // and what was expected.
  static CostModel from_json_file(const std::string& path);
  static CostModel from_json_text(const std::string& text, const std::string& source_name);
  std::string to_json() const;  // the resolved configuration, readable by from_json_text

  void set_profile(const DeviceProfile& p);  // for p.device_kind
  const DeviceProfile& profile(const std::string& device_kind) const;

  // Throws InputError when a needed peak or bandwidth of `dev` is not positive.
  double op_time_s(const Op& op, const DeviceSpec& dev) const;
  OpCostBreakdown op_cost(const Op& op, const DeviceSpec& dev) const;

 private:
  DeviceProfile default_;
  std::map<std::string, DeviceProfile> by_kind_;
};

}  // namespace gdp
