// The built-in methods' registrations (one file each); place/builtin.cpp adds them.
#pragma once

#include "place/registry.h"

namespace gdp::place {

MethodInfo single_method();       // place/single.cpp
MethodInfo round_robin_method();  // place/round_robin.cpp
MethodInfo human_method();        // place/human.cpp
MethodInfo random_method();       // place/random.cpp
// The algorithmic baselines (docs/baselines.md).
MethodInfo metis_method();       // place/metis.cpp
MethodInfo m_topo_method();      // place/baechi_topo.cpp
MethodInfo m_etf_method();       // place/baechi_etf.cpp
MethodInfo m_sct_method();       // place/baechi_sct.cpp
MethodInfo anneal_method();      // place/anneal.cpp
MethodInfo exhaustive_method();  // place/exhaustive.cpp
// The non-learned control of the stage coordinates (place/stages.h).
MethodInfo stage_cut_method();  // place/stage_cut.cpp

}  // namespace gdp::place
