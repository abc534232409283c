// `exhaustive`: the exact optimum by enumeration of every device assignment of the
// colocation units (D^U placements, all simulated), for tiny graphs only: the oracle the
// tests hold the other methods against. Refused with an InputError when D^U exceeds
// `max_placements` (default 3^12 = 531,441: about 12 units on 3 devices, 19 on 2) or the
// sample budget. Ties keep the first placement in enumeration order (unit 0 varies slowest),
// so the result is deterministic; the seed is not used.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "place/methods.h"
#include "place/units.h"

namespace gdp::place {

namespace {

class ExhaustivePlacer : public Placer {
 public:
  ExhaustivePlacer(int64_t max_placements, int64_t batch)
      : max_placements_(max_placements), batch_(batch) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const int32_t D = pb.num_devices();
    const Units units = Units::colocation(pb.graph());
    const int32_t U = units.num_units();
    // D^U without overflow: stop multiplying past the limit.
    int64_t total = 1;
    bool too_many = false;
    for (int32_t u = 0; u < U && !too_many; ++u) {
      if (total > max_placements_ / D) too_many = true;
      total *= D;
    }
    if (too_many || total > max_placements_)
      throw InputError(
          "exhaustive: " + std::to_string(U) + " placement units (colocation groups) on " +
          std::to_string(D) + " devices is " + std::to_string(D) + "^" + std::to_string(U) +
          " placements, more than options.max_placements = " + std::to_string(max_placements_) +
          "; exhaustive is an oracle for graphs of about 12 units on 2-3 devices");
    if (run.samples_left() < total)
      throw InputError("exhaustive: needs " + std::to_string(total) +
                       " simulated placements, the budget allows " +
                       std::to_string(run.samples_left()));
    run.set_target_samples(total);
    std::vector<int32_t> digits(U, 0);  // unit_device, an odometer with unit U-1 fastest
    int64_t done = 0;
    Placement first;
    while (done < total) {
      const int64_t b = std::min(batch_, total - done);
      std::vector<Placement> ps(b);
      for (auto& p : ps) {
        p = units.expand(digits);
        for (int32_t u = U - 1; u >= 0; --u) {
          if (++digits[u] < D) break;
          digits[u] = 0;
        }
      }
      if (done == 0) first = ps[0];
      run.evaluate(ps);
      done += b;
      run.progress();
    }
    run.set_note("optimum over all " + std::to_string(total) + " placements of " +
                 std::to_string(U) + " units on " + std::to_string(D) + " devices" +
                 (run.has_best() ? "" : " (none valid: returned the first)"));
    return run.has_best() ? run.best() : first;
  }

 private:
  int64_t max_placements_, batch_;
};

}  // namespace

MethodInfo exhaustive_method() {
  return MethodInfo{
      "exhaustive",
      "exact optimum by enumerating every device of every colocation unit (tiny graphs only)",
      {integer_option("max_placements", 531441, 1, int64_t{1} << 32,
                      "refuse graphs with more than this many placements (devices^units)"),
       integer_option("batch", 256, 1, 1 << 20, "placements simulated in parallel per batch")},
      true,
      [](const Options& o) {
        return std::make_unique<ExhaustivePlacer>(o.integer("max_placements"), o.integer("batch"));
      }};
}

}  // namespace gdp::place
