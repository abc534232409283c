// Step-time lower bound: longest path and work bound over the simulator's op time table.
#include "sim/lower_bound.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace gdp {

StepBound step_time_lower_bound(const Simulator& sim) {
  const Graph& g = sim.graph();
  const int32_t D = sim.cluster().num_devices();
  std::vector<double> finish(g.num_ops(), 0);
  StepBound b;
  double work = 0;
  for (int32_t op : g.topo_order()) {
    double t = std::numeric_limits<double>::infinity();
    for (int32_t d = 0; d < D; ++d) t = std::min(t, sim.op_time_s(op, d));
    double start = 0;
    for (int64_t e = g.in_ptr()[op]; e < g.in_ptr()[op + 1]; ++e)
      start = std::max(start, finish[g.edges()[g.in_edge_ids()[e]].src]);
    finish[op] = start + t;
    b.critical_path_s = std::max(b.critical_path_s, finish[op]);
    work += t;
  }
  b.work_s = D > 0 ? work / D : 0;
  b.bound_s = std::max(b.critical_path_s, b.work_s);
  return b;
}

}  // namespace gdp
