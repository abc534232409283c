// `m-topo`: Baechi's memory-constrained topological placement (Jeon et al., SoCC 2020): the
// ops in topological order fill device 0, then 1, ... each up to an even share of the
// estimated memory (total / devices + the largest group, as Baechi's code; `slack` widens
// it), the last device up to its capacity; no device past its capacity while one has room.
#include <memory>

#include "place/baechi.h"
#include "place/cost_view.h"
#include "place/methods.h"

namespace gdp::place {

namespace {

class MTopoPlacer : public Placer {
 public:
  MTopoPlacer(bool preprocess, baechi::MemoryMode mode, double slack)
      : preprocess_(preprocess), mode_(mode), slack_(slack) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const CostView cv(pb);
    const baechi::Groups groups = baechi::make_groups(pb.graph(), cv, preprocess_);
    baechi::Plan plan = baechi::m_topo(pb.graph(), cv, groups, slack_, mode_);
    return baechi::finish(run, "m-TOPO", groups, std::move(plan));
  }

 private:
  bool preprocess_;
  baechi::MemoryMode mode_;
  double slack_;
};

}  // namespace

MethodInfo m_topo_method() {
  return MethodInfo{
      "m-topo",
      "Baechi's m-TOPO: topological order filling each device up to an even memory share",
      {baechi::preprocess_option(), baechi::memory_option(),
       number_option("slack", 0, -0.9, 100,
                     "the share per device is (1 + slack) * total memory / devices + the "
                     "largest group")},
      false,
      [](const Options& o) {
        return std::make_unique<MTopoPlacer>(o.boolean("preprocess"),
                                             baechi::memory_mode(o.string("memory"), false),
                                             o.number("slack"));
      }};
}

}  // namespace gdp::place
