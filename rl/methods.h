// The learned methods of the project, each a folder of rl/ that registers itself with one line
// in rl/methods.cpp:
//   gdp      rl/gdp      place methods "gdp" and "gdp-anneal", learner "gdp"
//   hdp      rl/hdp      place method "hdp", learner "hdp"
//   placeto  rl/placeto  place method "placeto", learner "placeto"
// A program calls register_methods once at start (cli/main.cpp), after which every name-based
// entry point (gdp place, compare, the evaluator) reaches the place methods; `gdp train` finds
// the learners in learners() (rl/run/session.h takes the registry).
#pragma once

#include "place/registry.h"
#include "rl/run/registry.h"

namespace gdp::rl {

// Adds every learned method's place methods to `r`.
void register_methods(place::Registry& r);
// Every learned method's learner, built once.
const LearnerRegistry& learners();

}  // namespace gdp::rl
