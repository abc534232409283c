// Name -> placement method, shared by the subcommands.
#include "cli/methods.h"

#include <algorithm>

#include "core/error.h"
#include "datasets/human.h"

namespace gdp::cli {

const std::vector<std::string>& placement_methods() {
  static const std::vector<std::string> m{"single", "round-robin", "human"};
  return m;
}

bool is_placement_method(const std::string& name) {
  const auto& m = placement_methods();
  return std::find(m.begin(), m.end(), name) != m.end();
}

Placement place_with_method(const std::string& method, const Graph& g, const Cluster& c,
                            std::string* note) {
  std::string n;
  Placement p;
  if (method == "single") {
    p = place_single(g, 0);
    n = "all ops on " + c.devices[0].name;
  } else if (method == "round-robin") {
    p = place_round_robin(g, c.num_devices());
    n = "ops dealt over " + std::to_string(c.num_devices()) + " devices in topological order";
  } else if (method == "human") {
    datasets::HumanPlacementInfo info;
    p = datasets::human_placement(g, c, &info);
    n = info.strategy + ", " + std::to_string(info.devices_used) + " device(s)";
    if (info.strategy == "layers") n += ", " + std::to_string(info.units) + " layers/stacks";
  } else {
    std::string known;
    for (const auto& k : placement_methods()) known += (known.empty() ? "" : ", ") + k;
    throw UsageError("unknown placement method '" + method + "' (known: " + known + ")");
  }
  if (note) *note = n;
  return p;
}

}  // namespace gdp::cli
