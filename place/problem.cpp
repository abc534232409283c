// Problem: the shared simulator is built once, on first use.
#include "place/problem.h"

#include "core/error.h"

namespace gdp::place {

Problem::Problem(const Graph& g, const Cluster& c, const CostModel& cost, SimOptions sim_options)
    : graph_(&g), cluster_(&c), cost_(&cost), sim_options_(sim_options) {
  if (!g.finalized()) throw InputError("graph '" + g.name + "' is not finalized");
  if (c.num_devices() < 1) throw InputError("cluster '" + c.name + "' has no devices");
}

const Simulator& Problem::simulator() const {
  std::call_once(
      once_, [&] { sim_ = std::make_unique<Simulator>(*graph_, *cluster_, *cost_, sim_options_); });
  return *sim_;
}

}  // namespace gdp::place
