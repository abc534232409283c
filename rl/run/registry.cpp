// The learner registry (rl/run/registry.h).
#include "rl/run/registry.h"

#include <stdexcept>

#include "core/error.h"

namespace gdp::rl {

void LearnerRegistry::add(LearnerMethod m) {
  if (has(m.name)) throw std::logic_error("LearnerRegistry: '" + m.name + "' added twice");
  methods_.push_back(std::move(m));
}

bool LearnerRegistry::has(const std::string& name) const {
  for (const LearnerMethod& m : methods_)
    if (m.name == name) return true;
  return false;
}

std::vector<std::string> LearnerRegistry::names() const {
  std::vector<std::string> n;
  for (const LearnerMethod& m : methods_) n.push_back(m.name);
  return n;
}

const LearnerMethod& LearnerRegistry::find(const std::string& name,
                                           const std::string& source) const {
  for (const LearnerMethod& m : methods_)
    if (m.name == name) return m;
  std::string list;
  for (const LearnerMethod& m : methods_) list += (list.empty() ? "" : ", ") + m.name;
  throw InputError(source + ": method: expected one of " + list + ", got '" + name + "'");
}

}  // namespace gdp::rl
