// Every placement method behind one interface, looked up by name. A method registers its
// type key, a one-line description, its options (place/options.h) and a factory; the CLI,
// the evaluator and the batch runner only look names up. Built-in methods register in
// place/builtin.cpp; modules with more methods (rl/, the baselines) expose a
// `register_methods(Registry&)` that the program calls once at start.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/placement.h"
#include "place/options.h"
#include "place/problem.h"
#include "place/run.h"

namespace gdp::place {

class Placer {
 public:
  virtual ~Placer() = default;
  // Computes a placement of run.problem(). Simulates through run.evaluate (counted against
  // the budget), reports progress with run.progress and leaves a note with run.set_note.
  // Throws InputError when the problem does not suit the method (the message says why).
  virtual Placement place(Run& run) = 0;
};

struct MethodInfo {
  std::string name;         // the type key: "human", "random", "gdp", ...
  std::string description;  // one line
  std::vector<OptionSpec> options;
  bool search = false;  // spends a budget of simulated samples (a search or a learner)
  // Builds a placer; throws InputError on options that are wrong together. Called once by
  // prepare() to check them, then once per placement run.
  std::function<std::unique_ptr<Placer>(const Options&)> make;
};

// What a method reports besides its placement.
struct PlaceReport {
  std::string method;
  nlohmann::ordered_json options;  // resolved: every key, defaults filled in
  uint64_t seed = 0;
  int64_t samples = 0;  // placements simulated
  double wall_s = 0;
  std::string note;               // one line: what the method did
  double best_step_s = 0;         // best valid step time it simulated; +inf when none
  std::vector<CurvePoint> curve;  // best step time against samples and wall time
};

struct PlaceResult {
  Placement placement;
  PlaceReport report;
};

class Registry {
 public:
  // Throws std::logic_error on a repeated or empty name, or a missing factory.
  void add(MethodInfo m);
  const MethodInfo* find(const std::string& name) const;  // nullptr when unknown
  // UsageError "unknown method 'x' (known: a, b, ...)" when unknown.
  const MethodInfo& get(const std::string& name) const;
  std::vector<std::string> names() const;  // in registration order
  const std::vector<MethodInfo>& methods() const { return methods_; }

 private:
  std::vector<MethodInfo> methods_;
};

// The process-wide registry; the built-in methods are registered on first use.
Registry& registry();
void register_builtin_methods(Registry& r);

// A method with its options resolved, ready to run on any problem (validate early: before
// anything runs).
struct PreparedMethod {
  const MethodInfo* info = nullptr;
  Options options;
};
PreparedMethod prepare(const Registry& r, const std::string& method,
                       const nlohmann::json& user_options = nullptr,
                       const std::string& options_source = "");

// Runs a prepared method on a problem with a budget and a seed.
PlaceResult place(const PreparedMethod& m, const Problem& problem, const Budget& budget,
                  uint64_t seed, const ProgressFn& progress = {});

// `gdp place --list`: every method with its description and options.
std::string describe_methods(const Registry& r);

}  // namespace gdp::place
