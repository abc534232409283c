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
#include "place/anneal.h"

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

namespace gdp::place {

namespace {

constexpr int64_t kDefaultSamples = 10000;
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
// Above any step time: invalid placements cost kInvalid + their estimated overflow in GiB.
constexpr double kInvalid = 1e9;

// The energy above which a proposal fails the Metropolis test of search() (rel > 0 and
// u >= exp(-rel / T)): cur_e (1 + T ln(1/u)); +inf when every energy could pass (u = 0, or
// the bound reaches the invalid energies). Step times above it are rejected whatever they
// are, so the simulation may stop there (Simulator::step_time with a limit, whose margin
// covers the rounding of exp and log here).
double metropolis_limit(double cur_e, double T, double u) {
  const double inf = std::numeric_limits<double>::infinity();
  if (T <= 0) return cur_e;  // only non-worsening moves pass
  if (u <= 0) return inf;
  const double lim = cur_e * (1 + T * -std::log(u));
  return lim < kInvalid ? lim : inf;
}

double progress_fraction(const Run& run, const AnnealBudget& b, int64_t used) {
  double f = 0;
  if (b.n != kUnbounded && b.n > 0) f = static_cast<double>(used) / b.n;
  if (b.seconds > 0) f = std::max(f, run.elapsed_s() / b.seconds);
  return std::clamp(f, 0.0, 1.0);
}

}  // namespace

Annealer::Annealer(const Problem& pb, Units units) : pb_(pb), units_(std::move(units)) {
  const Graph& g = pb.graph();
  CostView cv(pb);
  const int32_t U = units_.num_units();
  unit_mem_.assign(U, 0);
  for (int32_t op = 0; op < g.num_ops(); ++op)
    unit_mem_[units_.unit_of[op]] += cv.op_memory_bytes(op);
  capacity_.resize(cv.num_devices());
  for (int32_t d = 0; d < cv.num_devices(); ++d) capacity_[d] = cv.capacity_bytes(d);
  adj_ = unit_adjacency(g, units_);
  scopes_ = unit_scopes(g, units_);
}

double Annealer::energy(double step_s, const std::vector<int32_t>& unit_dev) const {
  if (std::isfinite(step_s)) return step_s;
  std::vector<int64_t> mem(capacity_.size(), 0);
  for (size_t u = 0; u < unit_dev.size(); ++u) mem[unit_dev[u]] += unit_mem_[u];
  double over = 0;
  for (size_t d = 0; d < mem.size(); ++d)
    over += static_cast<double>(std::max<int64_t>(0, mem[d] - capacity_[d]));
  return kInvalid + over / double(int64_t{1} << 30);
}

// The units of the critical path of placement cur (one full simulation, counted).
std::vector<int32_t> Annealer::critical_units(const std::vector<int32_t>& cur, Run& run) const {
  auto state = pb_.simulator().make_state();
  SimResult r = pb_.simulator().run(units_.expand(cur), *state);
  run.count_samples(1);
  std::vector<int32_t> u;
  for (int32_t op : r.critical_path) u.push_back(units_.unit_of[op]);
  std::sort(u.begin(), u.end());
  u.erase(std::unique(u.begin(), u.end()), u.end());
  return u;
}

int32_t Annealer::other_device(int32_t d, int32_t D, Rng& rng) const {
  int32_t x = static_cast<int32_t>(rng.below(D - 1));
  return x >= d ? x + 1 : x;
}

double Annealer::guide_weight(const AnnealGuide& g, int32_t u, int32_t d, int32_t unit0_dev,
                              int32_t D) {
  const int32_t label = g.anchored ? anchored_label(d, unit0_dev) : d;
  const float p =
      g.probs[static_cast<size_t>(u) * static_cast<size_t>(g.columns) + static_cast<size_t>(label)];
  return (1.0 - g.mix) * static_cast<double>(p) + g.mix / D;
}

int32_t Annealer::guided_device(const AnnealGuide& g, int32_t u, int32_t cur_dev, int32_t unit0_dev,
                                int32_t D, Rng& rng) const {
  auto weight = [&](int32_t d) { return guide_weight(g, u, d, unit0_dev, D); };
  double total = 0;
  for (int32_t d = 0; d < D; ++d)
    if (d != cur_dev) total += weight(d);
  if (!(total > 1e-12)) return -1;
  double r = rng.uniform() * total;
  int32_t last = -1;
  for (int32_t d = 0; d < D; ++d) {
    if (d == cur_dev) continue;
    const double w = weight(d);
    if (w > 0) last = d;
    if ((r -= w) < 0 && w > 0) return d;
  }
  return last;  // rounding
}

// Applies one random move to x (a copy of cur). Returns whether x changed (always, unguided).
bool Annealer::propose(const AnnealConfig& c, const AnnealGuide& g, std::vector<int32_t>& x,
                       const std::vector<int32_t>& cur, const std::vector<int32_t>& crit, int32_t D,
                       Rng& rng) const {
  const int32_t U = static_cast<int32_t>(x.size());
  const int32_t u = (!crit.empty() && rng.uniform() < c.critical_bias)
                        ? crit[rng.below(crit.size())]
                        : static_cast<int32_t>(rng.below(U));
  const bool guided = !g.empty();
  // Another device for unit v: uniform, or from the guide (-1: the guide allows none).
  auto another = [&](int32_t v) {
    return guided ? guided_device(g, v, cur[v], cur[0], D, rng) : other_device(cur[v], D, rng);
  };
  auto set_another = [&](int32_t v) {
    const int32_t d = another(v);
    if (d < 0) return false;
    x[v] = d;
    return true;
  };
  const double total = c.p_move + c.p_neighbour + c.p_swap + c.p_scope;
  double r = rng.uniform() * total;
  if ((r -= c.p_neighbour) < 0) {
    // To the device of a neighbour on another device; else fall through to a plain move.
    const int64_t a = adj_.ptr[u], b = adj_.ptr[u + 1];
    if (b > a) {
      const int32_t v = adj_.neighbour[a + static_cast<int64_t>(rng.below(b - a))];
      if (cur[v] != cur[u]) {
        x[u] = cur[v];
        return true;
      }
    }
    return set_another(u);
  } else if ((r -= c.p_swap) < 0) {
    for (int tries = 0; tries < 8; ++tries) {
      const int32_t v = static_cast<int32_t>(rng.below(U));
      if (cur[v] != cur[u]) {
        std::swap(x[u], x[v]);
        return true;
      }
    }
    return set_another(u);
  } else if ((r -= c.p_scope) < 0 && !scopes_.of_unit[u].empty()) {
    const auto& scopes = scopes_.of_unit[u];
    const int32_t s = scopes[rng.below(scopes.size())];
    if (!guided) {
      const int32_t dev = static_cast<int32_t>(rng.below(D));
      for (int32_t v : scopes_.units[s]) x[v] = dev;
    } else {
      // The unit's guided device (or where it is: then the scope joins it); a unit of the scope
      // the guide gives no mass there stays.
      int32_t dev = guided_device(g, u, -1, cur[0], D, rng);
      if (dev < 0) dev = cur[u];
      for (int32_t v : scopes_.units[s])
        if (guide_weight(g, v, dev, cur[0], D) > 0) x[v] = dev;
    }
    if (x == cur) return set_another(u);
    return true;
  }
  return set_another(u);
}

std::vector<int32_t> Annealer::proposal(const AnnealConfig& c, const AnnealGuide& g,
                                        const std::vector<int32_t>& cur,
                                        const std::vector<int32_t>& crit, Rng& rng) const {
  std::vector<int32_t> x = cur;
  for (int tries = 0; tries < 8 && !propose(c, g, x, cur, crit, pb_.num_devices(), rng); ++tries)
    x = cur;
  return x;
}

AnnealOutcome Annealer::search(Run& run, const AnnealConfig& c, const AnnealGuide& guide,
                               const AnnealStart& start, const AnnealBudget& bud, Rng& rng) const {
  const int32_t D = pb_.num_devices();
  const int64_t start_samples = run.samples() - bud.used;
  auto used = [&] { return run.samples() - start_samples; };
  auto left = [&] { return bud.n == kUnbounded ? bud.n : bud.n - used(); };
  AnnealOutcome out;
  std::vector<int32_t> cur = start.units;
  double cur_e = energy(start.step_s, cur);
  out.best = cur;
  out.best_energy = cur_e;
  double t0 = c.t_start;
  const int64_t calib_from = used();
  std::vector<double> worse;  // relative worsenings seen while calibrating
  int64_t since_best = 0, proposed = 0, last_crit = -1;
  std::vector<int32_t> crit_units;
  std::vector<std::vector<int32_t>> cand;
  std::vector<double> cand_u, limits;
  std::vector<Placement> ps;
  while (D > 1 && left() > 0 && !run.out_of_time()) {
    const double frac = progress_fraction(run, bud, used());
    const bool calibrating = t0 == 0 && used() - calib_from < c.calibrate;
    const double T = calibrating ? 0 : t0 * std::pow(c.t_ratio, frac);
    if (c.critical_bias > 0 && (last_crit < 0 || used() - last_crit >= c.critical_every) &&
        left() > 1) {
      crit_units = critical_units(cur, run);
      last_crit = used();
    }
    const int64_t b = std::min<int64_t>(c.batch, left());
    cand.resize(b);
    for (auto& x : cand) x = proposal(c, guide, cur, crit_units, rng);
    cand_u.resize(b);
    for (auto& u : cand_u) u = rng.uniform();
    ps.resize(b);
    for (int64_t k = 0; k < b; ++k) units_.expand_into(cand[k], ps[k]);
    // The step time above which each proposal fails its test below (calibration needs every
    // worsening, and from an invalid start the energy is not a step time: no limit then).
    limits.assign(b, std::numeric_limits<double>::infinity());
    if (c.early_stop && !calibrating && cur_e < kInvalid && cur_e > 1e-30) {
      for (int64_t k = 0; k < b; ++k) limits[k] = metropolis_limit(cur_e, T, cand_u[k]);
      out.limited += b;
    }
    const std::vector<double> t = run.evaluate(ps, limits);
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
    if (calibrating && used() - calib_from >= c.calibrate) {
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
      ++out.accepted;
    }
    if (cur_e < out.best_energy) {
      out.best_energy = cur_e;
      out.best = cur;
      since_best = 0;
    } else {
      since_best += b;
    }
    if (c.restart_after > 0 && since_best >= c.restart_after) {
      cur = out.best;
      cur_e = out.best_energy;
      since_best = 0;
      last_crit = -1;
      ++out.restarts;
    }
    char msg[128];
    std::snprintf(msg, sizeof msg, "T %.2g, accepted %.0f%%, best %.4g s", T,
                  proposed ? 100.0 * out.accepted / proposed : 0.0, out.best_energy);
    run.progress(msg);
  }
  out.t0 = t0;
  out.samples = used() - bud.used;
  return out;
}

namespace {

class AnnealPlacer : public Placer {
 public:
  AnnealPlacer(AnnealConfig c, GuideFn guide, std::string name)
      : c_(std::move(c)), guide_fn_(std::move(guide)), name_(std::move(name)) {}

