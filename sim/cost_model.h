// Cost model: the time of an op on a device. Measured time when the graph carries one for
// the device kind; else a roofline from flops and bytes with per-op-class efficiencies and a
// launch overhead, the efficiencies read from a device profile JSON (docs/cost-model.md).
#pragma once

#include <map>
#include <string>

#include "core/cluster.h"
#include "core/graph.h"

namespace gdp {

enum class OpClass : uint8_t { matmul, conv, elementwise, reduction, memory, other };
OpClass classify_op(const std::string& op_type);

struct DeviceProfile {
  std::string device_kind;  // "" = applies to any kind
  // Fraction of peak reached per op class, for compute and memory.
  std::map<OpClass, double> compute_efficiency;
  std::map<OpClass, double> memory_efficiency;
  bool use_fp16_peak = false;   // price flops at the tensor-core peak
  bool roofline_max = true;     // max(compute, memory) (roofline) vs compute + memory
};

class CostModel {
 public:
  CostModel();  // documented defaults
  static CostModel from_json_file(const std::string& path);  // strict, throws InputError
  void set_profile(const DeviceProfile& p);                   // for p.device_kind
  const DeviceProfile& profile(const std::string& device_kind) const;

  double op_time_s(const Op& op, const DeviceSpec& dev) const;

 private:
  DeviceProfile default_;
  std::map<std::string, DeviceProfile> by_kind_;
};

}  // namespace gdp
