// The built-in methods, in the order `gdp place --list` shows them.
#include "place/methods.h"

namespace gdp::place {

void register_builtin_methods(Registry& r) {
  r.add(single_method());
  r.add(round_robin_method());
  r.add(human_method());
  r.add(random_method());
}

}  // namespace gdp::place
