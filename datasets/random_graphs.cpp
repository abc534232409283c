// Registry entry of the random families ("gdp gen random --family F --ops N --seed S"); the
// registry lists it because this file exists (registry.cpp tests for it with __has_include).
#include <string>

#include "core/error.h"
#include "datasets/random_families.h"
#include "datasets/registry.h"

namespace gdp::datasets {

namespace {

std::string family_list() {
  std::string r;
  for (const auto& f : random_family_names()) r += (r.empty() ? "" : ", ") + f;
  return r;
}

RandomGraphOptions to_random_options(const GenOptions& g) {
  RandomGraphOptions o;
  if (!parse_random_family(g.family, &o.family))
    throw InputError("random: unknown family '" + g.family + "' (known: " + family_list() + ")");
  o.ops = g.ops;
  o.seed = static_cast<uint64_t>(g.seed);
  return o;
}

void validate_random(const GenOptions& g) {
  to_random_options(g);
  if (g.ops < kRandomMinOps || g.ops > kRandomMaxOps)
    throw InputError("random: option 'ops' must be in [" + std::to_string(kRandomMinOps) + ", " +
                     std::to_string(kRandomMaxOps) + "], got " + std::to_string(g.ops));
}

}  // namespace

ModelSpec random_spec() {
  ModelSpec m;
  m.name = "random";
  m.summary =
      "random training graph (family " + family_list() + "; default layered, 1000 ops, seed 1)";
  m.options = {"family", "ops", "seed"};
  m.defaults.family = "layered";
  m.defaults.ops = 1000;
  m.defaults.seed = 1;
  m.validate = validate_random;
  m.generate = [](const GenOptions& g) { return make_random_graph(to_random_options(g)); };
  return m;
}

}  // namespace gdp::datasets
