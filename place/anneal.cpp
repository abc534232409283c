// `anneal`: simulated annealing over placements, every candidate scored by the simulator.
// The baseline that tells whether learning beats plain search at an equal sample budget.
//
// State: a device per colocation unit (so groups stay together). Moves (docs/baselines.md):
//   move      one unit to a random other device;
//   neighbour one unit to the device of one of its producers or consumers (removes a transfer);
//   swap      two units on different devices exchange devices;
//   scope     every unit under a name scope prefix (a layer, a time step: the unit's scope cut
//             at a random depth) moves to one device.
// The unit a move starts from is drawn from the current placement's critical path with
// probability `critical_bias` (refreshed by a full simulation every `critical_every` samples),
// else uniformly. Proposals are simulated `batch` at a time in parallel; each passes the
// Metropolis test on the relative change (E' - E) / E at temperature T independently, and the
// best passing one is applied. T falls geometrically from `t_start` to `t_start * t_ratio`
// over the budget (samples, else seconds); t_start = 0 (default) calibrates it from the first
// `calibrate` proposals so that their 90th-percentile worsening passes with probability 1/2
// (docs/baselines.md: tried against fixed values); after
// `restart_after` samples without a new best the search returns to the best placement. Energy: the
// step time when valid; an invalid placement costs more than any valid one and is ordered by its
// estimated memory overflow (CostView), so a start that does not fit walks toward one that does.
// Start (`init`): "best" = the best valid placement of the methods in `init_methods`, or
// "random", or any one registered method. Their simulations count against the budget.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "place/cost_view.h"
#include "place/methods.h"
#include "place/units.h"

namespace gdp::place {

namespace {

constexpr int64_t kDefaultSamples = 10000;

struct AnnealConfig {
  int64_t samples = 0;
  int64_t batch = 8;
  double t_start = 0, t_ratio = 1e-3;
  int64_t calibrate = 64;
  double critical_bias = 0.5;
  int64_t critical_every = 200;
  int64_t restart_after = 2000;
  double p_move = 0.35, p_neighbour = 0.3, p_swap = 0.2, p_scope = 0.15;
  std::string init = "best";
  std::string init_methods = "single,human,metis,m-topo,m-etf,m-sct";
};

class AnnealPlacer : public Placer {
 public:
  explicit AnnealPlacer(AnnealConfig c) : c_(std::move(c)) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const Graph& g = pb.graph();
    const int32_t D = pb.num_devices();
    units_ = Units::colocation(g);
    const int32_t U = units_.num_units();
    CostView cv(pb);
    build_unit_tables(g, cv);

    int64_t n = c_.samples > 0 ? c_.samples : run.budget().samples;
    if (n <= 0)
      n = run.budget().seconds > 0 ? std::numeric_limits<int64_t>::max() : kDefaultSamples;
    n = std::min(n, run.samples_left());
    if (n != std::numeric_limits<int64_t>::max()) run.set_target_samples(n);
    const int64_t start_samples = run.samples();
    auto used = [&] { return run.samples() - start_samples; };
    auto left = [&] { return n == std::numeric_limits<int64_t>::max() ? n : n - used(); };

    // --- start ---
    Rng rng(run.seed());
    std::string init_from;
    double start_step_s = 0;
    std::vector<int32_t> cur = initial(run, rng, init_from, start_step_s);
    if (left() <= 0 || D == 1) {
      run.set_note("anneal: " + std::string(D == 1 ? "one device" : "no samples left") +
                   " after the start (" + init_from + ")");
      return run.has_best() ? run.best() : units_.expand(cur);
    }
    double cur_e = energy(start_step_s, cur);
    std::vector<int32_t> best = cur;
    double best_e = cur_e;
    const double e0 = cur_e;

