// The evaluator as a library: a workload suite x placement methods x seeds, each cell placed
// through the registry and simulated, in parallel over the machine's cores. `gdp compare`
// prints its records; the batch runner builds on it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/placement.h"
#include "datasets/suite.h"
#include "place/registry.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace gdp::eval {

enum class Validity : uint8_t {
  valid,
  out_of_memory,
  split_colocation,
  malformed_placement,
  method_failed,  // the method threw while placing (the reason is its message)
};
const char* validity_name(Validity v);  // "valid", "out_of_memory", ...
Validity validity_of(SimStatus s);

// One cell: a method (or a suite's reference placement) on one graph and cluster, one seed.
struct Record {
  std::string graph;    // the suite entry's name
  std::string cluster;  // the cluster as the suite names it (preset or file)
  std::string method;   // registry name, or "ref:<label>" for a suite's reference placement
  uint64_t seed = 0;
  int32_t ops = 0;
  Validity validity = Validity::valid;
  std::string reason;                                            // empty when valid
  double step_time_s = std::numeric_limits<double>::infinity();  // +inf unless valid
  int64_t samples = 0;                                           // placements the method simulated
  double wall_s = 0;         // the method's time to place (search time)
  double lower_bound_s = 0;  // the graph's step-time lower bound on the cluster (sim/lower_bound.h)
  std::vector<int64_t> peak_memory_bytes;  // (devices) of the simulated step; empty if failed
  nlohmann::ordered_json options;          // the method's resolved options
  std::string note;
  std::vector<place::CurvePoint> curve;  // best step time against samples and wall time
  Placement placement;                   // kept when Spec::keep_placements
  bool valid() const { return validity == Validity::valid; }
  // step_time_s / lower_bound_s (>= 1; how far from optimal at most); +inf unless valid.
  double gap_to_bound() const {
    return valid() && lower_bound_s > 0 ? step_time_s / lower_bound_s
                                        : std::numeric_limits<double>::infinity();
  }
};

struct MethodSpec {
  std::string name;
  nlohmann::json options;      // null = defaults
  std::string options_source;  // where the options came from, for error messages
  std::string label;           // the records' method name; empty = name
};

struct Spec {
  std::vector<MethodSpec> methods;
  std::vector<uint64_t> seeds{1};
  place::Budget budget;     // per cell
  bool references = false;  // also simulate the reference placements the suite lists
  bool keep_placements = false;
  // Cells for which this returns true are not run and have no record (a resumed batch run
  // skips its finished cells). Arguments: graph (entry name), method label, seed.
  std::function<bool(const std::string&, const std::string&, uint64_t)> skip;
  // A running cell's progress (its method's place::Progress), called from the cell's thread;
  // the callee serializes. Arguments: graph, method label, seed, progress.
  std::function<void(const std::string&, const std::string&, uint64_t, const place::Progress&)>
      progress;
};

// Called (serialized) after each cell; done counts finished cells (of those run).
using CellDoneFn = std::function<void(const Record& r, size_t done, size_t total)>;

// Looks every method up and resolves its options before anything runs (UsageError /
// InputError). Then runs the cells in parallel (OpenMP, one simulator per entry shared by
// all threads, a SimState per thread). A method that throws while placing gives a
// method_failed record with its message: no exception leaves a cell. Records come back in
// the order entries x (methods, then reference labels) x seeds; a reference label an entry
// does not list has no record.
std::vector<Record> evaluate(const std::vector<datasets::SuiteEntry>& entries, const Spec& spec,
                             const CostModel& cost,
                             const place::Registry& registry = place::registry(),
                             const CellDoneFn& on_done = {});

// One cell: `method` (prepared; nullptr: the entry's reference placement named by `label`,
// "ref:<name>") placed on entry e and simulated. No exception leaves it (method_failed).
// evaluate() runs its cells through this; the batch runner's MPI workers call it directly.
Record evaluate_cell(const datasets::SuiteEntry& e, const place::Problem& problem,
                     const place::PreparedMethod* method, const std::string& label, uint64_t seed,
                     const place::Budget& budget, double lower_bound_s, bool keep_placement,
                     const place::ProgressFn& progress = {});

// Simulates one placement fully and fills the simulated fields of a record.
void simulate_into(const place::Problem& problem, const Placement& p, Record& r);

// Geometric mean over the cells valid under both methods (same graph, cluster and seed) of
// step_time(baseline) / step_time(method): > 1 means the method is faster. n = 0: no pair.
struct GeoMean {
  double value = std::numeric_limits<double>::quiet_NaN();
  int n = 0;
};
GeoMean geomean_speedup(const std::vector<Record>& records, const std::string& method,
                        const std::string& baseline);

nlohmann::ordered_json to_json(const Record& r);
nlohmann::ordered_json to_json(const std::vector<Record>& records);

}  // namespace gdp::eval
