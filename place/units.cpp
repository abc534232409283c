// Colocation units and their expansion to placements.
#include "place/units.h"

#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace gdp::place {

Units Units::colocation(const Graph& g) {
  if (!g.finalized()) throw InputError("graph '" + g.name + "' is not finalized");
  Units u;
  u.unit_of.assign(g.num_ops(), -1);
  std::unordered_map<std::string_view, int32_t> group;
  for (int32_t op : g.topo_order()) {
    const std::string& grp = g.op(op).colocation;
    if (!grp.empty()) {
      auto [it, inserted] = group.emplace(grp, u.num_units());
      if (!inserted) {
        u.unit_of[op] = it->second;
        continue;
      }
    }
    u.unit_of[op] = u.num_units();
    u.first_op.push_back(op);
  }
  return u;
}

Placement Units::expand(const std::vector<int32_t>& unit_device) const {
  Placement p{std::vector<int32_t>(unit_of.size())};
  for (size_t op = 0; op < unit_of.size(); ++op) p.device[op] = unit_device[unit_of[op]];
  return p;
}

void enforce_colocation(const Graph& g, Placement& p) {
  std::unordered_map<std::string_view, int32_t> first;
  for (int32_t op : g.topo_order()) {
    const std::string& grp = g.op(op).colocation;
    if (grp.empty()) continue;
    auto [it, inserted] = first.emplace(grp, p.device[op]);
    if (!inserted) p.device[op] = it->second;
  }
}

}  // namespace gdp::place
