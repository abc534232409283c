// The statistics table and the log's lines (rl/run/stats.h).
#include "rl/run/stats.h"

#include <cmath>
#include <cstdio>

namespace gdp::rl {

const std::vector<StatField>& stat_fields() {
  using S = IterationStats;
  static const std::vector<StatField> f = {
      {"samples", nullptr, &S::samples},
      {"wall_s", &S::wall_s},
      {"best_step_s", &S::best_step_s},
      {"mean_step_s", &S::mean_step_s},
      {"invalid_frac", &S::invalid_frac},
      {"entropy", &S::entropy},
      {"loss", &S::loss},
      {"reward_std", &S::reward_std},
      {"signal_t", &S::signal_t},
      {"grad_norm", &S::grad_norm},
      {"approx_kl", &S::approx_kl},
      {"clip_fraction", &S::clip_fraction},
      {"entropy_p10", &S::entropy_p10},
      {"entropy_p50", &S::entropy_p50},
      {"entropy_p90", &S::entropy_p90},
      {"greedy_changed", &S::greedy_changed},
      {"elite_ce", &S::elite_ce},
      {"local_samples", nullptr, &S::local_samples},
      {"cf_gain", &S::cf_gain},
      {"cf_agree", &S::cf_agree},
  };
  return f;
}

namespace {

std::string fmt(double x) {
  if (!std::isfinite(x)) return x > 0 ? "inf" : "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

}  // namespace

std::string log_header(bool batch) {
  std::string s = batch ? "iteration,graph" : "iteration";
  for (const StatField& f : stat_fields()) s += std::string(",") + f.name;
  return s + "\n";
}

std::string log_row(const IterationStats& r, bool batch) {
  std::string s = std::to_string(r.iteration);
  if (batch) s += "," + r.graph;
  for (const StatField& f : stat_fields())
    s += "," + (f.real ? fmt(r.*f.real) : std::to_string(r.*f.count));
  return s + "\n";
}

size_t stats_width() { return 1 + stat_fields().size(); }

void pack_stats(const IterationStats& r, double* x) {
  x[0] = static_cast<double>(r.iteration);
  size_t k = 1;
  for (const StatField& f : stat_fields())
    x[k++] = f.real ? r.*f.real : static_cast<double>(r.*f.count);
}

void unpack_stats(const double* x, IterationStats& r) {
  r.iteration = static_cast<int64_t>(x[0]);
  size_t k = 1;
  for (const StatField& f : stat_fields()) {
    if (f.real)
      r.*f.real = x[k];
    else
      r.*f.count = static_cast<int64_t>(x[k]);
    ++k;
  }
}

}  // namespace gdp::rl
