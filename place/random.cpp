// `random`: the best of N uniformly random placements (a device per colocation unit, so
// groups stay together), simulated in parallel batches. The floor every search must beat
// at an equal budget. N: the option `samples` when set, else the budget's samples, else
// 1000 (unbounded when the budget sets only seconds); always within the budget.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/rng.h"
#include "place/methods.h"
#include "place/units.h"

namespace gdp::place {

namespace {

constexpr int64_t kDefaultSamples = 1000;

class RandomPlacer : public Placer {
 public:
  RandomPlacer(int64_t samples, int64_t batch) : samples_(samples), batch_(batch) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const int32_t D = pb.num_devices();
    const Units units = Units::colocation(pb.graph());
    int64_t n = samples_ > 0 ? samples_ : run.budget().samples;
    if (n <= 0)
      n = run.budget().seconds > 0 ? std::numeric_limits<int64_t>::max() : kDefaultSamples;
    n = std::min(n, run.samples_left());
    if (n != std::numeric_limits<int64_t>::max()) run.set_target_samples(n);
    // Batches no larger than ~64M op entries, so that 1M-op graphs stay in memory.
    const int64_t max_batch = std::max<int64_t>(1, (int64_t{64} << 20) / pb.graph().num_ops());
    const int64_t batch = std::min(batch_, max_batch);

    Rng rng(run.seed());
    std::vector<int32_t> unit_dev(units.num_units());
    Placement first;
    int64_t done = 0;
    while (done < n && !(done > 0 && run.out_of_time())) {
      const int64_t b = std::min(batch, n - done);
      std::vector<Placement> ps(b);
      for (auto& p : ps) {
        for (auto& d : unit_dev) d = static_cast<int32_t>(rng.below(D));
        p = units.expand(unit_dev);
      }
      if (done == 0) first = ps[0];
      run.evaluate(ps);
      done += b;
      run.progress();
    }
    char buf[160];
    if (run.has_best()) {
      std::snprintf(buf, sizeof buf, "best of %lld random placements of %d units over %d devices",
                    static_cast<long long>(done), units.num_units(), D);
      run.set_note(buf);
      return run.best();
    }
    std::snprintf(buf, sizeof buf, "none of %lld random placements was valid; returned the first",
                  static_cast<long long>(done));
    run.set_note(buf);
    return first;
  }

 private:
  int64_t samples_, batch_;
};

}  // namespace

MethodInfo random_method() {
  return MethodInfo{
      "random",
      "best of N uniformly random placements (a device per colocation unit)",
      {integer_option("samples", 0, 0, int64_t{1} << 40, "N; 0 = the budget's samples, else 1000"),
       integer_option("batch", 64, 1, 1 << 20, "placements simulated in parallel per batch")},
      true,
      [](const Options& o) {
        return std::make_unique<RandomPlacer>(o.integer("samples"), o.integer("batch"));
      }};
}

}  // namespace gdp::place
