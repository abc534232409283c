// `m-topo`: Baechi's memory-constrained topological placement (Jeon et al., SoCC 2020): the
// ops in topological order fill device 0, then 1, ... each up to an even share of the
// estimated memory (total / devices + the largest group, as Baechi's code; `slack` widens
// it), the last device up to its capacity; no device past its capacity while one has room.
// Baechi's estimate leaves out received tensors, so a tight graph (GNMT-8 on 8 V100s) can
// still run out of memory by a few MB in the simulator; then, where Baechi would stop, this
// places again with the share lowered by 0.05 (`oom_retries` times, one sample each).
#include <cstdio>
#include <memory>

#include "place/baechi.h"
#include "place/cost_view.h"
#include "place/methods.h"

namespace gdp::place {

namespace {

class MTopoPlacer : public Placer {
 public:
  MTopoPlacer(bool preprocess, baechi::MemoryMode mode, double slack, int64_t oom_retries)
      : preprocess_(preprocess), mode_(mode), slack_(slack), oom_retries_(oom_retries) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const CostView cv(pb);
    const baechi::Groups groups = baechi::make_groups(pb.graph(), cv, preprocess_);
    double slack = slack_;
    for (int64_t attempt = 0;; ++attempt) {
      baechi::Plan plan = baechi::m_topo(pb.graph(), cv, groups, slack, mode_);
      Placement p = baechi::finish(run, "m-TOPO", groups, std::move(plan));
      const bool oom = !run.has_best() && run.samples() > 0;
      if (!oom || attempt >= oom_retries_ || slack - 0.05 < -0.9 || run.samples_left() <= 0) {
        if (attempt > 0) {
          char buf[96];
          std::snprintf(buf, sizeof buf,
                        "; slack lowered to %.2f after %d out-of-memory placements", slack,
                        static_cast<int>(attempt));
          run.set_note(run.note() + buf);
        }
        return p;
      }
      slack -= 0.05;
    }
  }

 private:
  bool preprocess_;
  baechi::MemoryMode mode_;
  double slack_;
  int64_t oom_retries_;
};

}  // namespace

MethodInfo m_topo_method() {
  return MethodInfo{
      "m-topo",
      "Baechi's m-TOPO: topological order filling each device up to an even memory share",
      {baechi::preprocess_option(), baechi::memory_option(),
       number_option("slack", 0, -0.9, 100,
                     "the share per device is (1 + slack) * total memory / devices + the "
                     "largest group"),
       integer_option("oom_retries", 4, 0, 18,
                      "when the simulator reports out of memory, place again with slack lowered "
                      "by 0.05, at most this many times")},
      false,
      [](const Options& o) {
        return std::make_unique<MTopoPlacer>(o.boolean("preprocess"),
                                             baechi::memory_mode(o.string("memory"), false),
                                             o.number("slack"), o.integer("oom_retries"));
      }};
}

}  // namespace gdp::place
