// One placement run: the budget a method may spend (simulated samples and/or seconds), its
// seed, the progress callback, and the bookkeeping every search shares: samples counted,
// the best placement seen and the curve of best step time against samples and wall time.
// Placers simulate through Run::evaluate so that the samples they report are the samples
// they used.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/placement.h"
#include "place/problem.h"

namespace gdp::place {

struct Budget {
  int64_t samples = 0;  // most placements a search may simulate; 0 = no limit
  double seconds = 0;   // most wall-clock seconds; 0 = no limit
  bool limited() const { return samples > 0 || seconds > 0; }
};

// A point of the convergence curve: recorded whenever the best step time improves.
struct CurvePoint {
  int64_t samples = 0;
  double wall_s = 0;
  double best_step_s = 0;
};

struct Progress {
  std::string method;
  int64_t samples = 0;                                           // simulated so far
  double wall_s = 0;                                             // since the run started
  double best_step_s = std::numeric_limits<double>::infinity();  // best valid so far
  double fraction = -1;  // of the budget or target spent, in [0, 1]; -1 when unknown
  std::string message;   // the method's own words (e.g. "iteration 12, entropy 0.41")
};
using ProgressFn = std::function<void(const Progress&)>;

class Run {
 public:
  Run(const Problem& problem, const std::string& method, Budget budget, uint64_t seed,
      ProgressFn progress = {});

  const Problem& problem() const { return *problem_; }
  const Budget& budget() const { return budget_; }
  uint64_t seed() const { return seed_; }

  double elapsed_s() const;
  int64_t samples() const { return samples_; }
  // Samples the budget still allows (INT64_MAX when it sets none).
  int64_t samples_left() const;
  // True once the seconds of the budget are spent.
  bool out_of_time() const { return budget_.seconds > 0 && elapsed_s() >= budget_.seconds; }
  // Neither samples nor seconds left.
  bool exhausted() const { return samples_left() <= 0 || out_of_time(); }

  // Simulates placements in parallel (one SimState per thread), counts them and keeps the
  // best valid one. Returns each step time, +inf for an invalid placement. Throws
  // std::logic_error when the batch would exceed the sample budget (a placer bug).
  std::vector<double> evaluate(const std::vector<Placement>& ps);
  double evaluate(const Placement& p);
  // The same for a caller that needs each step time only when it is at most limits[k]
  // (Simulator::step_time with a limit): above it, the value may be a lower bound at which the
  // simulation stopped early. Counted as samples all the same; a value above its limit never
  // becomes the best (with limits at or above the best, as a Metropolis test's, nothing is
  // lost).
  std::vector<double> evaluate(const std::vector<Placement>& ps, const std::vector<double>& limits);
  // Counts simulations a method ran outside evaluate (e.g. human's memory-fit checks);
  // not limited by the budget.
  void count_samples(int64_t n) { samples_ += n; }

  bool has_best() const { return !best_.device.empty(); }
  const Placement& best() const { return best_; }
  double best_step_s() const { return best_step_s_; }
  const std::vector<CurvePoint>& curve() const { return curve_; }

  // The total the method aims at (samples), for the progress fraction when the budget sets
  // none; 0 = unknown.
  void set_target_samples(int64_t n) { target_samples_ = n; }
  // Calls the progress callback (if any) with the current figures.
  void progress(const std::string& message = "");
  // Continues a run saved earlier (a resumed training): its samples, best placement and
  // curve, and the seconds it had run (elapsed_s() continues from there).
  void restore(int64_t samples, Placement best, double best_step_s, std::vector<CurvePoint> curve,
               double elapsed_s);
  // A one-line note for the report (what the method did).
  void set_note(std::string note) { note_ = std::move(note); }
  const std::string& note() const { return note_; }

 private:
  const Problem* problem_;
  std::string method_;
  Budget budget_;
  uint64_t seed_;
  ProgressFn progress_fn_;
  std::chrono::steady_clock::time_point start_;
  double offset_s_ = 0;  // seconds run before a restore
  int64_t samples_ = 0;
  int64_t target_samples_ = 0;
  Placement best_;
  double best_step_s_ = std::numeric_limits<double>::infinity();
  std::vector<CurvePoint> curve_;
  std::string note_;
};

}  // namespace gdp::place
