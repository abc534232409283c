// The step_time fast paths against the full simulation: skipping the memory accounting when
// no device can run out (sim/simulator.cpp, prepare), and the bounded runs that stop once the
// step time is known to exceed a limit (Simulator::step_time with a limit).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cluster.h"
#include "datasets/random_dag.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

namespace gdp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Graph graph(int32_t ops, uint64_t seed) {
  datasets::RandomGraphSpec spec;
  spec.num_ops = ops;
  spec.seed = seed;
  return datasets::make_random_layered_graph(spec);
}

// Placements from one device to every op on its own device, and a contiguous split.
std::vector<Placement> placements(const Graph& g, int32_t D, uint64_t seed) {
  std::vector<Placement> ps;
  for (uint64_t s = 0; s < 6; ++s) ps.push_back(datasets::random_placement(g, D, seed + s));
  ps.push_back(test::on_device(g, 0));
  Placement blocks{std::vector<int32_t>(g.num_ops())};
  const auto& topo = g.topo_order();
  for (size_t k = 0; k < topo.size(); ++k)
    blocks.device[topo[k]] = static_cast<int32_t>(k * D / topo.size());
  ps.push_back(blocks);
  return ps;
}

}  // namespace

TEST_CASE("sim/fast paths/step_time equals the full run whether memory is tracked or not",
          "[sim][fast]") {
  const Graph g = graph(1500, 3);
  // Capacities from ample (no device can run out: the accounting is skipped) down to tight
  // (tracked; some placements run out of memory, which step_time reports as +inf).
  int64_t peak = 0;
  {
    Simulator probe(g, make_cluster_preset("v100x4-pcie"), CostModel());
    for (const DeviceStats& d : probe.run(test::on_device(g, 0)).devices)
      peak = std::max(peak, d.peak_memory_bytes);
  }
  REQUIRE(peak > 0);
  int oom = 0, valid = 0;
  for (double frac : {1e6, 1.0, 0.5, 0.3, 0.2}) {
    Cluster c = make_cluster_preset("v100x4-pcie");
    for (DeviceSpec& d : c.devices) d.memory_bytes = static_cast<int64_t>(peak * frac);
    for (QueuePolicy q : {QueuePolicy::fifo, QueuePolicy::topo_priority}) {
      SimOptions opt;
      opt.queue_policy = q;
      Simulator sim(g, c, CostModel(), opt);
      auto st = sim.make_state();
      for (const Placement& p : placements(g, c.num_devices(), 40)) {
        const SimResult r = sim.run(p);
        const double t = sim.step_time(p, *st);
        if (r.valid) {
          ++valid;
          CHECK(t == r.step_time_s);  // to the last bit
        } else {
          ++oom;
          CHECK(r.status == SimStatus::out_of_memory);
          CHECK(std::isinf(t));
        }
      }
    }
  }
  CHECK(valid > 0);
  CHECK(oom > 0);  // the tight capacities did run out
}

TEST_CASE("sim/fast paths/a limit gives the exact time at or below it, a lower bound above it",
          "[sim][fast]") {
  const Graph g = graph(3000, 11);
  for (const char* preset : {"v100x8-nvlink", "v100x4-pcie", "v100x16-4node"}) {
    const Cluster c = make_cluster_preset(preset);
    Simulator sim(g, c, CostModel());
    auto st = sim.make_state();
    int stopped = 0;
    for (const Placement& p : placements(g, c.num_devices(), 7)) {
      const double exact = sim.step_time(p, *st);
      REQUIRE(std::isfinite(exact));
      for (double f : {0.0, 0.3, 0.7, 0.95, 0.999999, 1.0, 1.000001, 1.5, kInf}) {
        const double limit = exact * f;
        const int64_t stops0 = sim.early_stops();
        const double t = sim.step_time(p, *st, limit);
        if (exact <= limit) {
          CHECK(t == exact);
        } else {
          CHECK(t > limit);
          CHECK(t <= exact * (1 + 1e-12));  // a lower bound (up to rounding)
        }
        stopped += static_cast<int>(sim.early_stops() - stops0);
      }
      CHECK(sim.step_time(p, *st, std::nan("")) == exact);  // NaN: no limit
    }
    CHECK(stopped > 0);  // the bound does stop simulations
  }
}

TEST_CASE("sim/fast paths/step_times with limits equals step_time with each limit", "[sim][fast]") {
  const Graph g = graph(2000, 5);
  const Cluster c = make_cluster_preset("v100x8-nvlink");
  Simulator sim(g, c, CostModel());
  std::vector<Placement> ps = placements(g, c.num_devices(), 70);
  ps.push_back(Placement{});  // invalid: +inf whatever the limit
  auto st = sim.make_state();
  std::vector<double> limits;
  for (size_t k = 0; k < ps.size(); ++k)
    limits.push_back(k % 3 == 0 ? kInf : (k % 3 == 1 ? 0.0 : 1e3));
  const std::vector<double> par = sim.step_times(ps, limits);
  REQUIRE(par.size() == ps.size());
  for (size_t k = 0; k < ps.size(); ++k) CHECK(par[k] == sim.step_time(ps[k], *st, limits[k]));
  CHECK(std::isinf(par.back()));
  CHECK_THROWS_WITH(sim.step_times(ps, {1.0}), Catch::Contains("1 limits for"));
}

}  // namespace gdp