    // --- search ---
    double t0 = c_.t_start;
    const int64_t calib_from = used();
    std::vector<double> worse;  // relative worsenings seen while calibrating
    int64_t since_best = 0, accepted = 0, proposed = 0, restarts = 0, last_crit = -1;
    std::vector<int32_t> crit_units;
    std::vector<std::vector<int32_t>> cand;
    std::vector<double> cand_u;
    while (left() > 0 && !run.out_of_time()) {
      const double frac = progress_fraction(run, n, used());
      const bool calibrating = t0 == 0 && used() - calib_from < c_.calibrate;
      const double T = calibrating ? 0 : t0 * std::pow(c_.t_ratio, frac);
      if (c_.critical_bias > 0 && (last_crit < 0 || used() - last_crit >= c_.critical_every) &&
          left() > 1) {
        crit_units = critical_units(pb, units_.expand(cur), run);
        last_crit = used();
      }
      const int64_t b = std::min<int64_t>(c_.batch, left());
      cand.assign(b, cur);
      for (auto& x : cand) propose(x, cur, crit_units, D, rng);
      cand_u.resize(b);
      for (auto& u : cand_u) u = rng.uniform();
      std::vector<Placement> ps(b);
      for (int64_t k = 0; k < b; ++k) ps[k] = units_.expand(cand[k]);
      const std::vector<double> t = run.evaluate(ps);
      proposed += b;
      int64_t pick = -1;
      double pick_e = std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < b; ++k) {
        const double e = energy(t[k], cand[k]);
        if (calibrating && e > cur_e && e < kInvalid) worse.push_back((e - cur_e) / cur_e);
        // From an invalid start only non-worsening moves pass (walks toward fitting).
        const double rel = (e - cur_e) / std::max(cur_e, 1e-30);
        const bool pass = rel <= 0 || (cur_e < kInvalid && T > 0 && cand_u[k] < std::exp(-rel / T));
        if (pass && e < pick_e) {
          pick = k;
          pick_e = e;
        }
      }
      if (calibrating && used() - calib_from >= c_.calibrate) {
        // exp(-p90 / T0) = 1/2 (p90: the 90th percentile of the relative worsenings seen);
        // none seen (all moves neutral or better): 1%.
        if (worse.empty()) {
          t0 = 0.01;
        } else {
          const size_t q = worse.size() * 9 / 10;
          std::nth_element(worse.begin(), worse.begin() + q, worse.end());
          t0 = worse[q] / std::log(2.0);
        }
      }
      if (pick >= 0) {
        cur.swap(cand[pick]);
        cur_e = pick_e;
        ++accepted;
      }
      if (cur_e < best_e) {
        best_e = cur_e;
        best = cur;
        since_best = 0;
      } else {
        since_best += b;
      }
      if (c_.restart_after > 0 && since_best >= c_.restart_after) {
        cur = best;
        cur_e = best_e;
        since_best = 0;
        last_crit = -1;
        ++restarts;
      }
      char msg[128];
      std::snprintf(msg, sizeof msg, "T %.2g, accepted %.0f%%, best %.4g s", T,
                    proposed ? 100.0 * accepted / proposed : 0.0, best_e);
      run.progress(msg);
    }
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "anneal from %s (%.4g s) to %.4g s in %lld samples over %d units on %d "
                  "devices; T0 %.3g, %lld moves accepted, %lld restarts",
                  init_from.c_str(), e0 >= kInvalid ? -1.0 : e0, best_e >= kInvalid ? -1.0 : best_e,
                  static_cast<long long>(used()), U, D, t0, static_cast<long long>(accepted),
                  static_cast<long long>(restarts));
    run.set_note(buf);
    return run.has_best() ? run.best() : units_.expand(best);
  }

 private:
  // Above any step time: invalid placements cost kInvalid + their estimated overflow in GiB.
  static constexpr double kInvalid = 1e9;

  // Energy of a simulated placement: its step time, or kInvalid + estimated overflow (GiB).
  double energy(double step_s, const std::vector<int32_t>& unit_dev) const {
    if (std::isfinite(step_s)) return step_s;
    std::vector<int64_t> mem(capacity_.size(), 0);
    for (size_t u = 0; u < unit_dev.size(); ++u) mem[unit_dev[u]] += unit_mem_[u];
    double over = 0;
    for (size_t d = 0; d < mem.size(); ++d)
      over += static_cast<double>(std::max<int64_t>(0, mem[d] - capacity_[d]));
    return kInvalid + over / double(int64_t{1} << 30);
  }

  double progress_fraction(const Run& run, int64_t n, int64_t used) const {
    double f = 0;
    if (n != std::numeric_limits<int64_t>::max() && n > 0) f = static_cast<double>(used) / n;
    if (run.budget().seconds > 0) f = std::max(f, run.elapsed_s() / run.budget().seconds);
    return std::clamp(f, 0.0, 1.0);
  }

  void build_unit_tables(const Graph& g, const CostView& cv) {
    const int32_t U = units_.num_units();
    unit_mem_.assign(U, 0);
    for (int32_t op = 0; op < g.num_ops(); ++op)
      unit_mem_[units_.unit_of[op]] += cv.op_memory_bytes(op);
    capacity_.resize(cv.num_devices());
    for (int32_t d = 0; d < cv.num_devices(); ++d) capacity_[d] = cv.capacity_bytes(d);
    adj_ = unit_adjacency(g, units_);
    scopes_ = unit_scopes(g, units_);
  }

  // The units of the critical path of placement p (one full simulation, counted).
  std::vector<int32_t> critical_units(const Problem& pb, const Placement& p, Run& run) {
    auto state = pb.simulator().make_state();
    SimResult r = pb.simulator().run(p, *state);
    run.count_samples(1);
    std::vector<int32_t> u;
    for (int32_t op : r.critical_path) u.push_back(units_.unit_of[op]);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    return u;
  }

  int32_t other_device(int32_t d, int32_t D, Rng& rng) const {
    int32_t x = static_cast<int32_t>(rng.below(D - 1));
    return x >= d ? x + 1 : x;
  }

  // Applies one random move to x (a copy of cur).
  void propose(std::vector<int32_t>& x, const std::vector<int32_t>& cur,
               const std::vector<int32_t>& crit, int32_t D, Rng& rng) const {
    const int32_t U = static_cast<int32_t>(x.size());
    const int32_t u = (!crit.empty() && rng.uniform() < c_.critical_bias)
                          ? crit[rng.below(crit.size())]
                          : static_cast<int32_t>(rng.below(U));
    const double total = c_.p_move + c_.p_neighbour + c_.p_swap + c_.p_scope;
    double r = rng.uniform() * total;
    if ((r -= c_.p_neighbour) < 0) {
      // To the device of a neighbour on another device; else fall through to a plain move.
      const int64_t a = adj_.ptr[u], b = adj_.ptr[u + 1];
      if (b > a) {
        const int32_t v = adj_.neighbour[a + static_cast<int64_t>(rng.below(b - a))];
        if (cur[v] != cur[u]) {
          x[u] = cur[v];
          return;
        }
      }
      x[u] = other_device(cur[u], D, rng);
    } else if ((r -= c_.p_swap) < 0) {
      for (int tries = 0; tries < 8; ++tries) {
        const int32_t v = static_cast<int32_t>(rng.below(U));
        if (cur[v] != cur[u]) {
          std::swap(x[u], x[v]);
          return;
        }
      }
      x[u] = other_device(cur[u], D, rng);
    } else if ((r -= c_.p_scope) < 0 && !scopes_.of_unit[u].empty()) {
      const auto& scopes = scopes_.of_unit[u];
      const int32_t s = scopes[rng.below(scopes.size())];
      const int32_t dev = static_cast<int32_t>(rng.below(D));
      for (int32_t v : scopes_.units[s]) x[v] = dev;
      if (x == cur) x[u] = other_device(cur[u], D, rng);
    } else {
      x[u] = other_device(cur[u], D, rng);
    }
  }

  // The starting unit assignment (each unit on its first op's device in the chosen placement).
  // Simulates it (counted) and returns its step time in start_step_s.
  std::vector<int32_t> initial(Run& run, Rng& rng, std::string& from, double& start_step_s) {
    const Problem& pb = run.problem();
    const int32_t D = pb.num_devices();
    const int32_t U = units_.num_units();
    std::vector<int32_t> x(U, 0);
    if (c_.init == "random") {
      for (auto& d : x) d = static_cast<int32_t>(rng.below(D));
      from = "random";
      start_step_s = run.evaluate(units_.expand(x));
      return x;
    }
    const std::vector<std::string> names =
        c_.init == "best" ? split_commas(c_.init_methods) : std::vector<std::string>{c_.init};
    std::string failures;
    std::vector<std::string> ran;
    std::vector<Placement> cands;
    for (const std::string& name : names) {
      try {
        PreparedMethod m = prepare(registry(), name);
        if (m.info->search && c_.init == "best")
          throw InputError("'" + name + "' is a search; name it alone as options.init");
        const int64_t room = run.samples_left() - static_cast<int64_t>(names.size());
        if (room <= 0) throw InputError("no samples left in the budget");
        Budget sub;
        if (run.budget().samples > 0) sub.samples = room;
        PlaceResult r = place::place(m, pb, sub, run.seed());
        run.count_samples(r.report.samples);
        ran.push_back(name);
        cands.push_back(std::move(r.placement));
      } catch (const std::exception& e) {
        if (c_.init != "best") throw InputError(std::string("anneal: options.init: ") + e.what());
        failures += (failures.empty() ? "" : "; ") + name + ": " + e.what();
      }
    }
    if (cands.empty()) throw InputError("anneal: no starting method ran (" + failures + ")");
    // Each start simulated here (counted), so that the run's best and curve begin with it.
    const std::vector<double> t = run.evaluate(cands);
    size_t pick = 0;
    for (size_t k = 1; k < t.size(); ++k)
      if (t[k] < t[pick]) pick = k;
    from = ran[pick];
    start_step_s = t[pick];
    for (int32_t u = 0; u < U; ++u) x[u] = cands[pick].device[units_.first_op[u]];
    return x;
  }

  AnnealConfig c_;
  Units units_;
  std::vector<int64_t> unit_mem_, capacity_;
  UnitAdjacency adj_;  // neighbour units
  UnitScopes scopes_;  // name-scope prefixes of the units
};

}  // namespace

