// Built-in placements (single device, round-robin) and colocation enforcement.
#include "core/placement.h"

#include <unordered_map>

#include "core/error.h"
#include "core/graph.h"

namespace gdp {

Placement place_single(const Graph& g, int32_t device) {
  return Placement{std::vector<int32_t>(g.num_ops(), device)};
}

Placement place_round_robin(const Graph& g, int32_t num_devices) {
  if (num_devices < 1) throw InputError("round-robin placement needs at least one device");
  Placement p{std::vector<int32_t>(g.num_ops(), 0)};
  int32_t k = 0;
  for (int32_t op : g.topo_order()) p.device[op] = (k++) % num_devices;
  enforce_colocation(g, p);
  return p;
}

void enforce_colocation(const Graph& g, Placement& p) {
  std::unordered_map<std::string, int32_t> first;
  for (int32_t op : g.topo_order()) {
    const std::string& grp = g.op(op).colocation;
    if (grp.empty()) continue;
    auto [it, inserted] = first.emplace(grp, p.device[op]);
    if (!inserted) p.device[op] = it->second;
  }
}

}  // namespace gdp
