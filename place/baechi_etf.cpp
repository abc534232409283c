// `m-etf`: Baechi's memory-constrained earliest-task-first placement (Jeon et al., SoCC 2020;
// ETF of Hwang et al. 1989): list scheduling that starts, again and again, the ready op on
// the device where it can start earliest (device free, data arrival with the simulator's
// transfer times), among the devices where its group fits by the memory estimate.
#include <memory>

#include "place/baechi.h"
#include "place/cost_view.h"
#include "place/methods.h"

namespace gdp::place {

namespace {

class MEtfPlacer : public Placer {
 public:
  MEtfPlacer(bool preprocess, baechi::MemoryMode mode) : preprocess_(preprocess), mode_(mode) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const CostView cv(pb);
    const baechi::Groups groups = baechi::make_groups(pb.graph(), cv, preprocess_);
    baechi::Plan plan = baechi::list_schedule(pb.graph(), cv, groups, nullptr, mode_);
    return baechi::finish(run, "m-ETF", groups, std::move(plan));
  }

 private:
  bool preprocess_;
  baechi::MemoryMode mode_;
};

}  // namespace

MethodInfo m_etf_method() {
  return MethodInfo{
      "m-etf",
      "Baechi's m-ETF: earliest-task-first list scheduling with transfers and memory limits",
      {baechi::preprocess_option(), baechi::memory_option()},
      false,
      [](const Options& o) {
        return std::make_unique<MEtfPlacer>(o.boolean("preprocess"),
                                            baechi::memory_mode(o.string("memory"), true));
      }};
}

}  // namespace gdp::place
