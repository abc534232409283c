// What every placer is given: the graph, the cluster and the caller's cost model (so that
// `--profile` reaches every method), with one simulator built on them and shared by every
// thread (each thread brings its own SimState).
#pragma once

#include <memory>
#include <mutex>

#include "core/cluster.h"
#include "core/graph.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace gdp::place {

class Problem {
 public:
  // Keeps references: the graph (finalized), the cluster and the cost model must outlive it.
  Problem(const Graph& g, const Cluster& c, const CostModel& cost, SimOptions sim_options = {});
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return *cluster_; }
  const CostModel& cost() const { return *cost_; }
  int32_t num_devices() const { return cluster_->num_devices(); }
  // Built on first use (thread-safe); const use from many threads is safe.
  const Simulator& simulator() const;

 private:
  const Graph* graph_;
  const Cluster* cluster_;
  const CostModel* cost_;
  SimOptions sim_options_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<Simulator> sim_;
};

}  // namespace gdp::place
