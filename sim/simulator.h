// Discrete-event simulator of one training step of a placed graph on a cluster.
// Preprocess the graph once (SimProgram), then simulate many placements, each with its own
// reusable SimState (one per thread), with no allocation in the hot loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/cost_model.h"

namespace gdp {

enum class QueuePolicy : uint8_t { fifo, topo_priority };

struct SimOptions {
  QueuePolicy queue_policy = QueuePolicy::fifo;  // per-device ready queue order
  bool check_memory = true;                      // out of memory => invalid
  bool record_trace = false;                     // fill SimResult::trace (slower)
  bool record_critical_path = true;
};

struct DeviceStats {
  double busy_s = 0;
  int64_t peak_memory_bytes = 0;
  int64_t resident_bytes = 0;  // parameters (and optimizer state)
  int32_t ops = 0;
};

struct TraceEvent {
  std::string name;
  int32_t row = 0;        // device index, or num_devices + directed link id
  double start_s = 0, end_s = 0;
};

struct SimResult {
  double step_time_s = 0;
  bool valid = true;
  std::string reason;  // empty when valid; e.g. "out of memory on gpu1 at t=... : ... bytes > ..."
  std::vector<DeviceStats> devices;
  std::vector<int64_t> link_bytes;         // per directed link
  std::vector<int32_t> critical_path;      // op indices, first to last
  std::vector<TraceEvent> trace;           // when SimOptions::record_trace
};

class SimProgram;  // the preprocessed graph + cluster + cost table
class SimState;    // scratch for one simulation; reuse it across calls on one thread

class Simulator {
 public:
  Simulator(const Graph& g, const Cluster& c, const CostModel& cost, SimOptions opt = {});
  ~Simulator();
  Simulator(Simulator&&) noexcept;

  // Simulates one placement with an internal state (not thread-safe).
  SimResult run(const Placement& p);
  // Thread-safe variant with a caller-owned state (create one per thread).
  std::unique_ptr<SimState> make_state() const;
  SimResult run(const Placement& p, SimState& state) const;
  // Only the step time (invalid => +inf), the RL hot path: no allocation.
  double step_time(const Placement& p, SimState& state) const;
  // Many placements in parallel with OpenMP (one state per thread).
  std::vector<double> step_times(const std::vector<Placement>& ps) const;

  const Graph& graph() const;
  const Cluster& cluster() const;

 private:
  std::unique_ptr<SimProgram> prog_;
  std::unique_ptr<SimState> state_;
};

// Chrome trace JSON (opens in Perfetto): a row per device and per directed link.
std::string trace_to_chrome_json(const SimResult& r, const Cluster& c);
std::string sim_result_to_json(const SimResult& r, const Cluster& c);

}  // namespace gdp
