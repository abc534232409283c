// Checks the RL hot path's promise: once a SimState is warm, Simulator::step_time allocates
// nothing. Counts calls of the global operator new in this test binary.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "core/cluster.h"
#include "datasets/random_dag.h"
#include "sim/sim_fixtures.h"
#include "sim/simulator.h"

namespace {
std::atomic<long> g_news{0};
}  // namespace

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace gdp;

TEST_CASE("sim/hot path/step_time allocates nothing once the state is warm", "[sim][alloc]") {
  datasets::RandomGraphSpec spec;
  spec.num_ops = 5000;
  spec.seed = 3;
  Graph g = datasets::make_random_layered_graph(spec);
  Cluster c = make_cluster_preset("v100x4-pcie");  // multi-hop routes
  Simulator sim(g, c, CostModel());
  std::vector<Placement> ps;
  for (uint64_t s = 0; s < 6; ++s) ps.push_back(datasets::random_placement(g, c.num_devices(), 40 + s));
  ps.push_back(test::on_device(g, 0));
  auto st = sim.make_state();
  double warm = sim.step_time(ps[0], *st);
  REQUIRE(std::isfinite(warm));
  const long before = g_news.load();
  double sum = 0;
  for (const Placement& p : ps) sum += sim.step_time(p, *st);
  const long after = g_news.load();
  CHECK(after - before == 0);
  CHECK(sum > 0);
  // The counter does count: a full run allocates its result.
  SimResult r = sim.run(ps[1], *st);
  CHECK(g_news.load() > after);
  CHECK(r.step_time_s == sim.step_time(ps[1], *st));
}
