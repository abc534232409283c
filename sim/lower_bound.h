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

// Bytes that every placement holds at once, summed over the devices (docs/cost-model.md, 4):
// the resident bytes of all ops, plus, for an op v, the tensors live when v starts: v's own
// outputs and temporaries, and every output of an ancestor of v that v or a descendant of v
// still reads (all ancestors have ended, no reader has; a tensor read on another device is
// held by its producer until it arrives, then as the received copy: min(tensor bytes, its
// smallest edge) counts). The largest such cut over up to `cuts` candidate ops (the deepest
// forward ops before the backward pass, e.g. the loss, and ops spread evenly over the
// topological order), each found in O(N + E). A placement whose devices' capacities sum to
// less is out of memory, so the bound masks device counts a policy must not use
// (rl/gdp/policy.h, "devices used").
int64_t memory_lower_bound_bytes(const Graph& g, int32_t cuts = 24);

// The fewest of the cluster's first devices (in its order) whose capacities sum to at least
// `bytes`; 0 when even all of them fall short. A capacity <= 0 is unlimited.
int32_t fewest_devices_holding(const Cluster& c, int64_t bytes);

}  // namespace gdp