  Placement place(Run& run) override {
    const Problem& pb = run.problem();
    const int32_t D = pb.num_devices();
    const Annealer an(pb, Units::colocation(pb.graph()));
    const Units& units = an.units();
    const int32_t U = units.num_units();

    int64_t n = c_.samples > 0 ? c_.samples : run.budget().samples;
    if (n <= 0) n = run.budget().seconds > 0 ? kUnbounded : kDefaultSamples;
    n = std::min(n, run.samples_left());
    if (n != kUnbounded) run.set_target_samples(n);
    const int64_t start_samples = run.samples();
    auto used = [&] { return run.samples() - start_samples; };
    auto left = [&] { return n == kUnbounded ? n : n - used(); };

    // --- start ---
    GuidePlan plan;
    if (guide_fn_) plan = guide_fn_(run, units);
    Rng rng(run.seed());
    AnnealStart start = initial(run, units, plan, rng);
    if (left() <= 0 || D == 1) {
      run.set_note(name_ + ": " + std::string(D == 1 ? "one device" : "no samples left") +
                   " after the start (" + start.from + ")" + plan.note);
      return run.has_best() ? run.best() : units.expand(start.units);
    }
    const double e0 = an.energy(start.step_s, start.units);
    // The gate: a guide whose own best start is more than `gate` slower than the best start
    // knows this problem less well than the start methods do; its moves are then uniform.
    AnnealGuide guide = plan.guide;
    std::string gate_note;
    if (!guide.empty() && !plan.starts.empty() && std::isfinite(start.step_s) &&
        !(start.guide_start_s <= start.step_s * (1 + plan.gate))) {
      guide = AnnealGuide();
      char g[160];
      std::snprintf(g, sizeof g, "; guide off: its best start %.4g s is %.2fx the best start",
                    start.guide_start_s, start.guide_start_s / start.step_s);
      gate_note = g;
    }

    // --- search ---
    const int64_t stops0 = pb.simulator().early_stops();
    const AnnealOutcome o =
        an.search(run, c_, guide, start, AnnealBudget{n, used(), run.budget().seconds}, rng);
    const int64_t stops = pb.simulator().early_stops() - stops0;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "%s from %s (%.4g s) to %.4g s in %lld samples over %d units on %d "
                  "devices; T0 %.3g, %lld moves accepted, %lld restarts",
                  name_.c_str(), start.from.c_str(), e0 >= kInvalid ? -1.0 : e0,
                  o.best_energy >= kInvalid ? -1.0 : o.best_energy, static_cast<long long>(used()),
                  U, D, o.t0, static_cast<long long>(o.accepted),
                  static_cast<long long>(o.restarts));
    const std::string head = buf;
    std::string stop_note;
    if (o.limited > 0) {
      std::snprintf(buf, sizeof buf, "; %.0f%% of %lld proposals stopped early",
                    100.0 * static_cast<double>(stops) / static_cast<double>(o.limited),
                    static_cast<long long>(o.limited));
      stop_note = buf;
    }
    run.set_note(head + plan.note + gate_note + stop_note);
    return run.has_best() ? run.best() : units.expand(o.best);
  }