MethodInfo anneal_method() {
  return MethodInfo{
      "anneal",
      "simulated annealing over placements (move, neighbour, swap, scope moves), scored by the "
      "simulator",
      {integer_option("samples", 0, 0, int64_t{1} << 40,
                      "N; 0 = the budget's samples, else 10000 (starting methods included)"),
       integer_option("batch", 8, 1, 4096, "proposals simulated in parallel per step"),
       number_option("t_start", 0, 0, 10,
                     "start temperature (relative step-time change); 0 = calibrated"),
       number_option("t_ratio", 1e-3, 1e-9, 1, "final temperature / start temperature"),
       integer_option(
           "calibrate", 64, 1, 1 << 20,
           "proposals (greedy) whose 90th-percentile worsening sets t_start when it is 0"),
       number_option("critical_bias", 0.5, 0, 1,
                     "probability that a move starts from a unit on the critical path"),
       integer_option("critical_every", 200, 1, int64_t{1} << 40,
                      "samples between critical path refreshes (one full simulation each)"),
       integer_option("restart_after", 2000, 0, int64_t{1} << 40,
                      "samples without a new best before returning to the best; 0 = never"),
       number_option("p_move", 0.35, 0, 1, "weight of the move-one-unit move"),
       number_option("p_neighbour", 0.3, 0, 1, "weight of the move-to-a-neighbour's-device move"),
       number_option("p_swap", 0.2, 0, 1, "weight of the swap move"),
       number_option("p_scope", 0.15, 0, 1, "weight of the move-a-name-scope move"),
       string_option("init", "best", {},
                     "start: 'best' (of init_methods), 'random', or a method name"),
       string_option("init_methods", "single,human,metis,m-topo,m-etf,m-sct", {},
                     "comma-separated methods whose best placement starts the search")},
      true,
      [](const Options& o) {
        AnnealConfig c;
        c.samples = o.integer("samples");
        c.batch = o.integer("batch");
        c.t_start = o.number("t_start");
        c.t_ratio = o.number("t_ratio");
        c.calibrate = o.integer("calibrate");
        c.critical_bias = o.number("critical_bias");
        c.critical_every = o.integer("critical_every");
        c.restart_after = o.integer("restart_after");
        c.p_move = o.number("p_move");
        c.p_neighbour = o.number("p_neighbour");
        c.p_swap = o.number("p_swap");
        c.p_scope = o.number("p_scope");
        c.init = o.string("init");
        c.init_methods = o.string("init_methods");
        if (c.p_move + c.p_neighbour + c.p_swap + c.p_scope <= 0)
          throw InputError("anneal: options p_move + p_neighbour + p_swap + p_scope must be > 0");
        if (c.init != "best" && c.init != "random" && !registry().find(c.init))
          throw InputError("anneal: options.init: unknown method '" + c.init +
                           "' (expected 'best', 'random' or a registered method)");
        if (c.init == "anneal")
          throw InputError("anneal: options.init: cannot start from 'anneal' itself");
        for (const std::string& name : split_commas(c.init_methods))
          if (!registry().find(name))
            throw InputError("anneal: options.init_methods: unknown method '" + name + "'");
        return std::make_unique<AnnealPlacer>(std::move(c));
      }};
}

}  // namespace gdp::place
