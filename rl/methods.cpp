// The learned methods, one line each (rl/methods.h). A new method is a folder of rl/ with a
// header declaring its place methods' registration and its learner, and one line below.
#include "rl/methods.h"

#include "rl/gdp/method.h"
#include "rl/hdp/method.h"
#include "rl/placeto/method.h"

namespace gdp::rl {

namespace {

struct Method {
  void (*places)(place::Registry&);
  LearnerMethod (*learner)();
};

const Method kMethods[] = {
    {gdp_places, gdp_learner},
    {hdp_places, hdp_learner},
    {placeto_places, placeto_learner},
};

}  // namespace

void register_methods(place::Registry& r) {
  for (const Method& m : kMethods) m.places(r);
}

const LearnerRegistry& learners() {
  static const LearnerRegistry r = [] {
    LearnerRegistry x;
    for (const Method& m : kMethods) x.add(m.learner());
    return x;
  }();
  return r;
}

}  // namespace gdp::rl
