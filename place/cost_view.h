// What the algorithmic baselines (METIS, Baechi's m-TOPO / m-ETF / m-SCT, anneal) know of the
// cost model: the simulator's own op time table, uncontended transfer times along the
// cluster's routes, and a conservative per-op memory estimate, so that they plan with the
// numbers the simulator will charge. Built once per placement run (O(ops x devices + D^2)).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "place/problem.h"

namespace gdp::place {

class CostView {
 public:
  explicit CostView(const Problem& problem);

  int32_t num_ops() const { return num_ops_; }
  int32_t num_devices() const { return num_devices_; }
  // Time of op i on device d: the simulator's table (measured or roofline, with launch).
  double op_time_s(int32_t op, int32_t d) const {
    return op_time_[static_cast<size_t>(op) * num_devices_ + d];
  }
  double fastest_time_s(int32_t op) const { return fastest_[op]; }
  double mean_time_s(int32_t op) const { return mean_[op]; }
  // Uncontended time of `bytes` from device s to device d: sum of the route's latencies +
  // bytes / the route's bottleneck bandwidth (docs/cost-model.md, section 3); 0 when s == d.
  double transfer_s(int64_t bytes, int32_t s, int32_t d) const {
    if (s == d) return 0;
    const size_t k = static_cast<size_t>(s) * num_devices_ + d;
    return latency_s_[k] + static_cast<double>(bytes) / bottleneck_Bps_[k];
  }
  // Mean over ordered pairs of distinct devices (0 with one device): the communication cost
  // of an edge before its endpoints are placed (m-SCT's LP, METIS's edge weights).
  double mean_transfer_s(int64_t bytes) const {
    return num_devices_ < 2 ? 0 : mean_latency_s_ + static_cast<double>(bytes) * mean_inv_Bps_;
  }
  // Conservative memory of an op on its device: resident (weights + optimizer state) +
  // outputs + temporaries, as if all were alive at once. Summed over a device's ops (plus the
  // tensors it receives) it bounds the simulator's peak from above, so a placement that
  // respects capacity by this estimate is valid in the simulator.
  int64_t op_memory_bytes(int32_t op) const { return op_memory_[op]; }
  int64_t total_memory_bytes() const { return total_memory_; }
  // Device capacity; a capacity <= 0 in the cluster means unlimited (INT64_MAX here).
  int64_t capacity_bytes(int32_t d) const { return capacity_[d]; }

 private:
  int32_t num_ops_ = 0, num_devices_ = 0;
  std::vector<double> op_time_;  // (ops, devices)
  std::vector<double> fastest_, mean_;
  std::vector<double> latency_s_, bottleneck_Bps_;  // (devices, devices)
  double mean_latency_s_ = 0, mean_inv_Bps_ = 0;
  std::vector<int64_t> op_memory_;
  int64_t total_memory_ = 0;
  std::vector<int64_t> capacity_;
};

}  // namespace gdp::place
