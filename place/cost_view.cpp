// CostView: the simulator's op times, route latencies and bottlenecks, memory estimates.
#include "place/cost_view.h"

#include <algorithm>

namespace gdp::place {

CostView::CostView(const Problem& problem) {
  const Simulator& sim = problem.simulator();
  const Graph& g = problem.graph();
  const Cluster& c = problem.cluster();
  num_ops_ = g.num_ops();
  num_devices_ = c.num_devices();
  const int32_t D = num_devices_;
  op_time_.resize(static_cast<size_t>(num_ops_) * D);
  fastest_.resize(num_ops_);
  mean_.resize(num_ops_);
  for (int32_t i = 0; i < num_ops_; ++i) {
    double lo = std::numeric_limits<double>::infinity(), sum = 0;
    for (int32_t d = 0; d < D; ++d) {
      const double t = sim.op_time_s(i, d);
      op_time_[static_cast<size_t>(i) * D + d] = t;
      lo = std::min(lo, t);
      sum += t;
    }
    fastest_[i] = lo;
    mean_[i] = sum / D;
  }
  latency_s_.assign(static_cast<size_t>(D) * D, 0);
  bottleneck_Bps_.assign(static_cast<size_t>(D) * D, std::numeric_limits<double>::infinity());
  double lat_sum = 0, inv_sum = 0;
  for (int32_t s = 0; s < D; ++s)
    for (int32_t d = 0; d < D; ++d) {
      if (s == d) continue;
      const RouteCost rc = c.route_cost(s, d);
      const double lat = rc.latency_s, bw = rc.bottleneck_Bps;
      latency_s_[static_cast<size_t>(s) * D + d] = lat;
      bottleneck_Bps_[static_cast<size_t>(s) * D + d] = bw;
      lat_sum += lat;
      inv_sum += 1.0 / bw;
    }
  if (D > 1) {
    const double pairs = static_cast<double>(D) * (D - 1);
    mean_latency_s_ = lat_sum / pairs;
    mean_inv_Bps_ = inv_sum / pairs;
  }
  op_memory_.resize(num_ops_);
  for (int32_t i = 0; i < num_ops_; ++i) {
    const Op& o = g.op(i);
    op_memory_[i] = o.resident_bytes() + o.output_bytes() + o.temp_bytes;
    total_memory_ += op_memory_[i];
  }
  capacity_.resize(D);
  for (int32_t d = 0; d < D; ++d) {
    const int64_t cap = c.devices[d].memory_bytes;
    capacity_[d] = cap > 0 ? cap : std::numeric_limits<int64_t>::max();
  }
}

}  // namespace gdp::place
