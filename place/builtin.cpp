// The built-in methods, in the order `gdp place --list` shows them.
#include "place/methods.h"

namespace gdp::place {

void register_builtin_methods(Registry& r) {
  r.add(single_method());
  r.add(round_robin_method());
  r.add(human_method());
  r.add(random_method());
  r.add(metis_method());
  r.add(m_topo_method());
  r.add(m_etf_method());
  r.add(m_sct_method());
  r.add(anneal_method());
  r.add(exhaustive_method());
  r.add(stage_cut_method());
}

}  // namespace gdp::place
