// Simulated annealing over placement units, as a reusable search: the `anneal` method
// (place/anneal.cpp), the policy-guided `gdp-anneal` (rl/gdp/guided.cpp) and the GDP trainer's
// expert-iteration step (rl/gdp/trainer.cpp) all run this one loop. docs/baselines.md
// describes the moves and the schedule.
//
// A guide is a per-unit device distribution (a policy's softmax). With one, the "move" and
// "scope" moves draw the new device from (1 - mix) guide + mix uniform instead of uniformly;
// the neighbour and swap moves keep their structural devices. Without one (mix = 1, no table)
// the search is plain anneal, draw for draw.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/placement.h"
#include "core/rng.h"
#include "place/options.h"
#include "place/registry.h"
#include "place/run.h"
#include "place/units.h"

namespace gdp::place {

struct AnnealConfig {
  int64_t samples = 0;  // 0: the budget's samples, else 10000 (the start included)
  int64_t batch = 8;
  double t_start = 0, t_ratio = 1e-3;
  int64_t calibrate = 64;
  double critical_bias = 0.5;
  int64_t critical_every = 200;
  int64_t restart_after = 2000;
  double p_move = 0.35, p_neighbour = 0.3, p_swap = 0.2, p_scope = 0.15;
  std::string init = "best";
  std::string init_methods = "single,human,metis,m-topo,m-etf,m-sct";
  // Simulate each proposal only as far as its Metropolis test needs: the uniform number is
  // drawn first, so the step time above which the proposal is rejected is known, and the
  // simulation stops once a lower bound passes it. The same placements, fewer events.
  bool early_stop = true;
};

// The anneal options (gdp place --list), shared by the methods built on the search.
std::vector<OptionSpec> anneal_options();
// Reads and checks them; errors are InputErrors that begin with `method`.
AnnealConfig anneal_config(const Options& o, const std::string& method);

struct AnnealGuide {
  int32_t columns = 0;       // A: width of a row of probs (at least the devices)
  std::vector<float> probs;  // (U, A) each unit's device distribution; empty: no guide
  // Labels relative to unit 0's device (a symmetry-anchored policy): label 0 is unit 0's
  // current device and that device's label is 0; the other labels are devices.
  bool anchored = false;
  double mix = 1.0;  // weight of the uniform draw in (1 - mix) guide + mix uniform
  bool empty() const { return probs.empty() || mix >= 1.0; }
};

// Where a search starts: a unit assignment already simulated (and counted) by the caller.
struct AnnealStart {
  std::vector<int32_t> units;  // (U) device of each unit
  double step_s = 0;           // its simulated step time (+inf when invalid)
  std::string from;            // what it came from, for the note
  double guide_start_s = 0;    // the best of a guide's own starts (+inf: none valid)
};

struct AnnealOutcome {
  std::vector<int32_t> best;  // (U) the best unit assignment visited
  double best_energy = 0;     // its step time (or the invalid energy, above 1e9)
  double t0 = 0;              // the start temperature used (calibrated or given)
  int64_t accepted = 0, restarts = 0, samples = 0;
  int64_t limited = 0;  // proposals simulated with a finite limit (early_stop)
};

// The samples a search spans: the temperature falls over [0, n], of which `used` were spent
// before the search (its start); `seconds` > 0: it also follows run.elapsed_s() / seconds.
struct AnnealBudget {
  int64_t n = 0;
  int64_t used = 0;
  double seconds = 0;
};

// The search loop over the units of one problem. Built once per problem (unit memory, device
// capacities, unit adjacency and name scopes); search() may run many times (the trainer's
// expert step runs one short search per iteration).
class Annealer {
 public:
  Annealer(const Problem& pb, Units units);
  // From `start`, until b.n samples are spent (each counted by run; INT64_MAX: until
  // run.out_of_time()). c.t_start = 0 calibrates T0 from the first c.calibrate proposals
  // (greedy while calibrating). Everything random comes from rng.
  AnnealOutcome search(Run& run, const AnnealConfig& c, const AnnealGuide& guide,
                       const AnnealStart& start, const AnnealBudget& b, Rng& rng) const;
  // One proposal around cur, as search() draws them (crit: the critical-path units, may be
  // empty). With a guide a move that finds no other device retries, at most 8 times.
  std::vector<int32_t> proposal(const AnnealConfig& c, const AnnealGuide& g,
                                const std::vector<int32_t>& cur, const std::vector<int32_t>& crit,
                                Rng& rng) const;
  // The energy the search minimizes: the step time when finite, else 1e9 + the estimated
  // memory overflow in GiB (so that an invalid start walks toward one that fits).
  double energy(double step_s, const std::vector<int32_t>& unit_dev) const;
  const Units& units() const { return units_; }

 private:
  int32_t other_device(int32_t d, int32_t D, Rng& rng) const;
  // The guide's weight of device d for unit u: (1 - mix) p(label of d) + mix / D.
  static double guide_weight(const AnnealGuide& g, int32_t u, int32_t d, int32_t unit0_dev,
                             int32_t D);
  // A device for unit u other than cur_dev drawn from the guide mixed with uniform; -1 when
  // the guide gives no other device any mass (mix 0).
  int32_t guided_device(const AnnealGuide& g, int32_t u, int32_t cur_dev, int32_t unit0_dev,
                        int32_t D, Rng& rng) const;
  bool propose(const AnnealConfig& c, const AnnealGuide& g, std::vector<int32_t>& x,
               const std::vector<int32_t>& cur, const std::vector<int32_t>& crit, int32_t D,
               Rng& rng) const;
  std::vector<int32_t> critical_units(const std::vector<int32_t>& cur, Run& run) const;

  const Problem& pb_;
  Units units_;
  std::vector<int64_t> unit_mem_, capacity_;
  UnitAdjacency adj_;  // neighbour units
  UnitScopes scopes_;  // name-scope prefixes of the units
};

// What a guided method adds to annealing, computed once its problem is known: the guide and
// extra start placements. Called with the run (to count what it simulates itself) and the
// units the search uses.
struct GuidePlan {
  AnnealGuide guide;
  std::vector<Placement> starts;  // simulated with the start methods (counted), best kept
  std::vector<std::string> start_names;
  std::string note;  // appended to the method's note
  // The guide steers the moves only when the best of `starts` is within this relative margin
  // of the best start (else the moves are uniform, and the note says so); +inf: always.
  double gate = std::numeric_limits<double>::infinity();
};
using GuideFn = std::function<GuidePlan(Run& run, const Units& units)>;

// The anneal placer (init from c.init / c.init_methods and the guide's starts; an empty
// c.init_methods is allowed when the guide gives starts). `name` prefixes its note and errors.
std::unique_ptr<Placer> make_anneal_placer(AnnealConfig c, GuideFn guide = {},
                                           std::string name = "anneal");

}  // namespace gdp::place
