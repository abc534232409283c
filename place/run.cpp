// Run: budget checks, counted simulations, the best placement and the convergence curve.
#include "place/run.h"

#include <algorithm>
#include <stdexcept>

namespace gdp::place {

Run::Run(const Problem& problem, const std::string& method, Budget budget, uint64_t seed,
         ProgressFn progress)
    : problem_(&problem),
      method_(method),
      budget_(budget),
      seed_(seed),
      progress_fn_(std::move(progress)),
      start_(std::chrono::steady_clock::now()) {}

double Run::elapsed_s() const {
  return offset_s_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Run::restore(int64_t samples, Placement best, double best_step_s,
                  std::vector<CurvePoint> curve, double elapsed_s) {
  samples_ = samples;
  best_ = std::move(best);
  best_step_s_ = best_step_s;
  curve_ = std::move(curve);
  start_ = std::chrono::steady_clock::now();
  offset_s_ = elapsed_s;
}

int64_t Run::samples_left() const {
  if (budget_.samples <= 0) return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(0, budget_.samples - samples_);
}

std::vector<double> Run::evaluate(const std::vector<Placement>& ps) { return evaluate(ps, {}); }

std::vector<double> Run::evaluate(const std::vector<Placement>& ps,
                                  const std::vector<double>& limits) {
  if (static_cast<int64_t>(ps.size()) > samples_left())
    throw std::logic_error(method_ + ": a batch of " + std::to_string(ps.size()) +
                           " placements exceeds the sample budget (" +
                           std::to_string(samples_left()) + " left)");
  std::vector<double> t = problem_->simulator().step_times(ps, limits);
  for (size_t k = 0; k < ps.size(); ++k) {
    ++samples_;
    // Above its limit a value may be a lower bound, not a step time: never the best.
    if (t[k] < best_step_s_ && (limits.empty() || t[k] <= limits[k])) {
      best_step_s_ = t[k];
      best_ = ps[k];
      curve_.push_back({samples_, elapsed_s(), t[k]});
    }
  }
  return t;
}

double Run::evaluate(const Placement& p) { return evaluate(std::vector<Placement>{p})[0]; }

void Run::progress(const std::string& message) {
  if (!progress_fn_) return;
  Progress pr;
  pr.method = method_;
  pr.samples = samples_;
  pr.wall_s = elapsed_s();
  pr.best_step_s = best_step_s_;
  pr.message = message;
  double f = -1;
  if (budget_.samples > 0) f = std::max(f, static_cast<double>(samples_) / budget_.samples);
  if (budget_.seconds > 0) f = std::max(f, pr.wall_s / budget_.seconds);
  if (f < 0 && target_samples_ > 0) f = static_cast<double>(samples_) / target_samples_;
  pr.fraction = f < 0 ? -1 : std::min(1.0, f);
  progress_fn_(pr);
}

}  // namespace gdp::place
