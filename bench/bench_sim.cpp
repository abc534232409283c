// Simulator throughput, the RL reward's cost: a 50,000-op, ~100,000-edge layered random graph
// on v100x8-nvlink under random placements; one simulation on one core, and placements per
// second through Simulator::step_times with 2 threads. Figures: docs/performance.md.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/cluster.h"
#include "core/rng.h"
#include "datasets/random_dag.h"
#include "datasets/registry.h"
#include "place/registry.h"
#include "sim/simulator.h"

namespace {

using namespace gdp;

struct Fixture {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<Simulator> sim;
  std::vector<Placement> placements;

  Fixture() {
    datasets::RandomGraphSpec spec;
    spec.num_ops = 50000;
    spec.edges_per_op = 2.0;  // ~100,000 edges
    spec.layer_width = 64;
    spec.seed = 2019;
    graph = datasets::make_random_layered_graph(spec);
    cluster = make_cluster_preset("v100x8-nvlink");
    sim = std::make_unique<Simulator>(graph, cluster, CostModel());
    for (uint64_t s = 0; s < 16; ++s)
      placements.push_back(datasets::random_placement(graph, cluster.num_devices(), 7 + s));
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// The RL hot path: step time only, caller-owned state, no allocation.
void BM_SimStepTime_50k_v100x8(benchmark::State& state) {
  Fixture& f = fixture();
  auto st = f.sim->make_state();
  size_t k = 0;
  double sink = 0;
  for (auto _ : state) {
    sink += f.sim->step_time(f.placements[k++ % f.placements.size()], *st);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["ops"] = f.graph.num_ops();
  state.counters["edges"] = static_cast<double>(f.graph.num_edges());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimStepTime_50k_v100x8)->Unit(benchmark::kMillisecond);

// Scaling with graph size: the same generator at 2,000 / 10,000 / 50,000 ops, 8 devices.
void BM_SimStepTime_Scaling(benchmark::State& state) {
  datasets::RandomGraphSpec spec;
  spec.num_ops = static_cast<int32_t>(state.range(0));
  spec.edges_per_op = 2.0;
  spec.layer_width = 64;
  spec.seed = 2019;
  Graph g = datasets::make_random_layered_graph(spec);
  Cluster c = make_cluster_preset("v100x8-nvlink");
  Simulator sim(g, c, CostModel());
  Placement p = datasets::random_placement(g, c.num_devices(), 7);
  auto st = sim.make_state();
  double sink = 0;
  for (auto _ : state) sink += sim.step_time(p, *st);
  benchmark::DoNotOptimize(sink);
  state.counters["time_per_op"] =
      benchmark::Counter(static_cast<double>(spec.num_ops) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SimStepTime_Scaling)->Arg(2000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);

// The full result: stats, link bytes and critical path (no trace).
void BM_SimRunFull_50k_v100x8(benchmark::State& state) {
  Fixture& f = fixture();
  auto st = f.sim->make_state();
  size_t k = 0;
  for (auto _ : state) {
    SimResult r = f.sim->run(f.placements[k++ % f.placements.size()], *st);
    benchmark::DoNotOptimize(r.step_time_s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SimRunFull_50k_v100x8)->Unit(benchmark::kMillisecond);

// A batch of 16 placements through step_times (OpenMP) with 1 and 2 threads;
// items_per_second = placements per second (wall clock).
void BM_SimStepTimesBatch16(benchmark::State& state) {
  Fixture& f = fixture();
  const int threads = static_cast<int>(state.range(0));
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  for (auto _ : state) {
    std::vector<double> t = f.sim->step_times(f.placements);
    benchmark::DoNotOptimize(t.data());
  }
  omp_set_num_threads(before);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.placements.size()));
}
BENCHMARK(BM_SimStepTimesBatch16)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Placements a trained policy produces keep most edges on one device. Two such cases:
// the same 50k-op graph cut into 8 contiguous topological blocks, and the 8-layer GNMT
// training graph (53,481 ops) under its human-expert placement on v100x8-nvlink.
void BM_SimStepTime_50k_blocked(benchmark::State& state) {
  Fixture& f = fixture();
  Placement p{std::vector<int32_t>(f.graph.num_ops())};
  const auto& topo = f.graph.topo_order();
  for (size_t k = 0; k < topo.size(); ++k)
    p.device[topo[k]] = static_cast<int32_t>(k * f.cluster.num_devices() / topo.size());
  auto st = f.sim->make_state();
  double sink = 0;
  for (auto _ : state) sink += f.sim->step_time(p, *st);
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_SimStepTime_50k_blocked)->Unit(benchmark::kMillisecond);

// The opposite extreme: op k in topological order on device k mod 8 (`--placement
// round-robin`), so nearly every edge is a transfer.
void BM_SimStepTime_50k_roundrobin(benchmark::State& state) {
  Fixture& f = fixture();
  Placement p{std::vector<int32_t>(f.graph.num_ops())};
  const auto& topo = f.graph.topo_order();
  for (size_t k = 0; k < topo.size(); ++k)
    p.device[topo[k]] = static_cast<int32_t>(k % f.cluster.num_devices());
  auto st = f.sim->make_state();
  double sink = 0;
  for (auto _ : state) sink += f.sim->step_time(p, *st);
  benchmark::DoNotOptimize(sink);
}
BENCHMARK(BM_SimStepTime_50k_roundrobin)->Unit(benchmark::kMillisecond);

void BM_SimStepTime_gnmt8_human(benchmark::State& state) {
  static const Graph g = datasets::generate("gnmt", datasets::GenOptions{});
  static const Cluster c = make_cluster_preset("v100x8-nvlink");
  static const Placement p = [&] {
    const CostModel cost;
    place::Problem problem(g, c, cost);
    return place::place(place::prepare(place::registry(), "human"), problem, {}, 1).placement;
  }();
  Simulator sim(g, c, CostModel());
  auto st = sim.make_state();
  double sink = 0;
  for (auto _ : state) sink += sim.step_time(p, *st);
  benchmark::DoNotOptimize(sink);
  state.counters["ops"] = g.num_ops();
}
BENCHMARK(BM_SimStepTime_gnmt8_human)->Unit(benchmark::kMillisecond);

// What anneal's early stop can save: 192 single-op moves of the GNMT-8 human placement (seed 5;
// the valid ones), each simulated with a limit of arg/1000 times its own step time (arg 1000:
// no limit). A proposal rejected by a small margin is decided only near the step's end.
// Counters: the share of simulations that stopped early, and, for the same moves, the share
// of the op ends in the human schedule that come before the moved op can first matter (the
// earliest end of its producers): the prefix an incremental simulation could reuse.
void BM_SimStepTime_gnmt8_moves_limit(benchmark::State& state) {
  struct Moves {
    Graph g = datasets::generate("gnmt", datasets::GenOptions{});
    Cluster c = make_cluster_preset("v100x8-nvlink");
    std::unique_ptr<Simulator> sim;
    std::vector<Placement> ps;
    std::vector<double> exact;
    double prefix = 0;
    Moves() {
      const CostModel cost;
      place::Problem problem(g, c, cost);
      const Placement h =
          place::place(place::prepare(place::registry(), "human"), problem, {}, 1).placement;
      SimOptions o;
      o.record_op_times = true;
      sim = std::make_unique<Simulator>(g, c, cost, o);
      const SimResult r = sim->run(h);
      std::vector<double> ends = r.op_end_s;
      std::sort(ends.begin(), ends.end());
      auto st = sim->make_state();
      Rng rng(5);
      double prefix_sum = 0;
      for (int k = 0; k < 192; ++k) {
        Placement p = h;
        const int32_t op = static_cast<int32_t>(rng.below(g.num_ops()));
        p.device[op] = static_cast<int32_t>(rng.below(c.num_devices()));
        const double t = sim->step_time(p, *st);
        if (!std::isfinite(t)) continue;
        double first = std::numeric_limits<double>::infinity();
        for (int64_t q = g.in_ptr()[op]; q < g.in_ptr()[op + 1]; ++q)
          first = std::min(first, r.op_end_s[g.edges()[g.in_edge_ids()[q]].src]);
        if (!std::isfinite(first)) first = 0;
        prefix_sum +=
            static_cast<double>(std::lower_bound(ends.begin(), ends.end(), first) - ends.begin()) /
            static_cast<double>(ends.size());
        ps.push_back(std::move(p));
        exact.push_back(t);
      }
      prefix = prefix_sum / static_cast<double>(ps.size());
    }
  };
  static Moves m;
  const double f = static_cast<double>(state.range(0)) / 1000.0;
  auto st = m.sim->make_state();
  size_t k = 0;
  double sink = 0;
  const int64_t stops0 = m.sim->early_stops();
  for (auto _ : state) {
    const size_t i = k++ % m.ps.size();
    const double limit =
        state.range(0) >= 1000 ? std::numeric_limits<double>::infinity() : m.exact[i] * f;
    sink += m.sim->step_time(m.ps[i], *st, limit);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["stopped"] =
      static_cast<double>(m.sim->early_stops() - stops0) / static_cast<double>(k);
  state.counters["prefix_before_divergence"] = m.prefix;
}
BENCHMARK(BM_SimStepTime_gnmt8_moves_limit)
    ->Arg(1000)
    ->Arg(999)
    ->Arg(990)
    ->Arg(950)
    ->Arg(900)
    ->Arg(500)
    ->Unit(benchmark::kMillisecond);

// One-time cost: preprocessing the graph into a SimProgram.
void BM_SimBuildProgram_50k(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    Simulator s(f.graph, f.cluster, CostModel());
    benchmark::DoNotOptimize(&s);
  }
}
BENCHMARK(BM_SimBuildProgram_50k)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