 private:
  // The starting unit assignment (each unit on its first op's device in the chosen placement)
  // and its step time: the best of the guide's starts and the start methods, each simulated
  // here (counted), so that the run's best and curve begin with it.
  AnnealStart initial(Run& run, const Units& units, const GuidePlan& plan, Rng& rng) {
    const Problem& pb = run.problem();
    const int32_t D = pb.num_devices();
    const int32_t U = units.num_units();
    AnnealStart s;
    s.units.assign(U, 0);
    if (c_.init == "random") {
      for (auto& d : s.units) d = static_cast<int32_t>(rng.below(D));
      s.from = "random";
      s.step_s = run.evaluate(units.expand(s.units));
      return s;
    }
    const std::vector<std::string> names =
        c_.init == "best" ? split_commas(c_.init_methods) : std::vector<std::string>{c_.init};
    std::string failures;
    std::vector<std::string> ran = plan.start_names;
    std::vector<Placement> cands = plan.starts;
    for (const std::string& name : names) {
      try {
        PreparedMethod m = prepare(registry(), name);
        if (m.info->search && c_.init == "best")
          throw InputError("'" + name + "' is a search; name it alone as options.init");
        const int64_t room = run.samples_left() - static_cast<int64_t>(names.size()) -
                             static_cast<int64_t>(cands.size());
        if (room <= 0) throw InputError("no samples left in the budget");
        Budget sub;
        if (run.budget().samples > 0) sub.samples = room;
        PlaceResult r = place::place(m, pb, sub, run.seed());
        run.count_samples(r.report.samples);
        ran.push_back(name);
        cands.push_back(std::move(r.placement));
      } catch (const std::exception& e) {
        if (c_.init != "best") throw InputError(name_ + ": options.init: " + std::string(e.what()));
        failures += (failures.empty() ? "" : "; ") + name + ": " + e.what();
      }
    }
    if (cands.empty())
      throw InputError(name_ + ": no starting method ran" +
                       (failures.empty() ? std::string(" (options.init_methods is empty)")
                                         : " (" + failures + ")"));
    const std::vector<double> t = run.evaluate(cands);
    size_t pick = 0;
    for (size_t k = 1; k < t.size(); ++k)
      if (t[k] < t[pick]) pick = k;
    s.from = ran[pick];
    s.step_s = t[pick];
    // The guide's own starts come first: the best of them against the best start.
    s.guide_start_s = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < plan.starts.size(); ++k)
      s.guide_start_s = std::min(s.guide_start_s, t[k]);
    for (int32_t u = 0; u < U; ++u) s.units[u] = cands[pick].device[units.first_op[u]];
    return s;
  }

