// Baechi's options shared by m-TOPO, m-ETF and m-SCT, and the plan's simulation
// (place/baechi.h). The machinery is split by concept: baechi_groups.cpp, baechi_memory.cpp,
// baechi_topo_plan.cpp, baechi_schedule.cpp, baechi_lp.cpp; the methods are baechi_topo.cpp,
// baechi_etf.cpp and baechi_sct.cpp.
#include "place/baechi.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <queue>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "place/baechi_detail.h"

namespace gdp::place::baechi {

using namespace detail;

OptionSpec memory_option() {
  return string_option("memory", "baechi", {"baechi", "bound"},
                       "memory account: baechi = Baechi's own (m-TOPO: op memory; m-ETF/m-SCT: "
                       "outputs freed once consumed, along the schedule), bound = every op's "
                       "memory and received tensor for the whole step (never out of memory)");
}

MemoryMode memory_mode(const std::string& option, bool list_scheduler) {
  if (option == "bound") return MemoryMode::bound;
  return list_scheduler ? MemoryMode::dynamic : MemoryMode::topo;
}

OptionSpec preprocess_option() {
  return boolean_option("preprocess", true,
                        "Baechi's co-placement: backward ops with their forward op, updates with "
                        "their weights, chains fused (colocation groups are always kept)");
}

Placement finish(Run& run, const std::string& label, const Groups& groups, Plan plan) {
  const Graph& g = run.problem().graph();
  const bool simulate = run.samples_left() > 0;
  if (simulate) run.evaluate(plan.placement);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %d ops in %d groups", label.c_str(), g.num_ops(),
                groups.num_groups());
  std::string note = buf;
  if (plan.makespan_s > 0) {
    std::snprintf(buf, sizeof buf, ", predicted makespan %.4g s", plan.makespan_s);
    note += buf;
  }
  std::snprintf(buf, sizeof buf, ", memory max %.2f of capacity", plan.memory_fraction);
  note += buf;
  note += plan.extra;
  if (plan.over_memory > 0)
    note += "; by the memory estimate " + std::to_string(plan.over_memory) +
            " ops fit on no device: placed on the least-loaded one (the simulator may report out "
            "of memory)";
  if (!simulate) note += "; not simulated (no samples left in the budget)";
  run.set_note(note);
  return std::move(plan.placement);
}

}  // namespace gdp::place::baechi
