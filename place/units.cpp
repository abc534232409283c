// Colocation units and their expansion to placements.
#include "place/units.h"

#include <algorithm>
#include <map>
#include <string>
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
  Placement p;
  expand_into(unit_device, p);
  return p;
}

void Units::expand_into(const std::vector<int32_t>& unit_device, Placement& p) const {
  p.device.resize(unit_of.size());
  for (size_t op = 0; op < unit_of.size(); ++op) p.device[op] = unit_device[unit_of[op]];
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

UnitAdjacency unit_adjacency(const Graph& g, const Units& units) {
  const int32_t U = units.num_units();
  std::vector<std::vector<int32_t>> nb(static_cast<size_t>(U));
  for (const Edge& e : g.edges()) {
    const int32_t a = units.unit_of[static_cast<size_t>(e.src)];
    const int32_t b = units.unit_of[static_cast<size_t>(e.dst)];
    if (a == b) continue;
    nb[static_cast<size_t>(a)].push_back(b);
    nb[static_cast<size_t>(b)].push_back(a);
  }
  UnitAdjacency out;
  out.ptr.assign(static_cast<size_t>(U) + 1, 0);
  for (int32_t u = 0; u < U; ++u) {
    auto& v = nb[static_cast<size_t>(u)];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    out.neighbour.insert(out.neighbour.end(), v.begin(), v.end());
    out.ptr[static_cast<size_t>(u) + 1] = static_cast<int64_t>(out.neighbour.size());
  }
  return out;
}

UnitScopes unit_scopes(const Graph& g, const Units& units) {
  const int32_t U = units.num_units();
  UnitScopes out;
  out.of_unit.assign(static_cast<size_t>(U), {});
  std::map<std::string, int32_t> id;
  for (int32_t u = 0; u < U; ++u) {
    const std::string& s = g.op(units.first_op[static_cast<size_t>(u)]).scope;
    size_t pos = 0;
    while (!s.empty()) {
      const size_t end = s.find('/', pos);
      auto [it, inserted] = id.emplace(s.substr(0, end), static_cast<int32_t>(out.units.size()));
      if (inserted) out.units.emplace_back();
      out.units[static_cast<size_t>(it->second)].push_back(u);
      out.of_unit[static_cast<size_t>(u)].push_back(it->second);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  return out;
}

}  // namespace gdp::place
