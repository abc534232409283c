// Discrete-event simulator of one training step of a placed graph on a cluster.
// Preprocess the graph once (SimProgram), then simulate many placements, each with its own
// reusable SimState (one per thread), with no allocation in the hot loop.
// The rules (queues, transfers, memory) are in docs/cost-model.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/cost_model.h"
#include "sim/sim_state.h"  // SimState: scratch for one simulation, one per thread

namespace gdp {

// Order of a device's ready queue. fifo: by the time the op became ready, ties by
// topological position; topo_priority: by topological position only.
enum class QueuePolicy : uint8_t { fifo, topo_priority };
const char* queue_policy_name(QueuePolicy p);
bool parse_queue_policy(const std::string& s, QueuePolicy* out);  // false when unknown

struct SimOptions {
  QueuePolicy queue_policy = QueuePolicy::fifo;  // per-device ready queue order
  bool check_memory = true;                      // out of memory => invalid
  bool record_trace = false;                     // fill SimResult::trace (slower)
  bool record_critical_path = true;
  bool record_op_times = false;  // fill SimResult::op_start_s / op_end_s
};

// Why a simulated placement is or is not valid.
enum class SimStatus : uint8_t {
  valid,
  out_of_memory,        // a device's peak memory exceeds its capacity
  split_colocation,     // ops of one colocation group on different devices
  malformed_placement,  // wrong length, or a device index outside the cluster
};
const char* sim_status_name(SimStatus s);  // "valid", "out_of_memory", ...

struct DeviceStats {
  double busy_s = 0;              // sum of the op times run on the device
  int64_t peak_memory_bytes = 0;  // resident + the most live tensors/temporaries at once
  int64_t resident_bytes = 0;     // parameters (and optimizer state)
  int64_t end_memory_bytes = 0;   // in use when the step ends (== resident_bytes when sound)
  int32_t ops = 0;
};

struct TraceEvent {
  std::string name;
  int32_t row = 0;  // device index, or num_devices + directed link id
  double start_s = 0, end_s = 0;
};

struct SimResult {
  // Time of the last op's end. For an out-of-memory placement the simulation still runs to
  // the end (so that peak memory is known) and this is the time ignoring capacity; for other
  // invalid placements (wrong length, device out of range, split colocation group) it is +inf.
  double step_time_s = 0;
  bool valid = true;
  SimStatus status = SimStatus::valid;  // valid == (status == SimStatus::valid)
  std::string reason;  // empty when valid; e.g. "out of memory on gpu1 at t=... : ... bytes > ..."
  std::vector<DeviceStats> devices;
  std::vector<int64_t> link_bytes;     // per directed link (each hop counts the bytes)
  std::vector<int32_t> critical_path;  // op indices, first to last
  std::vector<TraceEvent> trace;       // when SimOptions::record_trace
  // Debug counters for invariant checks.
  int32_t ops_run = 0;                       // op starts (== num_ops when sound)
  int32_t transfers = 0;                     // (tensor, destination device) transfers
  std::vector<double> op_start_s, op_end_s;  // (num_ops) when SimOptions::record_op_times
};

class SimProgram;  // the preprocessed graph + cluster + cost table (sim/sim_program.h)

class Simulator {
 public:
  // Copies the graph and the cluster (the simulator owns them). Throws InputError when the
  // graph is not finalized, the cluster has no devices, or an op time is negative or NaN.
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
  // The search's hot path, for a caller that only needs the step time when it is at most
  // `limit` (a Metropolis test knows that threshold before the simulation): the exact step
  // time when it is at most `limit`; otherwise a number above `limit`, either the step time or
  // a lower bound on it at which the simulation stopped early (+inf when invalid). An infinite
  // or NaN limit is step_time(p, state).
  double step_time(const Placement& p, SimState& state, double limit) const;
  // Many placements in parallel with OpenMP (one state per thread, kept between calls);
  // results in input order. With `limits` (one per placement), each as step_time(p, s, limit).
  std::vector<double> step_times(const std::vector<Placement>& ps) const;
  std::vector<double> step_times(const std::vector<Placement>& ps,
                                 const std::vector<double>& limits) const;
  // How many step_time calls with a limit have stopped early so far (all threads).
  int64_t early_stops() const;

  // The op time table used by the simulation: time of op i on device d (seconds).
  double op_time_s(int32_t op, int32_t device) const;
  const SimOptions& options() const;
  const Graph& graph() const;
  const Cluster& cluster() const;

 private:
  struct StatePool;  // states for step_times, reused across calls (thread-safe)
  std::unique_ptr<SimProgram> prog_;
  std::unique_ptr<SimState> state_;
  std::unique_ptr<StatePool> pool_;
};

// Chrome trace JSON (opens in Perfetto): a row per device and per directed link.
std::string trace_to_chrome_json(const SimResult& r, const Cluster& c);
std::string sim_result_to_json(const SimResult& r, const Cluster& c);
// The same, with op names for the critical path (g must be the simulated graph).
std::string sim_result_to_json(const SimResult& r, const Cluster& c, const Graph& g);

}  // namespace gdp
