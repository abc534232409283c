// The elite placements of a graph (rl/gdp/elites.h).
#include "rl/gdp/elites.h"

#include <cmath>

namespace gdp::rl {

bool EliteSet::offer(double step_s, const std::vector<int32_t>& actions) {
  if (capacity_ <= 0 || !std::isfinite(step_s)) return false;
  if (elites_.size() == static_cast<size_t>(capacity_) && !(step_s < elites_.back().step_s))
    return false;
  for (const Elite& e : elites_)
    if (e.actions == actions) return false;
  size_t at = elites_.size();
  while (at > 0 && step_s < elites_[at - 1].step_s) --at;
  elites_.insert(elites_.begin() + static_cast<std::ptrdiff_t>(at), Elite{step_s, actions});
  if (elites_.size() > static_cast<size_t>(capacity_)) elites_.pop_back();
  return true;
}

std::vector<int32_t> EliteSet::flat_actions() const {
  std::vector<int32_t> out;
  for (const Elite& e : elites_) out.insert(out.end(), e.actions.begin(), e.actions.end());
  return out;
}

nlohmann::ordered_json EliteSet::to_json() const {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const Elite& e : elites_) a.push_back({{"step_s", e.step_s}, {"actions", e.actions}});
  return a;
}

void EliteSet::from_json(const StrictJson& sj, const nlohmann::json& x, const std::string& p,
                         int32_t units, int32_t devices) {
  elites_.clear();
  if (!x.is_array()) sj.fail(p, "expected an array of elites");
  for (size_t i = 0; i < x.size(); ++i) {
    const std::string q = json_path(p, i);
    sj.check_keys(x[i], q, {"step_s", "actions"}, {});
    Elite e;
    e.step_s = sj.number(x[i], "step_s", q, 0, 1e30);
    const nlohmann::json& a = sj.array(x[i], "actions", q);
    if (static_cast<int64_t>(a.size()) != units)
      sj.fail(json_path(q, "actions"), "expected " + std::to_string(units) + " unit devices");
    for (size_t u = 0; u < a.size(); ++u)
      e.actions.push_back(static_cast<int32_t>(
          sj.integer_value(a[u], json_path(json_path(q, "actions"), u), 0, devices - 1)));
    elites_.push_back(std::move(e));
  }
  if (elites_.size() > static_cast<size_t>(capacity_))
    sj.fail(p, "holds " + std::to_string(elites_.size()) + " elites, the config keeps " +
                   std::to_string(capacity_));
}

}  // namespace gdp::rl
