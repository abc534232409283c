// Small hand-built graphs and clusters for the simulator tests. All constants are powers of
// two so that every time in a closed-form answer is exact in floating point.
#pragma once

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/cost_model.h"

namespace gdp::test {

constexpr double kPeakFlops = 1099511627776.0;  // 2^40 flop/s
constexpr double kMemBw_Bps = 1073741824.0;     // 2^30 B/s
constexpr double kLaunch_s = 1.0 / 1024;        // 2^-10 s
constexpr double kLinkBw_Bps = 1073741824.0;    // 2^30 B/s
constexpr double kLinkLat_s = 1.0 / 128;        // 2^-7 s

inline DeviceSpec test_device(const std::string& name, int64_t memory_bytes = int64_t(1) << 40) {
  DeviceSpec d;
  d.name = name;
  d.kind = "T";
  d.peak_fp32_flops = kPeakFlops;
  d.peak_fp16_flops = 2 * kPeakFlops;
  d.mem_bandwidth_Bps = kMemBw_Bps;
  d.memory_bytes = memory_bytes;
  d.launch_overhead_s = kLaunch_s;
  return d;
}

// n devices, every pair joined by one link (bandwidth and latency as given).
inline Cluster full_mesh(int n, double bw = kLinkBw_Bps, double lat = kLinkLat_s,
                         int64_t memory_bytes = int64_t(1) << 40) {
  Cluster c;
  c.name = "test_mesh" + std::to_string(n);
  for (int i = 0; i < n; ++i)
    c.devices.push_back(test_device("gpu" + std::to_string(i), memory_bytes));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) c.links.push_back({i, j, bw, lat});
  c.finalize();
  return c;
}

// A cost model whose efficiencies are all 1/2 (so times stay dyadic), roofline max.
inline CostModel half_efficiency_model(bool roofline_max = true) {
  DeviceProfile p;
  for (OpClass k : all_op_classes()) {
    p.compute_efficiency[k] = 0.5;
    p.memory_efficiency[k] = 0.5;
  }
  p.roofline_max = roofline_max;
  CostModel m;
  m.set_profile(p);
  return m;
}

// An op with a measured time on kind "T" (no launch overhead added), one output tensor.
inline Op timed_op(const std::string& name, double time_s, int64_t out_bytes = 1024) {
  Op op;
  op.name = name;
  op.type = "MatMul";
  op.measured.push_back({"T", time_s});
  TensorSpec t;
  t.shape = {out_bytes / 4};
  t.bytes = out_bytes;
  op.outputs.push_back(t);
  return op;
}

// Every op on device d.
inline Placement on_device(const Graph& g, int32_t d) {
  return Placement{std::vector<int32_t>(g.num_ops(), d)};
}

inline Placement placement_of(std::vector<int32_t> devs) {
  Placement p;
  p.device = std::move(devs);
  return p;
}

}  // namespace gdp::test
