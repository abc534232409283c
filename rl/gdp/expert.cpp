// The search-regime levers of GDP's trainer that run other searches (rl/gdp/trainer.h): the
// warm start's heuristics (TrainConfig::warm_start) and expert iteration's guided annealing
// (ExpertConfig), each counted in the graph's budget and offered to its elites.
#include <algorithm>
#include <cmath>
#include <limits>

#include "place/registry.h"
#include "rl/gdp/guided.h"
#include "rl/gdp/trainer.h"

namespace gdp::rl {

void Trainer::run_warm_start(GraphState& st) {
  const place::Problem& problem = st.run->problem();
  double best = std::numeric_limits<double>::infinity();
  for (const std::string& m : config_.warm_start) {
    if (st.run->samples_left() <= 0) break;
    const place::PlaceResult r =
        place::place(place::prepare(place::registry(), m), problem, place::Budget(), seed_);
    if (r.report.samples > 1) st.run->count_samples(r.report.samples - 1);
    const double t = st.run->evaluate(r.placement);
    if (!std::isfinite(t)) continue;
    std::vector<int32_t> a = unit_actions(r.placement, st.input);
    st.elites.offer(t, a);
    if (t < best) best = t, st.reference_actions = std::move(a);
  }
}

int64_t Trainer::expert_search(GraphState& st, const nn::Tensor& host) {
  const ExpertConfig& x = config_.expert;
  if (st.elites.empty()) return 0;  // nothing valid to start from yet
  const place::Problem& pb = st.run->problem();
  if (!st.annealer) st.annealer = std::make_unique<place::Annealer>(pb, st.input.units);
  place::AnnealConfig c;
  c.t_start = st.anneal_t0;  // 0: calibrate on this first search
  c.t_ratio = x.t_ratio;
  c.calibrate = std::max<int64_t>(1, std::min<int64_t>(64, x.anneal_samples / 2));
  c.critical_every = int64_t{1} << 40;  // one critical path per search
  c.restart_after = 0;
  const Elite& e = st.elites[0];
  place::AnnealStart start{unit_devices(st.input, e.actions, 0), e.step_s, "elite"};
  const int64_t before = st.run->samples();
  const int64_t n = std::min<int64_t>(x.anneal_samples + 1, st.run->samples_left());
  Rng rng(rng_of(st).next_u64());
  const place::AnnealOutcome o =
      st.annealer->search(*st.run, c, guide_of(unit_rows(host, st.input), st.input.anchored, x.mix),
                          start, place::AnnealBudget{n, 0, 0}, rng);
  if (st.anneal_t0 == 0) st.anneal_t0 = o.t0;
  if (std::isfinite(o.best_energy) && o.best_energy < 1e9) {
    std::vector<int32_t> a = o.best;  // back to the policy's label space (unit 0 on label 0)
    if (st.input.anchored) place::anchor_labels(a);
    st.elites.offer(o.best_energy, encode_devices(std::move(a), st.input));
  }
  return st.run->samples() - before;
}

}  // namespace gdp::rl
