// The step-time lower bound of a graph on a cluster, which no placement can beat: the
// larger of the longest path of op times (each op on its fastest device, transfers free) and
// the total op time (each op on its fastest device) divided by the device count. Every
// result is reported beside it, so a method's gap to the optimum is bounded from above.
#pragma once

#include "sim/simulator.h"

namespace gdp {

struct StepBound {
  double critical_path_s = 0;  // longest path, op times on their fastest device
  double work_s = 0;           // sum of fastest op times / devices
  double bound_s = 0;          // max of the two
};

// Uses the simulator's op time table (so `--profile` and measured times count).
StepBound step_time_lower_bound(const Simulator& sim);

}  // namespace gdp
