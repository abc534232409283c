// `m-sct`: Baechi's memory-constrained small-communication-time placement (Jeon et al.,
// SoCC 2020; Hanen & Munier's favourite-child rule): favourite children from the LP
// relaxation (GLPK; past `lp_max_ops` ops, or when the LP does not reach an optimum, the
// child with the largest transfer), then ETF list scheduling in which a device that ran a
// parent waits for its ready favourite child unless another op is urgent.
#include <cstdio>
#include <memory>

#include "place/baechi.h"
#include "place/cost_view.h"
#include "place/methods.h"

namespace gdp::place {

namespace {

class MSctPlacer : public Placer {
 public:
  MSctPlacer(bool preprocess, baechi::MemoryMode mode, int64_t lp_max_ops, double lp_time_limit_s,
             double threshold)
      : preprocess_(preprocess),
        mode_(mode),
        lp_max_ops_(lp_max_ops),
        lp_time_limit_s_(lp_time_limit_s),
        threshold_(threshold) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const CostView cv(pb);
    const baechi::Groups groups = baechi::make_groups(pb.graph(), cv, preprocess_);
    const baechi::Favourites fav = baechi::favourite_children(pb.graph(), cv, groups, lp_max_ops_,
                                                              lp_time_limit_s_, threshold_);
    baechi::Plan plan = baechi::list_schedule(pb.graph(), cv, groups, &fav.child, mode_);
    int64_t favourites = 0;
    for (int32_t c : fav.child) favourites += c >= 0;
    char buf[256];
    if (fav.from_lp)
      std::snprintf(buf, sizeof buf,
                    "; %lld favourite children from the LP (%d rows, %d columns, %.3g s, "
                    "relaxed makespan %.4g s)",
                    static_cast<long long>(favourites), fav.lp_rows, fav.lp_cols, fav.lp_s,
                    fav.lp_makespan_s);
    else
      std::snprintf(buf, sizeof buf, "; %lld favourite children by largest transfer (no LP: %s)",
                    static_cast<long long>(favourites), fav.why.c_str());
    plan.extra += buf;
    return baechi::finish(run, "m-SCT", groups, std::move(plan));
  }

 private:
  bool preprocess_;
  baechi::MemoryMode mode_;
  int64_t lp_max_ops_;
  double lp_time_limit_s_, threshold_;
};

}  // namespace

MethodInfo m_sct_method() {
  return MethodInfo{
      "m-sct",
      "Baechi's m-SCT: ETF with favourite children from the small-communication-time LP",
      {baechi::preprocess_option(), baechi::memory_option(),
       integer_option("lp_max_ops", 2000, 0, int64_t{1} << 31,
                      "largest graph (ops) whose LP is solved; larger: favourite child = "
                      "largest transfer"),
       number_option("lp_time_limit_s", 20, 0.001, 86400,
                     "the LP's time limit; past it: favourite child = largest transfer"),
       number_option("threshold", 0.5, 0, 1, "x_ij below it: j is i's favourite child")},
      false,
      [](const Options& o) {
        return std::make_unique<MSctPlacer>(
            o.boolean("preprocess"), baechi::memory_mode(o.string("memory"), true),
            o.integer("lp_max_ops"), o.number("lp_time_limit_s"), o.number("threshold"));
      }};
}

}  // namespace gdp::place