  AnnealConfig c_;
  GuideFn guide_fn_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Placer> make_anneal_placer(AnnealConfig c, GuideFn guide, std::string name) {
  return std::make_unique<AnnealPlacer>(std::move(c), std::move(guide), std::move(name));
}

std::vector<OptionSpec> anneal_options() {
  return {
      integer_option("samples", 0, 0, int64_t{1} << 40,
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
                    "comma-separated methods whose best placement starts the search"),
      boolean_option("early_stop", true,
                     "stop a proposal's simulation once it must fail its Metropolis test "
                     "(the same placements, fewer simulated events)")};
}

AnnealConfig anneal_config(const Options& o, const std::string& method) {
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
  c.early_stop = o.boolean("early_stop");
  if (c.p_move + c.p_neighbour + c.p_swap + c.p_scope <= 0)
    throw InputError(method + ": options p_move + p_neighbour + p_swap + p_scope must be > 0");
  if (c.init != "best" && c.init != "random" && !registry().find(c.init))
    throw InputError(method + ": options.init: unknown method '" + c.init +
                     "' (expected 'best', 'random' or a registered method)");
  if (c.init == "anneal" || c.init == method)
    throw InputError(method + ": options.init: cannot start from '" + c.init + "'");
  for (const std::string& name : split_commas(c.init_methods))
    if (!registry().find(name))
      throw InputError(method + ": options.init_methods: unknown method '" + name + "'");
  return c;
}

MethodInfo anneal_method() {
  return MethodInfo{
      "anneal",
      "simulated annealing over placements (move, neighbour, swap, scope moves), scored by the "
      "simulator",
      anneal_options(), true, [](const Options& o) {
        AnnealConfig c = anneal_config(o, "anneal");
        if (split_commas(c.init_methods).empty() && c.init == "best")
          throw InputError("anneal: options.init_methods: expected at least one method");
        return make_anneal_placer(std::move(c));
      }};
}

}  // namespace gdp::place
